#!chezscheme
;;; bench/io-subprocess.ss -- subprocess overlap (issue 10, io.subprocess-overlap):
;;;
;;;   bin/spindle run bench/io-subprocess.ss [--threads N] [--command 'sleep 0.1'] [--runs K]
;;;
;;; Starts N coroutine threads at once, each running the command (split on
;;; spaces; its first word looked up on PATH) and waiting for it; times
;;; from the first start to the last exit.  Prints one `run K: SECONDS`
;;; line per run and, last, `elapsed SECONDS` (the best run).  The ideal
;;; for 20 x `sleep 0.1` is 0.1 s.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

(define (option name default)
  (let loop ([args (command-line-arguments)])
    (cond
      [(or (null? args) (null? (cdr args))) default]
      [(string=? (car args) name) (cadr args)]
      [else (loop (cdr args))])))

(define (words s)
  (let loop ([cs (string->list s)] [w '()] [acc '()])
    (define (flush) (if (null? w) acc (cons (list->string (reverse w)) acc)))
    (cond
      [(null? cs) (reverse (flush))]
      [(char=? (car cs) #\space) (loop (cdr cs) '() (flush))]
      [else (loop (cdr cs) (cons (car cs) w) acc)])))

(define threads (string->number (option "--threads" "20")))
(define runs (string->number (option "--runs" "3")))
(define command (words (option "--command" "sleep 0.1")))
(define path (or (find-executable-path (car command))
                 (begin (printf "command not found: ~a\n" (car command)) (exit 2))))

(define (one-run)
  (let* ([t0 (current-inexact-monotonic-milliseconds)]
         [ts (map (lambda (i)
                    (thread (lambda ()
                              (let-values ([(p o i e) (apply subprocess #f #f (current-error-port) path (cdr command))])
                                (close-port i)
                                (get-bytevector-all o)       ; drain, so a chatty command never stalls
                                (close-port o)
                                (subprocess-wait p)
                                (subprocess-status p)))
                            #f 'results))
                  (iota threads))])
    (for-each thread-wait ts)
    (/ (- (current-inexact-monotonic-milliseconds) t0) 1000.)))

(let loop ([k 1] [best #f])
  (if (> k runs)
      (printf "elapsed ~,3f\n" best)
      (let ([s (one-run)])
        (printf "run ~a: ~,3f\n" k s)
        (loop (+ k 1) (if best (min best s) s)))))
