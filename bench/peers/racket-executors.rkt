#lang racket/base
;;; bench/peers/racket-executors.rkt -- Racket peer of bench/executors.ss (1).
;;;   racket bench/peers/racket-executors.rkt [--quick] [--runs K]
;;; Four models over COUNT fib(20..25) tasks:
;;;   nomgmt   a green thread per task, then thread-wait all (results via boxes)
;;;   manual   batches of 10 green threads waited together
;;;   pool     10 green-thread workers over an async channel, results
;;;            through a second async channel
;;;   executor racket/future futures (future / touch: parallel on CS)
;;; Prints `executors.MODEL.racket.COUNT MS ms`.  Best of K runs.
(require racket/future racket/async-channel racket/list)

(define args (vector->list (current-command-line-arguments)))
(define quick? (member "--quick" args))
(define runs (let ([l (member "--runs" args)]) (if l (string->number (cadr l)) 3)))
(define counts (if quick? '(100 1000) '(100 1000 10000)))

(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(define ((task i)) (fib (+ 20 (modulo i 6))))
(define (expected count) (for/sum ([i count]) ((task i))))

(define (spawn t)
  (let* ([b (box #f)] [th (thread (lambda () (set-box! b (t))))]) (cons th b)))
(define (join p) (thread-wait (car p)) (unbox (cdr p)))

(define (run-nomgmt count)
  (let ([ts (for/list ([i count]) (spawn (task i)))])
    (for/sum ([p ts]) (join p))))
(define (run-manual count)
  (let loop ([i 0] [s 0])
    (if (>= i count) s
        (let* ([n (min 10 (- count i))]
               [ts (for/list ([j n]) (spawn (task (+ i j))))])
          (loop (+ i n) (+ s (for/sum ([p ts]) (join p))))))))
(define (run-pool count)
  (define tasks (make-async-channel))
  (define out (make-async-channel))
  (define ws (for/list ([k 10])
               (thread (lambda ()
                         (let loop ()
                           (let ([t (async-channel-get tasks)])
                             (when t (async-channel-put out (t)) (loop))))))))
  (for ([i count]) (async-channel-put tasks (task i)))
  (define s (for/sum ([i count]) (async-channel-get out)))
  (for ([w ws]) (async-channel-put tasks #f))
  (for-each thread-wait ws)
  s)
(define (run-executor count)
  (let ([fs (for/list ([i count]) (future (task i)))])
    (for/sum ([f fs]) (touch f))))

(define (best-of k thunk check)
  (for/fold ([best #f]) ([i k])
    (let* ([t0 (current-inexact-milliseconds)] [v (thunk)]
           [dt (- (current-inexact-milliseconds) t0)])
      (unless (equal? v check) (error 'racket-executors "wrong result ~a ~a" v check))
      (if (or (not best) (< dt best)) dt best))))

(for ([count counts])
  (define check (expected count))
  (for ([m (list (cons 'nomgmt run-nomgmt) (cons 'manual run-manual)
                 (cons 'pool run-pool) (cons 'executor run-executor))])
    (define ms (best-of runs (lambda () ((cdr m) count)) check))
    (printf "executors.~a.racket.~a ~a ms\n" (car m) count (/ (round (* 10 ms)) 10.0))
    (flush-output)))
