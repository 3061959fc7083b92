#!chezscheme
;;; The reductions of (spindle mpi), after Racket's rmpi: rmpi-reduce and
;;; rmpi-allreduce.  An operation MPI has (sum, prod, min, max) on typed
;;; data is one MPI_Iallreduce (a shared flvector or fxvector: reduced in
;;; its own memory); any other (any procedure, or operands whose kinds
;;; differ between ranks) is gathered to the root over point-to-point
;;; messages on the internal tag, folded in rank order there and
;;; broadcast.  A reduction of several MPI operations runs whole in a
;;; helper thread (mpi-collectives), so that a broken caller leaves its
;;; rank in step.
(library (spindle private places mpi-reduce)
  (export rmpi-reduce rmpi-allreduce)
  (import (chezscheme)
          (spindle private os mpi)
          (only (spindle private os memory) malloc free)
          (spindle private places mpi-data)
          (spindle private places mpi-world)
          (only (spindle private places mpi-engine) run-request! send-message recv-internal)
          (only (spindle private places mpi-collectives) whole idle! broadcast-message)
          (only (spindle private places shared-vector) shared-vector-address shared-vector-length
                shared-flvector? shared-fxvector?))

  ;; root #f: allreduce.  Returns the result (at every rank, or at root).
  (define (reduce who comm root op v)
    (let ([mop (typed-op op)])
      (cond
        [(and mop (or (shared-flvector? v) (shared-fxvector? v))) (idle! comm) (reduce-in-place who comm root mop v)]
        ;; (a sum, min or max is one request, in the caller, unless the
        ;; kinds disagree: then one broken as it learns that is not
        ;; finished for it)
        [(eq? mop 'prod) (whole comm (lambda () (typed-reduce who comm root mop op v)))]
        [mop (idle! comm) (typed-reduce who comm root mop op v)]
        [else (whole comm (lambda () (general-reduce who comm root op v)))])))

  ;; An operation MPI has (sum, prod, min, max).  The operands' kinds may
  ;; differ between ranks: a rank whose share of the work was empty sums to
  ;; exact 0 where the others have flonums, or keeps a vector of exact 0s.
  ;; So the one MPI_Iallreduce (also for a rooted reduce: every rank must
  ;; learn the outcome) carries, after the operand's elements, two slots
  ;; that tell every rank whether all ranks' operands have its kind (int64,
  ;; double, or none: an operand MPI cannot reduce joins with zeros), and
  ;; an integer result must fit in fixnums.  If not, every rank saw it, and
  ;; they all take the general path together, a vector reduced element by
  ;; element.  (A product cannot carry the slots: its kinds are agreed by
  ;; an MPI_Iallreduce of their own first.)
  (define (typed-reduce who comm root mop op v)
    (let*-values ([(kind n p) (typed-buffer v)]
                  [(n) (cond [kind n] [(vector? v) (vector-length v)] [else 1])]
                  [(slots) (if (eq? mop 'prod) 0 2)]
                  [(p) (if kind p (let ([p (malloc (fx* 8 (fx+ n 2)))])
                                    (do ([i 0 (fx+ i 1)]) ((fx= i n) p) (foreign-set! 'integer-64 p (fx* 8 i) 0))))]
                  [(mine) (case kind [(#f) 'none] [(double double-vector) 'double] [else 'int])]
                  [(cnt) (rmpi-comm-cnt comm)])
      (unless (fx= slots 0)
        (foreign-set! 'integer-64 p (fx* 8 n) (kind-slot mop 0 mine))
        (foreign-set! 'integer-64 p (fx* 8 (fx+ n 1)) (kind-slot mop 1 mine)))
      (if (and (fx= slots 0) (not (kinds-agree? who comm mine)))
          (begin (free p) (reduce-generally who comm root mop v))
          (let ([out (malloc (fx* 8 (fx+ n slots)))])
            (run-request! who (list p)
              (lambda (req)
                (mpi-iallreduce p out (fx+ n slots) (if kind (datatype kind) (mpi-int64)) (mpi-op mop)
                  (rmpi-comm-handle comm) req)))
            (if (and kind
                     (or (fx= slots 0)
                         (eqv? (foreign-ref 'integer-64 out (fx* 8 (if (eq? mine 'int) n (fx+ n 1))))
                               (kind-slot-result mop cnt)))
                     (or (eq? mine 'double)
                         (let loop ([i 0])
                           (or (fx= i n) (and (fixnum? (foreign-ref 'integer-64 out (fx* 8 i))) (loop (fx+ i 1)))))))
                (let ([r (if (or (not root) (fx= root (rmpi-comm-id comm))) (typed-result who kind n out) (void))])
                  (free out)
                  r)
                (begin (free out) (reduce-generally who comm root mop v)))))))

  (define (reduce-generally who comm root mop v)
    (general-reduce who comm root
      (let ([f (case mop [(sum) +] [(prod) *] [(min) min] [else max])])
        (if (or (vector? v) (fxvector? v)) (elementwise who f) f))
      v))

  ;; The kind slots, as 64-bit patterns (slot 0 the int ranks', slot 1 the
  ;; double ranks' test), chosen so that MPI's operation gives the same bits
  ;; whether it reads them as int64 or as doubles, in any order and mix:
  ;; sum adds counts of 0 and 1 (as doubles, denormals: their sum is
  ;; exact); min and max pick one of the positive doubles 0.5, 1.0, 2.0
  ;; and 4.0, whose bits order as their values do.  A rank's slot comes out
  ;; as kind-slot-result exactly when every rank has its kind.
  (define (kind-slot mop slot mine)
    (define (bits x) (bytevector-s64-native-ref (let ([b (make-bytevector 8)]) (bytevector-ieee-double-native-set! b 0 x) b) 0))
    (case mop
      [(sum) (if (eq? mine (if (fx= slot 0) 'int 'double)) 1 0)]
      ;; min: 2.0 from the kind tested, 1.0 from the other, 0.5 from none
      [(min) (bits (cond [(eq? mine 'none) 0.5] [(eq? mine (if (fx= slot 0) 'int 'double)) 2.0] [else 1.0]))]
      ;; max: 1.0 from the kind tested, 2.0 from the other, 4.0 from none
      [else (bits (cond [(eq? mine 'none) 4.0] [(eq? mine (if (fx= slot 0) 'int 'double)) 1.0] [else 2.0]))]))
  (define (kind-slot-result mop cnt)
    (case mop [(sum) cnt] [(min) (kind-slot 'min 0 'int)] [else (kind-slot 'max 0 'int)]))

  ;; #t if every rank's operand has kind mine (int or double; none never
  ;; agrees): one MPI_Iallreduce summing each kind's count.
  (define (kinds-agree? who comm mine)
    (let ([p (malloc 16)] [out (malloc 16)])
      (foreign-set! 'integer-64 p 0 (if (eq? mine 'int) 1 0))
      (foreign-set! 'integer-64 p 8 (if (eq? mine 'double) 1 0))
      (run-request! who (list p)
        (lambda (req) (mpi-iallreduce p out 2 (mpi-int64) (mpi-op 'sum) (rmpi-comm-handle comm) req)))
      (let ([r (and (not (eq? mine 'none))
                    (eqv? (rmpi-comm-cnt comm) (foreign-ref 'integer-64 out (if (eq? mine 'int) 0 8))))])
        (free out)
        r)))

  ;; f applied element by element to two vectors or fxvectors of one length:
  ;; a vector.
  (define (elementwise who f)
    (lambda (a b)
      (let ([a (if (fxvector? a) (list->vector (fxvector->list a)) a)]
            [b (if (fxvector? b) (list->vector (fxvector->list b)) b)])
        (unless (and (vector? a) (vector? b) (fx= (vector-length a) (vector-length b)))
          (error who "the ranks' operands are not vectors of one length" a b))
        (vector-map f a b))))

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
  ;; folded in rank order, broadcast for allreduce.
  (define (general-reduce who comm root op v)
    (unless (procedure? op) (assertion-violation who "expected a procedure or one of sum, prod, min, max" op))
    (let* ([me (rmpi-comm-id comm)] [r (or root 0)])
      (let ([result
             (if (fx= me r)
                 (let loop ([i 0] [acc #f])
                   (if (fx= i (rmpi-comm-cnt comm))
                       acc
                       (let ([x (if (fx= i me) v (recv-internal comm i))])
                         (loop (fx+ i 1) (if (fx= i 0) x (op acc x))))))
                 (begin (send-message who comm r internal-tag v) (void)))])
        (if root result (broadcast-message comm r result)))))

  (define (rmpi-reduce comm root op v)
    (check-comm 'rmpi-reduce comm) (check-rank 'rmpi-reduce comm root)
    (reduce 'rmpi-reduce comm root op v))

  (define (rmpi-allreduce comm op v)
    (check-comm 'rmpi-allreduce comm)
    (reduce 'rmpi-allreduce comm #f op v)))
