#!chezscheme
;;; Record types for place-message tests (tests/test-places.ss).
(library (places records)
  (export make-point point? point-x point-y
          make-cpoint cpoint? cpoint-color
          make-mpoint mpoint? mpoint-x
          make-gpoint gpoint?
          make-mchild mchild?)
  (import (chezscheme))
  ;; allowed: nongenerative, all fields immutable
  (define-record-type point (fields x y) (nongenerative places-point-v1))
  (define-record-type cpoint (parent point) (fields color) (nongenerative places-cpoint-v1))
  ;; refused: a mutable field
  (define-record-type mpoint (fields (mutable x)) (nongenerative places-mpoint-v1))
  ;; refused: generative
  (define-record-type gpoint (fields x))
  ;; refused: immutable itself, but its parent has a mutable field
  (define-record-type mchild (parent mpoint) (fields y) (nongenerative places-mchild-v1)))
