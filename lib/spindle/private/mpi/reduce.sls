#!chezscheme
;;; The reductions of (spindle mpi), after Racket's rmpi: rmpi-reduce and
;;; rmpi-allreduce.  Each runs whole in a helper thread (private/mpi/collectives)
;;; and starts with the ranks' agreement (collectives' `agree`), whose
;;; words carry the root, the operation and the operand's category and
;;; length, so that every rank takes the same path, or raises:
;;;  - fixnums and flonums with + * min max (or sum prod min max): the
;;;    agreement carries the values themselves; every rank folds them in
;;;    rank order, so there is no other MPI call;
;;;  - flonum vectors or fxvectors (all of one kind and length): one
;;;    MPI_Iallreduce (MPI_DOUBLE or MPI_INT64_T); a shared flvector or
;;;    fxvector (all shared, of one kind and length) is reduced in its own
;;;    memory;
;;;  - anything else (any procedure, operands whose kinds differ between
;;;    ranks, a sum past the fixnums): gathered to the root over
;;;    point-to-point messages on the internal tag, folded in rank order
;;;    there (vectors element by element) and, for allreduce, broadcast.
(library (spindle private mpi reduce)
  (export rmpi-reduce rmpi-allreduce)
  (import (chezscheme)
          (spindle private os mpi)
          (only (spindle private os memory) malloc free)
          (spindle private mpi data)
          (spindle private mpi world)
          (only (spindle private mpi progress) run-request!)
          (only (spindle private mpi point-to-point) send-message recv-internal)
          (only (spindle private mpi collectives) whole agree check-same word broadcast bits->flonum flonum->bits)
          (only (spindle private places shared-vector) shared-vector-address shared-vector-length
                shared-flvector? shared-fxvector?))

  (define id-reduce 8)
  (define id-allreduce 9)

  ;; An operand's category (a word of the agreement).
  (define cat-fixnum 1)
  (define cat-flonum 2)
  (define cat-flvector 3)        ; a vector of flonums
  (define cat-fxvector 4)
  (define cat-shared-fl 5)
  (define cat-shared-fx 6)
  (define cat-vector 7)          ; any other vector
  (define cat-other 8)
  (define (category v)
    (cond
      [(fixnum? v) cat-fixnum]
      [(flonum? v) cat-flonum]
      [(fxvector? v) cat-fxvector]
      [(shared-flvector? v) cat-shared-fl]
      [(shared-fxvector? v) cat-shared-fx]
      [(vector? v) (if (flonum-vector? v) cat-flvector cat-vector)]
      [else cat-other]))
  ;; The category's word: the value of a fixnum or flonum, the length of a
  ;; vector, 0 otherwise.
  (define (category-word c v)
    (cond
      [(fx= c cat-fixnum) v]
      [(fx= c cat-flonum) (flonum->bits v)]
      [(fx= c cat-fxvector) (fxvector-length v)]
      [(or (fx= c cat-shared-fl) (fx= c cat-shared-fx)) (shared-vector-length v)]
      [(or (fx= c cat-flvector) (fx= c cat-vector)) (vector-length v)]
      [else 0]))
  (define (vector-like? c) (memv c (list cat-flvector cat-fxvector cat-shared-fl cat-shared-fx cat-vector)))
  (define (shared? c) (or (fx= c cat-shared-fl) (fx= c cat-shared-fx)))
  (define (category-name c)
    (case c
      [(1) "a fixnum"] [(2) "a flonum"] [(3) "a vector of flonums"] [(4) "an fxvector"]
      [(5) "a shared flvector"] [(6) "a shared fxvector"] [(7) "a vector"] [else "another value"]))
  (define op-names '#("a procedure" "sum" "prod" "min" "max"))

  ;; root #f: allreduce.  Returns the result (at every rank, or at root).
  (define (reduce who comm root op v)
    (whole comm (lambda () (reduce-agreed who comm root op v))))

  (define (reduce-agreed who comm root op v)
    (let* ([mop (typed-op op)] [c (category v)] [packed #f] [cnt (rmpi-comm-cnt comm)]
           [t (agree who comm (if root id-reduce id-allreduce)
                (lambda ()
                  (when root (check-rank who comm root))
                  (unless (or mop (procedure? op))
                    (assertion-violation who "expected a procedure or one of sum, prod, min, max" op))
                  (when (and (shared? c) (not mop))
                    (assertion-violation who "a shared vector is reduced only with +, *, min or max" v))
                  ;; the general path's message, packed now: a value that
                  ;; cannot travel is this rank's bad argument
                  (unless mop (set! packed (pack who v)))
                  (when (and mop (fx>= c cat-vector)) (set! packed (pack who v)))
                  (list (or root -1) (case mop [(sum) 1] [(prod) 2] [(min) 3] [(max) 4] [else 0]) c (category-word c v))))]
           [cats (map (lambda (r) (word t r 2)) (iota cnt))]
           [same-length? (lambda () (for-all (lambda (r) (eqv? (word t r 3) (word t 0 3))) (iota cnt)))]
           [here? (or (not root) (fx= root (rmpi-comm-id comm)))])
      (check-same who t 0 "the root" number->string)
      (check-same who t 1 "the operation" (lambda (x) (vector-ref op-names x)))
      (cond
        [(exists shared? cats)
         (check-same who t 2 "the operand" category-name)
         (check-same who t 3 "the shared vector's length" number->string)
         (reduce-in-place who comm root mop v)]
        [(and mop (for-all (lambda (c) (or (fx= c cat-fixnum) (fx= c cat-flonum))) cats))
         (if here?
             (let ([f (scheme-op mop)]
                   [x (lambda (r) (if (fx= (word t r 2) cat-fixnum) (word t r 3) (bits->flonum (word t r 3))))])
               (let loop ([r 1] [acc (x 0)]) (if (fx= r cnt) acc (loop (fx+ r 1) (f acc (x r))))))
             (void))]
        [(and mop (exists vector-like? cats))
         (unless (and (for-all vector-like? cats) (same-length?))
           (let ([r (find (lambda (r) (not (and (vector-like? (word t r 2)) (eqv? (word t r 3) (word t 0 3))))) (iota cnt))]
                 [show (lambda (r) (if (vector-like? (word t r 2))
                                       (format "~a of ~a elements" (category-name (word t r 2)) (word t r 3))
                                       (category-name (word t r 2))))])
             (error who (format "the ranks' operands are not vectors of one length: rank 0 gives ~a, rank ~a ~a"
                                (show 0) (or r 0) (show (or r 0))))))
         (if (and (or (fx= c cat-flvector) (fx= c cat-fxvector)) (for-all (lambda (x) (fx= x c)) cats))
             (typed-reduce who comm root mop v here?)
             (general-reduce who comm root (elementwise (scheme-op mop)) v packed))]
        [else (general-reduce who comm root (if mop (scheme-op mop) op) v packed)])))

  (define (scheme-op mop) (case mop [(sum) +] [(prod) *] [(min) min] [else max]))

  ;; Flonum vectors or fxvectors, of one kind and length at every rank:
  ;; one MPI_Iallreduce (also for a rooted reduce: every rank learns
  ;; whether an integer result left the fixnums, and then all take the
  ;; general path together).
  (define (typed-reduce who comm root mop v here?)
    (let-values ([(kind n p) (typed-buffer v)])
      (let ([out (malloc (fx* 8 (fxmax n 1)))])
        (run-request! who (list p)
          (lambda (req) (mpi-iallreduce p out n (datatype kind) (mpi-op mop) (rmpi-comm-handle comm) req)))
        (if (or (eq? kind 'double-vector)
                (let loop ([i 0]) (or (fx= i n) (and (fixnum? (foreign-ref 'integer-64 out (fx* 8 i))) (loop (fx+ i 1))))))
            (let ([r (if here? (typed-result who kind n out) (void))])
              (free out)
              r)
            (begin (free out) (general-reduce who comm root (elementwise (scheme-op mop)) v #f))))))

  ;; f applied element by element to two vectors or fxvectors (of one
  ;; length: the agreement saw to it): a vector.
  (define (elementwise f)
    (lambda (a b)
      (vector-map f
        (if (fxvector? a) (list->vector (fxvector->list a)) a)
        (if (fxvector? b) (list->vector (fxvector->list b)) b))))

  ;; A shared flvector or fxvector: MPI reduces in its own memory
  ;; (MPI_IN_PLACE; at a non-root rank of a reduce, the vector is only read).
  (define (reduce-in-place who comm root mop v)
    (let ([a (shared-vector-address v)] [n (shared-vector-length v)]
          [type (if (shared-flvector? v) (mpi-double) (mpi-int64))] [h (rmpi-comm-handle comm)])
      (run-request! who '()
        (lambda (req)
          (cond
            [(not root) (mpi-iallreduce mpi-in-place a n type (mpi-op mop) h req)]
            [(fx= root (rmpi-comm-id comm)) (mpi-ireduce mpi-in-place a n type (mpi-op mop) root h req)]
            [else (mpi-ireduce a 0 n type (mpi-op mop) root h req)])))
      (if (or (not root) (fx= root (rmpi-comm-id comm))) v (void))))

  ;; Any value and procedure: gathered to the root (rank 0 for allreduce),
  ;; folded in rank order, broadcast for allreduce (the fold runs in the
  ;; broadcast's agreement, so an error it raises at the root raises at
  ;; every rank).  packed: v packed, or #f (then packed here).
  (define (general-reduce who comm root op v packed)
    (let* ([me (rmpi-comm-id comm)] [r (or root 0)]
           [fold (lambda ()
                   (let loop ([i 0] [acc #f])
                     (if (fx= i (rmpi-comm-cnt comm))
                         acc
                         (let ([x (if (fx= i me) v (unpack (recv-internal comm i)))])
                           (loop (fx+ i 1) (if (fx= i 0) x (op acc x)))))))])
      (unless (fx= me r)
        (send-message who comm r internal-tag (or packed (pack who v))))
      (cond
        [root (if (fx= me r) (fold) (void))]
        [else (broadcast who comm 0 fold #f)])))

  (define (rmpi-reduce comm root op v)
    (check-comm 'rmpi-reduce comm)
    (reduce 'rmpi-reduce comm root op v))

  (define (rmpi-allreduce comm op v)
    (check-comm 'rmpi-allreduce comm)
    (reduce 'rmpi-allreduce comm #f op v)))
