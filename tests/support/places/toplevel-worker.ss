#!chezscheme
;;; Top-level definitions loaded by dynamic-place from a file path
;;; (tests/test-places.ss).
(import (only (spindle) place-channel-get place-channel-put))
(define toplevel-tag 'toplevel-worker)
(define (start ch)
  (let ([m (place-channel-get ch)])
    (place-channel-put ch (list toplevel-tag m))))
