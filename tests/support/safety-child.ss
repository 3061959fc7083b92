;;; Child program of tests/test-safety-nets.ss: an OS thread stuck in a
;;; foreign call not declared __collect_safe while the main thread
;;; allocates, so the next collection waits for it.  Modes: stall (the
;;; stuck thread is a parallel thread), helper (a call-blocking helper),
;;; raw (an OS thread made with fork-thread, the watchdog started by
;;; setting its threshold).
;;; Prints "ready THREAD" on stdout as the stuck call starts, then
;;; "done" once it has returned and main has finished.
#!chezscheme
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (spindle watchdog))

(load-shared-object "libc.so.6")
(define raw-usleep (foreign-procedure "usleep" (unsigned) int))

;; Not inlined (assigned), so that it has a frame of its own to name.
(define (stuck-in-usleep us) (raw-usleep us) 'woke)
(set! stuck-in-usleep stuck-in-usleep)

(define mode (string->symbol (cadr (command-line))))
(define stuck-us 3000000)
(define finished (box #f))

(define (ready! who)
  (printf "ready ~a\n" who)
  (flush-output-port (current-output-port)))

(case mode
  [(stall)
   (let ([t (thread (lambda () (stuck-in-usleep stuck-us) (set-box! finished #t)) #:pool 'own)])
     (sleep 0.2)                        ; let it enter the call
     (ready! t))]
  [(helper)
   (thread (lambda () (call-blocking stuck-in-usleep stuck-us) (set-box! finished #t)))
   (sleep 0.2)
   (ready! "helper")]
  [(raw)
   (collect-stall-report-seconds 1)
   (fork-thread (lambda () (stuck-in-usleep stuck-us) (set-box! finished #t)))
   (sleep 0.2)
   (ready! "raw")])

;; Allocate until the stuck thread is back: the first collection request
;; waits for it.
(let loop ([acc '()] [i 0])
  (unless (unbox finished)
    (loop (if (fx= 0 (fxand i 1023)) '() (cons i acc)) (fx+ i 1))))
(display "done\n")
