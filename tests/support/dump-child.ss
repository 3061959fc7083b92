;;; Child program of tests/test-dump-threads.ss: SIGQUIT prints the dump to
;;; stderr and the program goes on.  A thread waits on a channel; the main
;;; thread waits for a line on stdin (mode idle) or computes until a
;;; parallel thread has read it (mode spin).  "ready" on stdout says the
;;; parent may signal; after the line, it prints "still running".
#!chezscheme
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

(define mode (string->symbol (cadr (command-line))))
(define waiter (thread (lambda () (channel-get (make-channel)))))
(define (ready!) (display "ready\n") (flush-output-port (current-output-port)))

(case mode
  [(idle) (ready!) (get-line (current-input-port))]
  [(spin)
   (let ([got (box #f)])
     (thread (lambda () (get-line (current-input-port)) (set-box! got #t)) #:pool 'own)
     (ready!)
     (let loop ([i 0]) (unless (unbox got) (loop (+ i 1)))))])
(display "still running\n")
