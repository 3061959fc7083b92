#!chezscheme
;;; The flonum and fixnum operations of LU's kernels, unchecked: each name
;;; stands for Chez's optimize-level-3 primitive, whatever level the
;;; kernels are compiled at.  The kernels' indices are computed from the
;;; grid size and their arguments are flonums by construction; class S
;;; verifying in every mode (tests/test-nas-lu.ss) is their check.  Halves
;;; the CPU time of a run against the checked primitives.
(library (nas lu-ops)
  (export fl+ fl- fl* fl/ flsqrt fx+ fx- fx* fx= fx< fx> fx<= fx>= fxsll
          fl-ref fl-set! memory-ref memory-set!)
  (import (only (chezscheme) define-syntax identifier-syntax $primitive))

  (define-syntax fl+ (identifier-syntax #3%fl+))
  (define-syntax fl- (identifier-syntax #3%fl-))
  (define-syntax fl* (identifier-syntax #3%fl*))
  (define-syntax fl/ (identifier-syntax #3%fl/))
  (define-syntax flsqrt (identifier-syntax #3%flsqrt))
  (define-syntax fx+ (identifier-syntax #3%fx+))
  (define-syntax fx- (identifier-syntax #3%fx-))
  (define-syntax fx* (identifier-syntax #3%fx*))
  (define-syntax fx= (identifier-syntax #3%fx=))
  (define-syntax fx< (identifier-syntax #3%fx<))
  (define-syntax fx> (identifier-syntax #3%fx>))
  (define-syntax fx<= (identifier-syntax #3%fx<=))
  (define-syntax fx>= (identifier-syntax #3%fx>=))
  (define-syntax fxsll (identifier-syntax #3%fxsll))
  (define-syntax fl-ref (identifier-syntax #3%bytevector-ieee-double-native-ref))
  (define-syntax fl-set! (identifier-syntax #3%bytevector-ieee-double-native-set!))
  (define-syntax memory-ref (identifier-syntax #3%foreign-ref))
  (define-syntax memory-set! (identifier-syntax #3%foreign-set!)))
