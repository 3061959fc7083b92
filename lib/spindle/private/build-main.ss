;;; `spindle build [-j N] [-k] [-v] [--optimize-level N] DIR ...`: the
;;; command line of (spindle build).  Exit codes: 0 built, 1 a file failed
;;; (or a cycle, an unreadable file), 2 bad arguments, 130 interrupted
;;; (SIGINT).
(import (chezscheme) (spindle build) (only (spindle place) processor-count)
        (only (spindle thread) break-condition?))

(define (usage-error fmt . args)
  (apply fprintf (current-error-port) (string-append "spindle build: " fmt "\n") args)
  (fprintf (current-error-port) "usage: spindle build [-j N] [-k] [-v] [--optimize-level 0|1|2|3] DIR ...\n")
  (exit 2))

(define (positive-integer s)
  (let ([n (and (> (string-length s) 0)
                (for-all char-numeric? (string->list s))
                (string->number s))])
    (and n (fixnum? n) (> n 0) n)))

(let loop ([args (cdr (command-line))] [jobs (processor-count)] [verbose? #f] [keep-going? #f] [dirs '()])
  (cond
    [(null? args)
     (when (null? dirs) (usage-error "no directory to build"))
     (for-each (lambda (d) (unless (file-directory? d) (usage-error "no such directory: ~a" d))) dirs)
     (guard (c [(break-condition? c)
                (fprintf (current-error-port) "spindle build: interrupted\n")
                (exit 130)]
               [(and (error? c) (message-condition? c))
                (fprintf (current-error-port) "spindle build: ~a\n" (condition-message c))
                (exit 1)])
       (let-values ([(built up-to-date) (parallel-build (reverse dirs) jobs verbose? keep-going?)])
         (printf "built ~a, up to date ~a\n" built up-to-date)
         (exit 0)))]
    [(member (car args) '("-j" "--jobs"))
     (when (null? (cdr args)) (usage-error "-j expects a positive integer"))
     (let ([n (positive-integer (cadr args))])
       (unless n (usage-error "-j expects a positive integer, not ~a" (cadr args)))
       (loop (cddr args) n verbose? keep-going? dirs))]
    [(and (> (string-length (car args)) 2) (string=? (substring (car args) 0 2) "-j"))
     (loop (cons* "-j" (substring (car args) 2 (string-length (car args))) (cdr args)) jobs verbose? keep-going? dirs)]
    [(string=? (car args) "-v") (loop (cdr args) jobs #t keep-going? dirs)]
    [(member (car args) '("-k" "--keep-going")) (loop (cdr args) jobs verbose? #t dirs)]
    [(string=? (car args) "--optimize-level")
     (let ([n (and (pair? (cdr args)) (string->number (cadr args)))])
       (unless (memv n '(0 1 2 3)) (usage-error "--optimize-level expects 0, 1, 2 or 3"))
       (optimize-level n)
       (loop (cddr args) jobs verbose? keep-going? dirs))]
    [(and (> (string-length (car args)) 1) (char=? (string-ref (car args) 0) #\-))
     (usage-error "unknown option ~a" (car args))]
    [else (loop (cdr args) jobs verbose? keep-going? (cons (car args) dirs))]))
