#!chezscheme
;;; How values travel between MPI ranks: a message is one kind byte then
;;; its body, in one of three forms: raw (kind 1), a bytevector's bytes;
;;; fx (kind 4), an fxvector's elements as native 64-bit words (an
;;; fxvector is no place message, but the collectives take it, so
;;; rmpi-send does too); encoded (kind 0), spindle's place-message
;;; encoding.  A typed reduction's operand is foreign memory of doubles or
;;; 64-bit integers (MPI_DOUBLE, MPI_INT64_T); a typed vector (bytevector,
;;; fxvector, shared vector) travels in the collectives
;;; as its elements in foreign memory (MPI_BYTE, MPI_INT64_T, MPI_DOUBLE),
;;; a shared vector from its own memory.  Used by (spindle mpi).
(library (spindle private mpi data)
  (export pack unpack encode-body form-kind kind-form foreign->body body->value foreign-copy
          typed-op flonum-vector? typed-buffer typed-result datatype
          element-kind element-count element-size kind-datatype
          elements->foreign foreign->elements! make-elements)
  (import (chezscheme)
          (only (spindle private os mpi) mpi-double mpi-int64 mpi-byte)
          (only (spindle private os memory) malloc memcpy-from-bytevector! memcpy-to-bytevector!)
          (only (spindle private places shared-vector) shared-vector? shared-vector-kind shared-vector-length
                shared-vector-address make-shared-bytes make-shared-fxvector make-shared-flvector)
          (only (spindle private places place-message) encode-message decode-message))

  ;; v as one bytevector: its kind byte, then its body.
  (define (pack who v)
    (let-values ([(bv form) (encode-body who v)])
      (let* ([n (bytevector-length bv)] [out (make-bytevector (fx+ n 1))])
        (bytevector-u8-set! out 0 (form-kind form))
        (bytevector-copy! bv 0 out 1 n)
        out)))

  ;; v's message body: (values bytes form), the bytes v itself for a
  ;; bytevector (form raw).
  (define (encode-body who v)
    (if (fxvector? v)
        (let* ([n (fxvector-length v)] [bv (make-bytevector (fx* 8 n))])
          (do ([i 0 (fx+ i 1)]) ((fx= i n)) (bytevector-s64-native-set! bv (fx* 8 i) (fxvector-ref v i)))
          (values bv 'fx))
        (let-values ([(bv fds raw?) (encode-message who v (lambda (x) #f) (lambda (x) #f))])
          (unless (null? fds)
            (assertion-violation who "place channels and shared vectors cannot be sent to another rank" v))
          (values bv (if raw? 'raw 'encoded)))))

  (define (form-kind form) (case form [(raw) 1] [(fx) 4] [else 0]))
  (define (kind-form kind) (case kind [(1) 'raw] [(4) 'fx] [else 'encoded]))

  ;; The n-byte message at foreign address p (kind byte first), copied but
  ;; not decoded: (values form body).
  (define (foreign->body p n)
    (let ([body (make-bytevector (fx- n 1))])
      (memcpy-to-bytevector! body (+ p 1) (fx- n 1))
      (values (kind-form (foreign-ref 'unsigned-8 p 0)) body)))

  (define (body->value form body)
    (if (eq? form 'fx)
        (let* ([n (fxquotient (bytevector-length body) 8)] [v (make-fxvector n)])
          (do ([i 0 (fx+ i 1)]) ((fx= i n) v) (fxvector-set! v i (bytevector-s64-native-ref body (fx* 8 i)))))
        (decode-message body (eq? form 'raw) '() (lambda (fd) #f))))

  (define (unpack bv)
    (let* ([n (fx- (bytevector-length bv) 1)] [body (make-bytevector n)])
      ;; (an empty bytevector is Chez's one immutable #vu8(): even a copy
      ;; of 0 bytes into it raises at optimize-level 2)
      (unless (fx= n 0) (bytevector-copy! bv 1 body 0 n))
      (body->value (kind-form (bytevector-u8-ref bv 0)) body)))

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

  ;; A vector of flonums or an fxvector as foreign memory: (values kind
  ;; count address).
  (define (typed-buffer v)
    (cond
      [(flonum-vector? v)
       (let* ([n (vector-length v)] [p (malloc (fx* 8 (fxmax n 1)))])
         (do ([i 0 (fx+ i 1)]) ((fx= i n)) (foreign-set! 'double p (fx* 8 i) (vector-ref v i)))
         (values 'double-vector n p))]
      [else
       (let* ([n (fxvector-length v)] [p (malloc (fx* 8 (fxmax n 1)))])
         (do ([i 0 (fx+ i 1)]) ((fx= i n)) (foreign-set! 'integer-64 p (fx* 8 i) (fxvector-ref v i)))
         (values 'int64-vector n p))]))

  (define (typed-result who kind n p)
    (define (int i)
      (let ([x (foreign-ref 'integer-64 p (fx* 8 i))])
        (unless (fixnum? x) (error who "the reduction's result is not a fixnum" x))
        x))
    (case kind
      [(double-vector) (let ([r (make-vector n)])
                         (do ([i 0 (fx+ i 1)]) ((fx= i n) r) (vector-set! r i (foreign-ref 'double p (fx* 8 i)))))]
      [else (let ([r (make-fxvector n)])
              (do ([i 0 (fx+ i 1)]) ((fx= i n) r) (fxvector-set! r i (int i))))]))

  (define (datatype kind) (if (eq? kind 'double-vector) (mpi-double) (mpi-int64)))

  ;; ------------------------------------------------------------ typed vectors
  ;; The element kind of a typed vector: bytes, int64 or double; #f for
  ;; any other value.
  (define (element-kind v)
    (cond
      [(bytevector? v) 'bytes]
      [(fxvector? v) 'int64]
      [(shared-vector? v) (case (shared-vector-kind v) [(bytes) 'bytes] [(fx) 'int64] [else 'double])]
      [else #f]))

  (define (element-count v)
    (cond
      [(bytevector? v) (bytevector-length v)]
      [(fxvector? v) (fxvector-length v)]
      [else (shared-vector-length v)]))

  (define (element-size kind) (if (eq? kind 'bytes) 1 8))
  (define (kind-datatype kind)
    (case kind [(bytes) (mpi-byte)] [(int64) (mpi-int64)] [else (mpi-double)]))

  ;; v's elements as foreign memory: (values address owned?); a shared
  ;; vector is its own memory (owned? #f), anything else a malloc'ed copy.
  (define (elements->foreign v)
    (if (shared-vector? v)
        (values (shared-vector-address v) #f)
        (let* ([n (element-count v)] [p (malloc (fxmax 8 (fx* 8 n)))])
          (cond
            [(bytevector? v) (memcpy-from-bytevector! p v n)]
            [else (do ([i 0 (fx+ i 1)]) ((fx= i n)) (foreign-set! 'integer-64 p (fx* 8 i) (fxvector-ref v i)))])
          (values p #t))))

  ;; Copies n elements of kind from foreign memory p (from element from)
  ;; into v (from element at); v is not a shared vector.
  (define (foreign->elements! who kind p from v at n)
    (let ([base (fx* from (element-size kind))])
      (case kind
        [(bytes)
         (if (fx= at 0)
             (memcpy-to-bytevector! v (+ p base) n)
             (let ([tmp (make-bytevector n)])
               (memcpy-to-bytevector! tmp (+ p base) n)
               (bytevector-copy! tmp 0 v at n)))]
        [else
         (do ([i 0 (fx+ i 1)]) ((fx= i n))
           (let ([x (foreign-ref 'integer-64 p (fx+ base (fx* 8 i)))])
             (unless (fixnum? x) (error who "a received element is not a fixnum" x))
             (fxvector-set! v (fx+ at i) x)))])))

  ;; A new vector like v (bytevector, fxvector or shared vector of v's
  ;; kind) of n elements.
  (define (make-elements v n)
    (cond
      [(bytevector? v) (make-bytevector n 0)]
      [(fxvector? v) (make-fxvector n 0)]
      [(shared-vector? v)
       (case (shared-vector-kind v)
         [(bytes) (make-shared-bytes n)] [(fx) (make-shared-fxvector n)] [else (make-shared-flvector n)])])))

