#!chezscheme
;;; The typed blocks of fork-join's CGalltoallv: the element kind of a
;;; bytevector, fxvector or shared vector (bytes, int64, double), the checks
;;; of counts, displacements and blocks, and a block's bytes copied out of
;;; and into a vector (over places a block travels as a bytevector).
(library (spindle private groups cg-blocks)
  (export block-kind element-count index-vector check-blocks block->bytes bytes->block!)
  (import (chezscheme)
          (only (spindle private places shared-vector) shared-vector? shared-vector-kind shared-vector-length
                shared-vector-address)
          (only (spindle private os memory) foreign->bytevector! bytevector->foreign!))

  ;; bytes, int64 or double: the element kind of a typed vector.
  (define (block-kind who v)
    (cond
      [(bytevector? v) 'bytes]
      [(fxvector? v) 'int64]
      [(shared-vector? v) (case (shared-vector-kind v) [(bytes) 'bytes] [(fx) 'int64] [else 'double])]
      [else (assertion-violation who "expected a bytevector, fxvector or shared vector" v)]))

  (define (element-count v)
    (cond [(bytevector? v) (bytevector-length v)] [(fxvector? v) (fxvector-length v)] [else (shared-vector-length v)]))

  ;; counts or displacements: an fxvector or vector of np non-negative
  ;; fixnums -> an fxvector.
  (define (index-vector who v np)
    (let ([r (cond [(fxvector? v) v] [(vector? v) (and (for-all fixnum? (vector->list v)) (list->fxvector (vector->list v)))] [else #f])])
      (unless (and r (fx= (fxvector-length r) np) (for-all (lambda (x) (fx>= x 0)) (fxvector->list r)))
        (assertion-violation who (format "expected an fxvector of ~a non-negative counts or displacements" np) v))
      r))

  (define (check-blocks who v counts displs)
    (do ([m 0 (fx+ m 1)]) ((fx= m (fxvector-length counts)))
      (unless (<= (+ (fxvector-ref counts m) (fxvector-ref displs m)) (element-count v))
        (assertion-violation who (format "the block for member ~a is outside the vector" m) v))))

  ;; n bytes of v from byte offset at, as a fresh bytevector.
  (define (block->bytes v at n)
    (let ([bv (make-bytevector n)])
      (cond
        [(bytevector? v) (bytevector-copy! v at bv 0 n)]
        [(fxvector? v) (do ([i 0 (fx+ i 8)]) ((fx= i n)) (bytevector-s64-native-set! bv i (fxvector-ref v (fxquotient (fx+ at i) 8))))]
        [else (foreign->bytevector! (+ (shared-vector-address v) at) bv 0 n)])
      bv))

  (define (bytes->block! bv v at)
    (let ([n (bytevector-length bv)])
      (cond
        [(bytevector? v) (bytevector-copy! bv 0 v at n)]
        [(fxvector? v) (do ([i 0 (fx+ i 8)]) ((fx= i n)) (fxvector-set! v (fxquotient (fx+ at i) 8) (bytevector-s64-native-ref bv i)))]
        [else (bytevector->foreign! bv 0 (+ (shared-vector-address v) at) n)]))))
