#!chezscheme
;;; Raw access to shared flvectors for the kernels' inner loops: the
;;; vector's address, and unchecked inline loads, stores and flonum
;;; arithmetic (the #3% primitives compile as at optimize-level 3 whatever
;;; the level the benchmark is compiled at).  shared-flvector-ref is a
;;; checked procedure call, several times slower in a stencil.  The shared
;;; vector must stay reachable while its address is in use (it is unmapped
;;; when collected), and the offsets (bytes) must be in range.
(library (nas raw)
  (export shared-address g@ g! f+ f- f*)
  (import (chezscheme))

  ;; The address field of spindle's shared-vector record, found by name
  ;; (spindle exports no accessor for it).
  (define (shared-address v)
    (let* ([rtd (record-rtd v)] [names (record-type-field-names rtd)])
      (let loop ([k 0])
        (cond
          [(fx= k (vector-length names))
           (assertion-violation 'shared-address "no address field in" v)]
          [(eq? (vector-ref names k) 'address) ((record-accessor rtd k) v)]
          [else (loop (fx+ k 1))]))))

  (define-syntax g@ (syntax-rules () [(_ a off) (#3%foreign-ref 'double-float a off)]))
  (define-syntax g! (syntax-rules () [(_ a off x) (#3%foreign-set! 'double-float a off x)]))
  (define-syntax f+ (syntax-rules () [(_ x y) (#3%fl+ x y)]))
  (define-syntax f- (syntax-rules () [(_ x y) (#3%fl- x y)]))
  (define-syntax f* (syntax-rules () [(_ x y) (#3%fl* x y)])))
