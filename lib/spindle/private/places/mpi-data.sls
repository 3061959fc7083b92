#!chezscheme
;;; How values travel between MPI ranks: a message is one kind byte (1:
;;; raw, 0: encoded) then a bytevector's bytes or spindle's place-message
;;; encoding; a typed reduction's operand is foreign memory of doubles or
;;; 64-bit integers (MPI_DOUBLE, MPI_INT64_T).  Used by (spindle mpi).
(library (spindle private places mpi-data)
  (export pack unpack foreign-copy typed-op typed-buffer typed-result datatype)
  (import (chezscheme)
          (only (spindle private os mpi) mpi-double mpi-int64)
          (only (spindle private os memory) malloc memcpy-from-bytevector!)
          (only (spindle private places place-message) encode-message decode-message))

  (define (pack who v)
    (let-values ([(bv fds raw?) (encode-message who v (lambda (x) #f) (lambda (x) #f))])
      (unless (null? fds)
        (assertion-violation who "place channels and shared vectors cannot be sent to another rank" v))
      (let* ([n (bytevector-length bv)] [out (make-bytevector (fx+ n 1))])
        (bytevector-u8-set! out 0 (if raw? 1 0))
        (bytevector-copy! bv 0 out 1 n)
        out)))

  (define (unpack bv)
    (let* ([n (fx- (bytevector-length bv) 1)] [body (make-bytevector n)])
      (bytevector-copy! bv 1 body 0 n)
      (decode-message body (eqv? (bytevector-u8-ref bv 0) 1) '() (lambda (fd) #f))))

  (define (foreign-copy bv)
    (let* ([n (bytevector-length bv)] [p (malloc (fxmax n 1))])
      (memcpy-from-bytevector! p bv n)
      p))

  ;; The MPI op for a Scheme operation, or #f.
  (define (typed-op op)
    (cond
      [(or (eq? op +) (eq? op 'sum)) 'sum]
      [(or (eq? op *) (eq? op 'prod)) 'prod]
      [(or (eq? op min) (eq? op 'min)) 'min]
      [(or (eq? op max) (eq? op 'max)) 'max]
      [else #f]))

  (define (flonum-vector? v)
    (and (vector? v)
         (let loop ([i 0]) (or (fx= i (vector-length v)) (and (flonum? (vector-ref v i)) (loop (fx+ i 1)))))))

  ;; v as foreign memory: (values kind count address), or #f for the general path.
  (define (typed-buffer v)
    (cond
      [(flonum? v) (let ([p (malloc 8)]) (foreign-set! 'double p 0 v) (values 'double 1 p))]
      [(fixnum? v) (let ([p (malloc 8)]) (foreign-set! 'integer-64 p 0 v) (values 'int64 1 p))]
      [(flonum-vector? v)
       (let* ([n (vector-length v)] [p (malloc (fxmax 8 (fx* 8 n)))])
         (do ([i 0 (fx+ i 1)]) ((fx= i n)) (foreign-set! 'double p (fx* 8 i) (vector-ref v i)))
         (values 'double-vector n p))]
      [(fxvector? v)
       (let* ([n (fxvector-length v)] [p (malloc (fxmax 8 (fx* 8 n)))])
         (do ([i 0 (fx+ i 1)]) ((fx= i n)) (foreign-set! 'integer-64 p (fx* 8 i) (fxvector-ref v i)))
         (values 'int64-vector n p))]
      [else (values #f 0 0)]))

  (define (typed-result who kind n p)
    (define (int i)
      (let ([x (foreign-ref 'integer-64 p (fx* 8 i))])
        (unless (fixnum? x) (error who "the reduction's result is not a fixnum" x))
        x))
    (case kind
      [(double) (foreign-ref 'double p 0)]
      [(int64) (int 0)]
      [(double-vector) (let ([r (make-vector n)])
                         (do ([i 0 (fx+ i 1)]) ((fx= i n) r) (vector-set! r i (foreign-ref 'double p (fx* 8 i)))))]
      [else (let ([r (make-fxvector n)])
              (do ([i 0 (fx+ i 1)]) ((fx= i n) r) (fxvector-set! r i (int i))))]))

  (define (datatype kind) (if (memq kind '(double double-vector)) (mpi-double) (mpi-int64))))
