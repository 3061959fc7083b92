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
;;; - (coarse-ms): Chez's real-time (ms, a fixnum): the scheduler's cheap
;;;   stamps (park times, the cancellation-at-preemption rule).
;;; In a simulation ((spindle private core sim-hooks)) the first two and
;;; coarse-ms read the virtual clock on the simulating OS thread.
(library (spindle private core clock)
  (export monotonic-ms wall-ms shared-monotonic-us coarse-ms)
  (import (chezscheme) (only (spindle private os monotonic-clock) monotonic-microseconds)
          (only (spindle private core sim-hooks) sim-here? sim-now sim-coarse-ms sim-epoch-ms))

  (define-syntax time->ms
    (syntax-rules ()
      [(_ t) (let ([x t])
               (fl+ (fl* 1000. (fixnum->flonum (time-second x)))
                    (fl/ (fixnum->flonum (time-nanosecond x)) 1e6)))]))

  (define (monotonic-ms) (if (sim-here?) (sim-now) (time->ms (current-time 'time-monotonic))))

  (define (wall-ms) (if (sim-here?) (fl+ sim-epoch-ms (sim-now)) (time->ms (current-time 'time-utc))))

  (define (coarse-ms) (if (sim-here?) (sim-coarse-ms) (real-time)))

  ;; Microseconds of the monotonic clock, the same in every process
  ;; (places are processes): the trace's timestamps.
  (define (shared-monotonic-us) (monotonic-microseconds)))
