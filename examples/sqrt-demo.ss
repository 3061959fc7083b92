#!chezscheme
;;; The headline example of Racket's v9 announcement, on spindle: two
;;; threads that each take 2^26 square roots (about 0.5-1 s of work),
;;; first as coroutine threads (one OS thread, time-sliced), then as
;;; parallel threads (#:pool 'own: an OS worker each).  On 2 cores the
;;; parallel run takes about half the real time for the same CPU time.
;;;
;;;   bin/spindle run examples/sqrt-demo.ss [N]    N square roots per thread
;;;
;;; A small N (say 100000) makes a quick check that the demo runs.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

(define n
  (let ([args (cdr (command-line))])
    (or (and (pair? args)
             (let ([k (string->number (car args))])
               (and (fixnum? k) (fx> k 0) k)))
        (expt 2 26))))

;; The sum is kept as a fixnum so the loop does not allocate: the demo
;; shows the scheduler, not the collector (see bench/LOG.md for that).
(define (go)
  (let loop ([i 0] [sum 0])
    (if (fx= i n)
        sum
        (loop (fx+ i 1) (fx+ sum (flonum->fixnum (flsqrt (fixnum->flonum i))))))))

(define (ms t) (+ (* 1000. (time-second t)) (/ (time-nanosecond t) 1e6)))

;; Runs thunk; prints and returns its real time in ms.
(define (timed label thunk)
  (let ([real0 (current-time 'time-monotonic)] [cpu0 (current-time 'time-process)])
    (thunk)
    (let* ([real1 (current-time 'time-monotonic)] [cpu1 (current-time 'time-process)]
           [real (- (ms real1) (ms real0))])
      (printf "~a real ~7,1f ms   cpu ~7,1f ms\n" label real (- (ms cpu1) (ms cpu0)))
      real)))

(define (two-threads pool)
  (let ([a (thread go #:pool pool)] [b (thread go #:pool pool)])
    (thread-wait a)
    (thread-wait b)))

(printf "spindle on ~a, ~a processors\n" (scheme-version) (processor-count))
(printf "two threads, each taking ~a square roots:\n" n)
(go)  ; warm up
(let* ([coroutine (timed "coroutine threads (#:pool #f)  " (lambda () (two-threads #f)))]
       [parallel (timed "parallel threads  (#:pool 'own)" (lambda () (two-threads 'own)))])
  (printf "Look at real time: parallel took ~,2f of coroutine's (0.5 on 2 idle cores, more on busy ones); CPU time stays: the same work, on two cores at once.\n"
          (/ parallel (max coroutine 0.001))))
