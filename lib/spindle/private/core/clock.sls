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
  (import (chezscheme) (only (spindle private os monotonic-clock) monotonic-microseconds))

  (define-syntax time->ms
    (syntax-rules ()
      [(_ t) (let ([x t])
               (fl+ (fl* 1000. (fixnum->flonum (time-second x)))
                    (fl/ (fixnum->flonum (time-nanosecond x)) 1e6)))]))

  (define (monotonic-ms) (time->ms (current-time 'time-monotonic)))

  (define (wall-ms) (time->ms (current-time 'time-utc)))

  ;; Microseconds of the monotonic clock, the same in every process
  ;; (places are processes): the trace's timestamps.
  (define (shared-monotonic-us) (monotonic-microseconds)))
