#!chezscheme
;;; A correct place library expanded after (places misplaced)
;;; (run by tests/support/places/misplaced-main.ss).
(library (places after-misplaced)
  (export after-place)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
  (define (after-place) (place ch (place-channel-put ch (list 'after (place-channel-get ch)))))
  (lift-places (places after-misplaced)))
