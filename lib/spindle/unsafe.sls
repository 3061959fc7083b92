#!chezscheme
;;; Unchecked access to shared vectors, for numerical inner loops: Racket's
;;; unsafe-flvector-ref family.  Nothing is checked: a wrong type or index
;;; reads or writes the wrong memory.  The manual: doc/reference.md,
;;; "(spindle unsafe)".
(library (spindle unsafe)
  (export unsafe-shared-flvector-ref unsafe-shared-flvector-set!
          unsafe-shared-fxvector-ref unsafe-shared-fxvector-set!
          unsafe-shared-vector-address
          unsafe-shared-vector->bytevector! unsafe-bytevector->shared-vector!)
  (import (chezscheme)
          (only (spindle private places shared-vector) shared-vector-address)
          (only (spindle private os memory) foreign->bytevector! bytevector->foreign!)
          (only (spindle private os libc) check-range))

  ;; The address of sv's mapping: valid while sv is reachable (the mapping
  ;; is released once it is not), so keep sv in a variable while it is used.
  (define (unsafe-shared-vector-address sv) (shared-vector-address sv))

  (define-syntax unsafe-shared-flvector-ref
    (syntax-rules ()
      [(_ sv i) (#3%foreign-ref 'double-float (shared-vector-address sv) (#3%fx* i 8))]))
  (define-syntax unsafe-shared-flvector-set!
    (syntax-rules ()
      [(_ sv i x) (#3%foreign-set! 'double-float (shared-vector-address sv) (#3%fx* i 8) x)]))
  (define-syntax unsafe-shared-fxvector-ref
    (syntax-rules ()
      [(_ sv i) (#3%foreign-ref 'integer-64 (shared-vector-address sv) (#3%fx* i 8))]))
  (define-syntax unsafe-shared-fxvector-set!
    (syntax-rules ()
      [(_ sv i x) (#3%foreign-set! 'integer-64 (shared-vector-address sv) (#3%fx* i 8) x)]))

  ;; n bytes from sv at byte offset start to bv at bv-start, and back.
  ;; The bytevector's range is checked; the shared vector's is not.
  (define (unsafe-shared-vector->bytevector! sv start bv bv-start n)
    (check-range 'unsafe-shared-vector->bytevector! bv bv-start n)
    (foreign->bytevector! (+ (shared-vector-address sv) start) bv bv-start n))
  (define (unsafe-bytevector->shared-vector! bv bv-start sv start n)
    (check-range 'unsafe-bytevector->shared-vector! bv bv-start n)
    (bytevector->foreign! bv bv-start (+ (shared-vector-address sv) start) n)))
