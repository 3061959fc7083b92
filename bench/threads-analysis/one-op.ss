;; one-op.ss -- run one operation of ops-table.ss for an outside tool (strace,
;; perf, /usr/bin/time): MODE 1 = two work units in one fork-thread, MODE 2 =
;; one unit in each of two fork-threads.  N calls per unit (default 1,000,000).
;;   /usr/bin/time -f "%e s  %U user %S sys  %w waits %c preempt" \
;;       scheme --script bench/threads-analysis/one-op.ss 2 number->string
;;   strace -f -c -e trace=futex scheme --script bench/threads-analysis/one-op.ss 2 number->string
;;   perf record -g -o /tmp/p.data scheme --script bench/threads-analysis/one-op.ss 2 number->string
(define (here f) (let ([d (path-parent (car (command-line)))]) (if (string=? d "") f (string-append d "/" f))))
(load (here "harness.ss"))
(set! quiet-wait 0)                    ; the outside tool runs it once: no waiting
(define args (command-line-arguments))
(define N (if (> (length args) 2) (string->number (caddr args)) 1000000))
(load (here "ops-table.ss"))
(let ([e (assq (string->symbol (cadr args)) ops)] [mode (car args)])
  (unless e (error 'one-op "unknown operation" (cadr args)))
  (let ([r (measure (lambda () (if (string=? mode "1") (one-thread-twice (cdr e)) (two-threads (cdr e)))))])
    (printf "~a ~a threads: ~,1f ms real, ~,1f ms cpu, ~a gcs, ~,1f ms gc, others ~a%\n"
            (cadr args) mode (vector-ref r 0) (vector-ref r 1) (vector-ref r 2) (vector-ref r 3) (round (vector-ref r 4)))))
