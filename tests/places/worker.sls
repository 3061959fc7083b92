#!chezscheme
;;; Start procedures for dynamic-place with a library name (tests/test-places.ss).
(library (places worker)
  (export start start-exit-7 start-crash not-a-procedure)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
  ;; echoes (worker . m) until 'stop
  (define (start ch)
    (let loop ()
      (let ([m (place-channel-get ch)])
        (unless (eq? m 'stop)
          (place-channel-put ch (cons 'worker m))
          (loop)))))
  (define (start-exit-7 ch) (exit 7))
  (define (start-crash ch) (error 'start-crash "deliberate failure in a test place"))
  (define not-a-procedure 42)
  ;; never exported: dynamic-place with this start-name must end the place with 1
  (define (hidden ch) (place-channel-put ch 'hidden)))
