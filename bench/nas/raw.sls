#!chezscheme
;;; Raw access to shared flvectors for the kernels' inner loops: the
;;; vector's address, and unchecked inline loads, stores and flonum
;;; arithmetic (the #3% primitives compile as at optimize-level 3 whatever
;;; the level the benchmark is compiled at).  The shared
;;; vector must stay reachable while its address is in use (it is unmapped
;;; when collected), and the offsets (bytes) must be in range.
(library (nas raw)
  (export shared-address g@ g! f+ f- f*)
  (import (chezscheme) (only (spindle unsafe) unsafe-shared-vector-address))

  (define (shared-address v) (unsafe-shared-vector-address v))

  (define-syntax g@ (syntax-rules () [(_ a off) (#3%foreign-ref 'double-float a off)]))
  (define-syntax g! (syntax-rules () [(_ a off x) (#3%foreign-set! 'double-float a off x)]))
  (define-syntax f+ (syntax-rules () [(_ x y) (#3%fl+ x y)]))
  (define-syntax f- (syntax-rules () [(_ x y) (#3%fl- x y)]))
  (define-syntax f* (syntax-rules () [(_ x y) (#3%fl* x y)])))
