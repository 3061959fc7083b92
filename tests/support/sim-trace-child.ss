#!chezscheme
;;; For test-simulation: two threads race to put on one channel, run under
;;; (simulate ... #:seed SEED) with SEED from the command line; prints the
;;; order the values arrived in.  Run under `spindle trace`.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (spindle simulation))
(define seed (string->number (cadr (command-line))))
(define (race)
  (let ([ch (make-channel)])
    (thread (lambda () (channel-put ch 'a)))
    (thread (lambda () (channel-put ch 'b)))
    (list (channel-get ch) (channel-get ch))))
(printf "~s\n" (simulate race #:seed seed))
