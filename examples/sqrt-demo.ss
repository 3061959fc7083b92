#!chezscheme
;;; The headline example of Racket's v9 announcement, on spindle: two
;;; threads that each take square roots 2^22 times, first as coroutine
;;; threads (one OS thread, time-sliced), then as parallel threads
;;; (#:pool 'own: an OS worker each).  On 2 cores the parallel run takes
;;; about half the real time for the same CPU time.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

;; The sum is kept as a fixnum so the loop does not allocate: the demo
;; shows the scheduler, not the collector (see bench/LOG.md for that).
(define (go)
  (let loop ([i 0] [sum 0])
    (if (fx= i (expt 2 22))
        sum
        (loop (fx+ i 1) (fx+ sum (flonum->fixnum (flsqrt (fixnum->flonum i))))))))

(define (ms t) (+ (* 1000. (time-second t)) (/ (time-nanosecond t) 1e6)))

(define (timed label thunk)
  (let ([real0 (current-time 'time-monotonic)] [cpu0 (current-time 'time-process)])
    (thunk)
    (let ([real1 (current-time 'time-monotonic)] [cpu1 (current-time 'time-process)])
      (printf "~a real ~6,1f ms   cpu ~6,1f ms\n" label
              (- (ms real1) (ms real0)) (- (ms cpu1) (ms cpu0))))))

(define (two-threads pool)
  (let ([a (thread go #:pool pool)] [b (thread go #:pool pool)])
    (thread-wait a)
    (thread-wait b)))

(printf "spindle on Chez Scheme ~a, ~a processors\n" (scheme-version) (processor-count))
(go)  ; warm up
(timed "coroutine threads (#:pool #f)  " (lambda () (two-threads #f)))
(timed "parallel threads  (#:pool 'own)" (lambda () (two-threads 'own)))
