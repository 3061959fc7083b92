#!chezscheme
;;; Fibonacci numbers on a thread-pool executor of 4 workers, with futures
;;; from (util concurrent).  Run: bin/spindle run examples/executor.ss
;;;
;;; The executor's workers are SRFI-18 threads, each on its own OS thread by
;;; default (see lib/util/concurrent/thread-pool.sls for coroutine workers).
;;; push-future-handler queues a future on the least-loaded worker when all
;;; four are busy, instead of rejecting it.
(import (rnrs)
        (util concurrent)
        (only (chezscheme) printf real-time display-condition))

(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))

(define executor (make-thread-pool-executor 4 push-future-handler))

(define (ms-since t0) (- (real-time) t0))

;; one future per number, all submitted before any is awaited
(let* ([t0 (real-time)]
       [ns '(30 31 32 33 29 25 20 10)]
       [futures (map (lambda (n) (cons n (executor-submit! executor (lambda () (fib n))))) ns)])
  (printf "submitted ~a futures to a pool of ~a (~a queued or running)\n"
          (length futures) (thread-pool-executor-max-pool-size executor)
          (thread-pool-executor-pool-size executor))
  (for-each (lambda (p) (printf "fib(~a) = ~a\n" (car p) (future-get (cdr p)))) futures)
  (printf "all done in ~a ms\n" (ms-since t0)))

;; futures made first, executed later: (future (class <executor-future>) expr ...)
(let ([f (future (class <executor-future>) (fib 32))])
  (printf "before execution: state ~a\n" (future-state f))
  (execute-future! executor f)
  (printf "fib(32) = ~a, state now ~a\n" (future-get f) (future-state f)))

;; future-get with a timeout returns the timeout value if the result is late
(let ([f (executor-submit! executor (lambda () (fib 34)))])
  (printf "fib(34) after 0 s: ~a; after waiting: ~a\n" (future-get f 0 'not-yet) (future-get f)))

;; an exception in a task is raised again by future-get
(let ([f (executor-submit! executor (lambda () (fib 'x)))])
  (printf "a failing task: ~a\n"
          (guard (c [(condition? c)
                     (call-with-string-output-port (lambda (p) (display-condition c p)))])
            (future-get f))))

(shutdown-executor! executor)
(printf "executor state: ~a\n" (executor-state executor))
