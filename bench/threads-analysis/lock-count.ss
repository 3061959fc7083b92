;; lock-count.ss -- run by lock-count.sh under gdb: after a 2 s pause (for gdb
;; to attach), calls the operation named on the command line 10,000 times.
;;   scheme --script bench/threads-analysis/lock-count.ss OP
(define-syntax defw
  (syntax-rules () [(_ name (i) body) (define (name n) (let loop ([i 0]) (when (fx< i n) body (loop (fx+ i 1)))))]))
(define sink #f)
(defw w-n2s (i) (number->string (fx+ i 1000000)))
(defw w-n2s10 (i) (number->string (fx+ i 1000000) 10))
(defw w-flo (i) (number->string 1.5))
(defw w-big (i) (number->string (expt 10 30)))
(defw w-format (i) (format "~a" (fx+ i 1000000)))
(defw w-s2n (i) (string->number "1234567"))
(defw w-port (i) (let-values ([(p g) (open-string-output-port)]) (write i p) (g)))
(defw w-oos (i) (let ([p (open-output-string)]) (write i p) (get-output-string p)))
(define h (make-hashtable equal-hash equal?))
(defw w-hash (i) (hashtable-set! h i i))
(define rp (make-parameter 10))
(defw w-param (i) (rp))
(define table
  `((none . ,(lambda (n) (void))) (number->string . ,w-n2s) (number->string-radix . ,w-n2s10)
    (number->string-flonum . ,w-flo) (number->string-bignum . ,w-big) (format . ,w-format)
    (string->number . ,w-s2n) (string-port-write . ,w-port) (open-output-string . ,w-oos)
    (hashtable-set! . ,w-hash) (parameter . ,w-param)))
(for-each (lambda (p) ((cdr p) 10)) table)          ; warm up every path
(sleep (make-time 'time-duration 0 2))
(let ([e (assq (string->symbol (car (command-line-arguments))) table)])
  (unless e (error 'lock-count "unknown operation" (car (command-line-arguments))))
  ((cdr e) 10000))
