;;; bench/peers/guile-executors.scm -- Guile 3 peer of bench/executors.ss (1).
;;;   guile bench/peers/guile-executors.scm [--quick] [--runs K]
;;; Four models over COUNT fib(20..25) tasks with (ice-9 threads) OS threads:
;;;   nomgmt   a thread per task (call-with-new-thread), then join all
;;;   manual   batches of 10 threads joined together
;;;   pool     a pool of 10 threads over a queue+mutex+condvar, results
;;;            through a second such queue
;;;   executor (ice-9 futures): make-future / touch (Guile's own worker pool,
;;;            one worker per core minus one, plus the toucher)
;;; Prints `executors.MODEL.guile.COUNT MS ms`.  Best of K runs.
(use-modules (ice-9 threads) (ice-9 futures) (ice-9 format) (srfi srfi-1))

(define args (cdr (command-line)))
(define quick? (member "--quick" args))
(define runs (let ((l (member "--runs" args))) (if l (string->number (cadr l)) 3)))
(define counts (if quick? '(100 1000) '(100 1000 10000)))

(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(define (task i) (lambda () (fib (+ 20 (modulo i 6)))))
(define (expected count) (fold + 0 (map (lambda (i) ((task i))) (iota count))))

;; a blocking FIFO: mutex + condition variable
(define (make-q) (vector '() '() (make-mutex) (make-condition-variable)))
(define (q-put! q v)
  (with-mutex (vector-ref q 2)
    (vector-set! q 1 (cons v (vector-ref q 1)))
    (signal-condition-variable (vector-ref q 3))))
(define (q-get! q)
  (with-mutex (vector-ref q 2)
    (let loop ()
      (when (null? (vector-ref q 0))
        (if (null? (vector-ref q 1))
            (begin (wait-condition-variable (vector-ref q 3) (vector-ref q 2)) (loop))
            (begin (vector-set! q 0 (reverse (vector-ref q 1))) (vector-set! q 1 '())))))
    (let ((v (car (vector-ref q 0))))
      (vector-set! q 0 (cdr (vector-ref q 0)))
      v)))

(define (run-nomgmt count)
  (let ((ts (map (lambda (i) (call-with-new-thread (task i))) (iota count))))
    (fold + 0 (map join-thread ts))))
(define (run-manual count)
  (let loop ((i 0) (s 0))
    (if (>= i count) s
        (let* ((n (min 10 (- count i)))
               (ts (map (lambda (j) (call-with-new-thread (task (+ i j)))) (iota n))))
          (loop (+ i n) (fold + s (map join-thread ts)))))))
(define (run-pool count)
  (let* ((tasks (make-q)) (out (make-q))
         (ws (map (lambda (k)
                    (call-with-new-thread
                     (lambda ()
                       (let loop ()
                         (let ((t (q-get! tasks)))
                           (when t (q-put! out (t)) (loop)))))))
                  (iota 10))))
    (for-each (lambda (i) (q-put! tasks (task i))) (iota count))
    (let ((s (let loop ((i 0) (s 0)) (if (= i count) s (loop (+ i 1) (+ s (q-get! out)))))))
      (for-each (lambda (w) (q-put! tasks #f)) ws)
      (for-each join-thread ws)
      s)))
(define (run-executor count)
  (let ((fs (map (lambda (i) (make-future (task i))) (iota count))))
    (fold + 0 (map touch fs))))

(define (now-ms) (/ (get-internal-real-time) (/ internal-time-units-per-second 1000.0)))
(define (best-of k thunk check)
  (let loop ((i 0) (best #f))
    (if (= i k) best
        (let* ((t0 (now-ms)) (v (thunk)) (dt (- (now-ms) t0)))
          (unless (equal? v check) (error "wrong result" v check))
          (loop (+ i 1) (if (or (not best) (< dt best)) dt best))))))

(for-each
 (lambda (count)
   (let ((check (expected count)))
     (for-each
      (lambda (m)
        (let ((ms (best-of runs (lambda () ((cdr m) count)) check)))
          (format #t "executors.~a.guile.~a ~,1f ms\n" (car m) count ms)
          (force-output)))
      `((nomgmt . ,run-nomgmt) (manual . ,run-manual) (pool . ,run-pool)
        (executor . ,run-executor)))))
 counts)
