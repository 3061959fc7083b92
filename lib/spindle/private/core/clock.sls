;;; The clocks of the core, read in one place.
;;;
;;; - (monotonic-ms): Chez's time-monotonic in milliseconds (a flonum);
;;;   timers, alarms and sleeps use it.  It counts from this process's start,
;;;   so its readings mean nothing in another process.
;;; - (wall-ms): the time of day (time-utc) in milliseconds since the epoch,
;;;   a flonum: Racket's current-inexact-milliseconds.
;;; - (shared-monotonic-us): CLOCK_MONOTONIC in microseconds (a fixnum),
;;;   the same clock in every process (places are processes): the trace's
;;;   time stamps.  About 33 ns a reading.
(library (spindle private core clock)
  (export monotonic-ms wall-ms shared-monotonic-us)
  (import (chezscheme))

  (define-syntax time->ms
    (syntax-rules ()
      [(_ t) (let ([x t])
               (fl+ (fl* 1000. (fixnum->flonum (time-second x)))
                    (fl/ (fixnum->flonum (time-nanosecond x)) 1e6)))]))

  (define (monotonic-ms) (time->ms (current-time 'time-monotonic)))

  (define (wall-ms) (time->ms (current-time 'time-utc)))

  (define clock-monotonic 1)   ; CLOCK_MONOTONIC in <time.h> (Linux)
  (define clock-gettime
    (begin (load-shared-object "libc.so.6") (foreign-procedure "clock_gettime" (int u8*) int)))
  (define (shared-monotonic-us)
    (let ([ts (make-bytevector 16)])   ; struct timespec: tv_sec, tv_nsec
      (clock-gettime clock-monotonic ts)
      (fx+ (fx* (bytevector-s64-native-ref ts 0) 1000000)
           (fxquotient (bytevector-s64-native-ref ts 8) 1000)))))
