#!chezscheme
;;; lift-places that is not the last form (run by tests/support/places/misplaced-main.ss).
(library (places misplaced)
  (export misplaced-place)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
  (lift-places (places misplaced))
  (define (misplaced-place) (place ch (place-channel-put ch 'misplaced))))
