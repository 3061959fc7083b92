;; lock-count.ss -- run by lock-count.sh under gdb: after a 2 s pause (for gdb
;; to attach), runs the operation named on the command line 10,000 times
;; (the operations of ops-table.ss, plus `none`).
;;   scheme --script bench/threads-analysis/lock-count.ss OP
(define (here f) (let ([d (path-parent (car (command-line)))]) (if (string=? d "") f (string-append d "/" f))))
(define N 10000)
(load (here "ops-table.ss"))
(set! use-reps? #f)
(set! ops (cons (cons 'none (lambda () 0)) ops))
(let ([saved N]) (set! N 10) (for-each (lambda (p) ((cdr p))) ops) (set! N saved))  ; warm up every path
(sleep (make-time 'time-duration 0 2))
(let ([e (assq (string->symbol (car (command-line-arguments))) ops)])
  (unless e (error 'lock-count "unknown operation" (car (command-line-arguments))))
  ((cdr e)))
