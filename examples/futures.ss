#!chezscheme
;;; Parallel fib with futures and a depth cutoff, beside the sequential one.
;;; Futures run on a shared pool of (processor-count) OS workers; touching a
;;; future that has not started runs it in the toucher.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

(define (fib n) (if (fx< n 2) n (fx+ (fib (fx- n 1)) (fib (fx- n 2)))))

(define (pfib n)
  (if (fx< n 25)
      (fib n)
      (let ([a (future (lambda () (pfib (fx- n 1))))]
            [b (future (lambda () (pfib (fx- n 2))))])
        (fx+ (touch a) (touch b)))))

(define (ms thunk)
  (let ([t0 (real-time)]) (let ([v (thunk)]) (values v (- (real-time) t0)))))

(let-values ([(v t) (ms (lambda () (fib 36)))])
  (printf "sequential fib 36 = ~a in ~a ms\n" v t))
(let-values ([(v t) (ms (lambda () (pfib 36)))])
  (printf "futures    fib 36 = ~a in ~a ms on ~a processors\n" v t (processor-count)))

;; an exception in a future is raised again by every touch
(define f (future (lambda () (error 'worker "no luck"))))
(printf "touch raised: ~a\n" (guard (c [(error? c) (condition-message c)]) (touch f)))
