;; spindle-lock-count.ss -- the lock-count.ss of spindle's own paths: after a
;; 2 s pause (for gdb to attach), runs OP 10,000 times.  Run by
;; spindle-lock-count.sh, which counts S_mutex_acquire calls per OP.
;;   bin/spindle run bench/threads-analysis/spindle-lock-count.ss OP
;; OPs: none, yield (a green-thread switch with a second runnable thread),
;; sync-1 (sync on one ready event), sync-2 (choice of two ready events),
;; sync-3 (three), parameterize (spindle parameterize of a spindle
;; parameter), chez-param-read (read a spindle parameter).
(import (except (chezscheme) make-parameter parameterize sleep thread?) (spindle))
(define p (make-parameter 0))
(define other #f)
(define table
  `((none . ,(lambda () 0))
    (yield . ,(lambda () (yield)))
    (sync-1 . ,(lambda () (sync always-evt)))
    (sync-2 . ,(lambda () (sync (choice-evt always-evt always-evt))))
    (sync-3 . ,(lambda () (sync (choice-evt always-evt always-evt always-evt))))
    (choice-make . ,(lambda () (choice-evt always-evt always-evt)))
    (sync-2-prebuilt . ,(let ([c (choice-evt always-evt always-evt)]) (lambda () (sync c))))
    (parameterize . ,(lambda () (parameterize ([p 1]) 0)))
    (param-read . ,(lambda () (p)))))
(define op (string->symbol (car (command-line-arguments))))
(define e (or (assq op table) (error 'spindle-lock-count "unknown operation" op)))
(when (eq? op 'yield)                   ; a second green thread to switch to
  (set! other (thread (lambda () (let loop () (yield) (loop))))))
(do ([i 0 (fx+ i 1)]) ((fx= i 100)) ((cdr e)))
(let ([pid ((foreign-procedure "getpid" () int))])   ; tell the script we are ready
  (call-with-output-file (format "/tmp/spindle-lock-count.~a.ready" pid) (lambda (o) (display "ready" o)) 'truncate))
(sleep 2)                               ; spindle's sleep: seconds
(do ([i 0 (fx+ i 1)]) ((fx= i 10000)) ((cdr e)))
(exit 0)
