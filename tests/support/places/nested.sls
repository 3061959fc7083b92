#!chezscheme
;;; A place form inside another place form's body (tests/test-places.ss).
;;; Imported last by the test program, in case its bodies disturb the
;;; place numbering of libraries expanded after it.
(library (places nested)
  (export nested-place)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
  ;; Waits for 'go, starts an inner place, relays what the inner place
  ;; sends within 3 s (#f if nothing).  An inner place that wrongly ran this
  ;; outer body would wait for a 'go that never comes.
  (define (nested-place)
    (place ch
      (when (eq? (place-channel-get ch) 'go)
        (let ([inner (place ch2 (place-channel-put ch2 'from-inner))])
          (place-channel-put ch (sync/timeout 3 inner))
          (place-kill inner)))))
  (lift-places (places nested)))
