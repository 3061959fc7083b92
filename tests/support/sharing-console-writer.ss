#!chezscheme
;;; For tests/test-sharing.ss: two parallel threads print 20000 lines each
;;; on the console, one in four pieces under with-port-lock, the other one
;;; put-string per line; then "done".  They are (spindle console)'s parking
;;; ports by default; with the argument "installed" the program also calls
;;; install-console-ports! first, which must change nothing.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

(define installed? (member "installed" (cdr (command-line))))
(when installed? (install-console-ports!))

(define (digits i) (let ([d (number->string i)]) (string-append (make-string (- 10 (string-length d)) #\0) d)))

(define locked
  (thread (lambda ()
            (do ([i 0 (+ i 1)]) ((= i 20000))
              (with-port-lock (current-output-port)
                (display "L") (display " ") (display (digits i)) (newline))))
          #:pool 'own))
(define plain
  (thread (lambda ()
            (do ([i 0 (+ i 1)]) ((= i 20000))
              (put-string (current-output-port) (string-append "P " (digits i) "\n"))))
          #:pool 'own))
(thread-wait locked)
(thread-wait plain)
(display "done\n")
(flush-output-port (current-output-port))
