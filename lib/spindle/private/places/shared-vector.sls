#!chezscheme
;;; Shared vectors: bytes, fixnums and flonums in a memfd mapped MAP_SHARED.
;;; Sending one in a place message passes its descriptor, so every place
;;; that has it maps the same pages.  The mapping and the descriptor are
;;; released once the record is unreachable.
(library (spindle private places shared-vector)
  (export shared-vector? shared-vector-kind shared-vector-fd shared-vector-length shared-vector-address
          descriptor->shared-vector
          make-shared-bytes shared-bytes shared-bytes? shared-bytes-length
          shared-bytes-ref shared-bytes-set! shared-bytes->bytevector
          make-shared-fxvector shared-fxvector shared-fxvector? shared-fxvector-length
          shared-fxvector-ref shared-fxvector-set!
          make-shared-flvector shared-flvector shared-flvector? shared-flvector-length
          shared-flvector-ref shared-flvector-set!)
  (import (chezscheme) (only (spindle private core atomic) with-os-mutex)
          (only (spindle private os descriptors) close-fd)
          (only (spindle private os memory) memcpy-to-bytevector! make-memfd map-shared unmap))

  ;; kind: 'bytes (1-byte elements), 'fx or 'fl (8-byte elements).
  (define-record-type shared-vector
    (fields kind fd address length)
    (nongenerative spindle-shared-vector-v1) (sealed #t))

  (define (element-size kind) (if (eq? kind 'bytes) 1 8))

  (define reclaim (make-guardian))
  (define reclaim-lock (make-mutex))

  ;; Held with interrupts disabled, like every Chez mutex in spindle.
  (define (track! v)
    (with-os-mutex reclaim-lock
      (let loop ()
        (let ([dead (reclaim)])
          (when dead
            (unmap (shared-vector-address dead)
                   (* (shared-vector-length dead) (element-size (shared-vector-kind dead))))
            (close-fd (shared-vector-fd dead))
            (loop))))
      (reclaim v))
    v)

  (define (descriptor->shared-vector kind len fd)
    (track! (make-shared-vector kind fd (map-shared 'place-channel-get fd (* len (element-size kind))) len)))

  (define (allocate who kind len)
    (let* ([size (* len (element-size kind))] [fd (make-memfd who size)])
      (track! (make-shared-vector kind fd (map-shared who fd size) len))))

  (define (check-length who n)
    (unless (and (fixnum? n) (fx>= n 0) (fx< n (expt 2 40)))
      (assertion-violation who "expected a valid length" n)))

  (define-syntax define-shared-kind
    (syntax-rules ()
      [(_ kind ctype valid? what make build pred len ref set)
       (begin
         (define (pred v) (and (shared-vector? v) (eq? (shared-vector-kind v) 'kind)))
         (define (check who v)
           (unless (pred v) (assertion-violation who (string-append "expected a " what) v)))
         (define (check-elt who x)
           (unless (valid? x) (assertion-violation who "invalid element" x)))
         (define (check-index who v i)
           (unless (and (fixnum? i) (fx>= i 0) (fx< i (shared-vector-length v)))
             (assertion-violation who "index out of range" i)))
         (define (fill! v x)
           (let ([a (shared-vector-address v)])
             (do ([i 0 (fx+ i 1)]) ((fx= i (shared-vector-length v)))
               (foreign-set! 'ctype a (fx* i (element-size 'kind)) x))))
         (define make
           (case-lambda
             [(n) (check-length 'make n) (allocate 'make 'kind n)]
             [(n x) (check-length 'make n) (check-elt 'make x)
              (let ([v (allocate 'make 'kind n)]) (fill! v x) v)]))
         (define (build . xs)
           (for-each (lambda (x) (check-elt 'build x)) xs)
           (let ([v (allocate 'build 'kind (length xs))])
             (let loop ([xs xs] [i 0])
               (unless (null? xs)
                 (foreign-set! 'ctype (shared-vector-address v) (fx* i (element-size 'kind)) (car xs))
                 (loop (cdr xs) (fx+ i 1))))
             v))
         (define (len v) (check 'len v) (shared-vector-length v))
         (define (ref v i)
           (check 'ref v) (check-index 'ref v i)
           (foreign-ref 'ctype (shared-vector-address v) (fx* i (element-size 'kind))))
         (define (set v i x)
           (check 'set v) (check-index 'set v i) (check-elt 'set x)
           (foreign-set! 'ctype (shared-vector-address v) (fx* i (element-size 'kind)) x)))]))

  (define (octet? x) (and (fixnum? x) (fx<= 0 x 255)))

  (define-shared-kind bytes unsigned-8 octet? "shared bytes"
    make-shared-bytes shared-bytes shared-bytes? shared-bytes-length
    shared-bytes-ref shared-bytes-set!)
  (define-shared-kind fx integer-64 fixnum? "shared fxvector"
    make-shared-fxvector shared-fxvector shared-fxvector? shared-fxvector-length
    shared-fxvector-ref shared-fxvector-set!)
  (define-shared-kind fl double-float flonum? "shared flvector"
    make-shared-flvector shared-flvector shared-flvector? shared-flvector-length
    shared-flvector-ref shared-flvector-set!)

  ;; A fresh bytevector copy of sb[start, end).
  (define shared-bytes->bytevector
    (case-lambda
      [(sb) (shared-bytes->bytevector sb 0 (and (shared-vector? sb) (shared-vector-length sb)))]
      [(sb start) (shared-bytes->bytevector sb start (and (shared-vector? sb) (shared-vector-length sb)))]
      [(sb start end)
       (unless (shared-bytes? sb)
         (assertion-violation 'shared-bytes->bytevector "expected shared bytes" sb))
       (unless (and (fixnum? start) (fixnum? end) (fx<= 0 start end (shared-vector-length sb)))
         (assertion-violation 'shared-bytes->bytevector "invalid range" start end))
       (let ([bv (make-bytevector (fx- end start))])
         (memcpy-to-bytevector! bv (+ (shared-vector-address sb) start) (fx- end start))
         bv)])))
