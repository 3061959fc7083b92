#!chezscheme
;;; Raw access to shared flvectors for the kernels' inner loops: the
;;; vector's base, and unchecked inline loads, stores and flonum
;;; arithmetic (the #3% primitives compile as at optimize-level 3 whatever
;;; the level the benchmark is compiled at).  The shared
;;; vector must stay reachable while its base is in use (it is unmapped
;;; when collected), and the offsets (bytes) must be in range.
;;;
;;; The base is the fixnum whose machine word is the mapping's address
;;; (fixnums are tagged 000 on 64-bit Chez, and the address is aligned):
;;; $object-ref adds the untagged offset to that word as it stands, where
;;; foreign-ref checks and untags the address at every access (a load is
;;; 9 instructions instead of 14, the flonum's box included).
(library (nas raw)
  (export shared-address g@ g! f+ f- f* by-chez)
  (import (chezscheme) (only (spindle unsafe) unsafe-shared-vector-address))

  (define (shared-address v)
    (let ([a (unsafe-shared-vector-address v)])
      (assert (and (fixnum? a) (fx= 0 (fxand a 7))))
      (fxsrl a 3)))

  (define-syntax g@ (syntax-rules () [(_ a off) (#3%$object-ref 'double a off)]))
  (define-syntax g! (syntax-rules () [(_ a off x) (#3%$object-set! 'double a off x)]))
  (define-syntax f+ (syntax-rules () [(_ x y) (#3%fl+ x y)]))
  (define-syntax f- (syntax-rules () [(_ x y) (#3%fl- x y)]))
  (define-syntax f* (syntax-rules () [(_ x y) (#3%fl* x y)]))

  ;; (by-chez form-9.5 form-10): the second form on Chez 10 or later, else
  ;; the first, chosen when the using library is expanded.  For the loops
  ;; whose best shape differs: 9.5 boxes every flonum, 10 unboxes local
  ;; ones and has flvectors.
  (define-syntax by-chez
    (lambda (x)
      (syntax-case x ()
        [(_ old new)
         (if (fx>= (call-with-values scheme-version-number (lambda (major minor patch) major)) 10)
             #'new
             #'old)]))))
