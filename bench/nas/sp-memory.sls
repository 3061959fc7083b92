#!chezscheme
;;; How SP's inner loops touch memory and do arithmetic.
;;;
;;; The grids live in shared flvectors (one memfd mapping per array, the
;;; same pages in every place); the loops read and write them through the
;;; mapping's address with foreign-ref / foreign-set!, which Chez compiles
;;; to one load or store (plus the flonum box).  A member's private work lines are bytevectors.
;;;
;;; The arithmetic names below are the unsafe (#3%) primitives, so the
;;; loops compile the same whatever optimize-level the benchmark is loaded
;;; at (at level 0 a safe foreign-ref costs 30x more).  Every offset the
;;; loops form stays inside an array whose size follows from the grid size
;;; checked by sp-run.
(library (nas sp-memory)
  (export fref fset! bref bset! fl+ fl- fl* fl/ flsqrt fl< fl> flmax2
          fx+ fx- fx* fx< fx<= fx= fx>= fx>
          shared-flvector-address)
  (import (except (chezscheme) fl+ fl- fl* fl/ flsqrt fl< fl> fx+ fx- fx* fx< fx<= fx= fx>= fx>)
          (only (spindle) shared-flvector?)
          (only (spindle unsafe) unsafe-shared-vector-address))

  (define-syntax fl+ (identifier-syntax #3%fl+))
  (define-syntax fl- (identifier-syntax #3%fl-))
  (define-syntax fl* (identifier-syntax #3%fl*))
  (define-syntax fl/ (identifier-syntax #3%fl/))
  (define-syntax flsqrt (identifier-syntax #3%flsqrt))
  (define-syntax fl< (identifier-syntax #3%fl<))
  (define-syntax fl> (identifier-syntax #3%fl>))
  (define-syntax fx+ (identifier-syntax #3%fx+))
  (define-syntax fx- (identifier-syntax #3%fx-))
  (define-syntax fx* (identifier-syntax #3%fx*))
  (define-syntax fx< (identifier-syntax #3%fx<))
  (define-syntax fx<= (identifier-syntax #3%fx<=))
  (define-syntax fx= (identifier-syntax #3%fx=))
  (define-syntax fx>= (identifier-syntax #3%fx>=))
  (define-syntax fx> (identifier-syntax #3%fx>))

  ;; The reference's max(a, b): a > b ? a : b.
  (define-syntax flmax2
    (syntax-rules ()
      [(_ a b) (let ([x a] [y b]) (if (#3%fl> x y) x y))]))

  ;; addr: a mapping's address; off: a byte offset.
  (define-syntax fref
    (syntax-rules () [(_ addr off) (#3%foreign-ref 'double addr off)]))
  (define-syntax fset!
    (syntax-rules () [(_ addr off x) (#3%foreign-set! 'double addr off x)]))
  (define-syntax bref
    (syntax-rules () [(_ bv off) (#3%bytevector-ieee-double-native-ref bv off)]))
  (define-syntax bset!
    (syntax-rules () [(_ bv off x) (#3%bytevector-ieee-double-native-set! bv off x)]))

  ;; The address of v's mapping.  It stays valid while v is reachable:
  ;; whoever loops over it keeps v itself alive until the loops end.
  (define (shared-flvector-address v)
    (unless (shared-flvector? v)
      (assertion-violation 'shared-flvector-address "expected a shared flvector" v))
    (unsafe-shared-vector-address v)))
