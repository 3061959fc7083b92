#!chezscheme
;;; A library loaded by dynamic-place from a file path (tests/test-places.ss).
;;; Its name does not match its location on purpose.
(library (places-file-worker)
  (export start)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
  (define (start ch)
    (let ([m (place-channel-get ch)])
      (place-channel-put ch (list 'file-worker m)))))
