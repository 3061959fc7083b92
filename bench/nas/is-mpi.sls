#!chezscheme
;;; IS in its MPI decomposition (the mpi mode of (nas is)), over fork-join's
;;; CG operations only: no memory is shared, so it runs over MPI ranks and
;;; over places alike.
;;;
;;; Member m generates block m of the keys.  One ranking:
;;;   1. count my keys per bucket (2^10 buckets of equal key ranges); an
;;;      element-wise allreduce gives every member the global bucket sizes;
;;;   2. split the buckets into np runs of consecutive buckets holding about
;;;      N/np keys each (every member computes the same split from the same
;;;      sizes): member m owns the key values of run m;
;;;   3. all-to-all: each key goes to the member owning its value;
;;;   4. count the keys received per key value and sum them up: a key's rank
;;;      is the keys of lower runs (the global bucket sizes before my run)
;;;      plus its running count.
;;; The test keys' values (at fixed indices, which the iterations never
;;; change) are found once by an allreduce; each member checks the ranks of
;;; those in its run.  Full verification (untimed): each member places the
;;; keys it received last by their ranks into its stretch of the sorted
;;; order and counts what is out of order there.
(library (nas is-mpi)
  (export is-mpi-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (nas common) (nas is-keys))

  (define bucket-log2 10)
  (define buckets (fxsll 1 bucket-log2))

  ;; -> (seconds passed out-of-order keys-ranked), member 0's.
  (define (is-mpi-run members class)
    (vector-ref (fork-join members cg ([class class]) (is-member cg class)) 0))

  ;; first: vector of np+1 bucket indices; member r owns [first[r], first[r+1]):
  ;; first[r] is the first bucket b whose keys before it number >= r N / np.
  (define (split-buckets sizes n np)
    (let ([first (make-vector (fx+ np 1) buckets)])
      (vector-set! first 0 0)
      (let loop ([b 0] [before 0] [r 1])
        (cond
          [(fx= r np) first]
          [(fx>= (fx* before np) (fx* r n)) (vector-set! first r b) (loop b before (fx+ r 1))]
          [(fx= b buckets) (vector-set! first r b) (loop b before (fx+ r 1))]
          [else (loop (fx+ b 1) (fx+ before (fxvector-ref sizes b)) r)]))))

  (define (u32 bv i) (bytevector-u32-native-ref bv (fx* 4 i)))
  (define (u32-set! bv i x) (bytevector-u32-native-set! bv (fx* 4 i) x))

  (define (is-member cg class)
    (let* ([me (CG-id cg)] [np (CG-np cg)]
           [params (class-parameters class)]
           [n (fxsll 1 (car params))] [max-key (fxsll 1 (cadr params))]
           [shift (fx- (cadr params) bucket-log2)]
           [test-index (caddr params)] [test-rank (cadddr params)]
           [mine (block-keys n max-key np me)]
           [m (fxquotient (bytevector-length mine) 4)]
           [test-keys (let-values ([(start end) (block n np me)])
                        (let ([v (make-fxvector 5 0)])
                          (do ([t 0 (fx+ t 1)]) ((fx= t 5))
                            (let ([i (vector-ref test-index t)])
                              (when (and (fx<= start i) (fx< i end)) (fxvector-set! v t (u32 mine (fx- i start))))))
                          (CGallreduce cg + v)))]
           [passed 0]
           [last #f])               ; (received lo base ranks) of the last ranking
      (define (rank! it)
        ;; member 0's block holds keys 0 .. 2*iterations (is-run checks)
        (when (fx= me 0)
          (u32-set! mine it it)
          (u32-set! mine (fx+ it iterations) (fx- max-key it)))
        (let ([mine-sizes (make-fxvector buckets 0)])
          (do ([i 0 (fx+ i 1)]) ((fx= i m))
            (let ([b (fxsrl (u32 mine i) shift)])
              (fxvector-set! mine-sizes b (fx+ (fxvector-ref mine-sizes b) 1))))
          (let* ([sizes (CGallreduce cg + mine-sizes)]
                 [first (split-buckets sizes n np)]
                 [owner (make-fxvector buckets)]
                 [fill (make-fxvector np 0)]
                 [out (make-vector np)])
            ;; my keys, by owner of their bucket
            (do ([r 0 (fx+ r 1)]) ((fx= r np))
              (let ([count (do ([b (vector-ref first r) (fx+ b 1)]
                                [c 0 (fx+ c (fxvector-ref mine-sizes b))])
                               ((fx= b (vector-ref first (fx+ r 1))) c)
                             (fxvector-set! owner b r))])
                (vector-set! out r (make-bytevector (fx* 4 count)))))
            (do ([i 0 (fx+ i 1)]) ((fx= i m))
              (let* ([k (u32 mine i)] [r (fxvector-ref owner (fxsrl k shift))] [j (fxvector-ref fill r)])
                (u32-set! (vector-ref out r) j k)
                (fxvector-set! fill r (fx+ j 1))))
            (let* ([received (CGalltoall cg out)]
                   [lo (fxsll (vector-ref first me) shift)]
                   [hi (fxsll (vector-ref first (fx+ me 1)) shift)]
                   [base (do ([b 0 (fx+ b 1)] [s 0 (fx+ s (fxvector-ref sizes b))])
                             ((fx= b (vector-ref first me)) s))]
                   [ranks (make-fxvector (fx- hi lo) 0)])
              (vector-for-each
                (lambda (bv)
                  (do ([i 0 (fx+ i 1)]) ((fx= i (fxquotient (bytevector-length bv) 4)))
                    (let ([v (fx- (u32 bv i) lo)])
                      (fxvector-set! ranks v (fx+ (fxvector-ref ranks v) 1)))))
                received)
              (let loop ([v 0] [acc base])   ; the running count, from base
                (unless (fx= v (fx- hi lo))
                  (let ([acc (fx+ acc (fxvector-ref ranks v))])
                    (fxvector-set! ranks v acc)
                    (loop (fx+ v 1) acc))))
              (do ([t 0 (fx+ t 1)]) ((fx= t 5))
                (let ([k (fxvector-ref test-keys t)])
                  (when (and (fx> k 0) (fx<= k (fx- n 1)) (fx<= lo (fx- k 1)) (fx< (fx- k 1) hi)
                             (fx= (fxvector-ref ranks (fx- (fx- k 1) lo))
                                  (expected-rank class t (vector-ref test-rank t) it)))
                    (set! passed (fx+ passed 1)))))
              (set! last (list received lo base ranks))))))
      (CGBarrier cg)
      (rank! 1)                         ; untimed, as in the reference
      (set! passed 0)
      (let-values ([(v s) (nas-seconds
                            (lambda ()
                              (do ([it 1 (fx+ it 1)]) ((fx> it iterations)) (rank! it))
                              (CGBarrier cg)))])
        (let-values ([(bad count) (apply full-verify last)])
          (let ([passed (CGallreduce cg + passed)] [bad (CGallreduce cg + bad)] [count (CGallreduce cg + count)])
            (and (fx= me 0) (list s passed bad count)))))))

  ;; -> (values keys out of order, keys placed) in my stretch of the sorted
  ;; order.  A rank outside the stretch counts as out of order.
  (define (full-verify received lo base ranks)
    (let* ([count (fold-left (lambda (acc bv) (fx+ acc (fxquotient (bytevector-length bv) 4))) 0 (vector->list received))]
           [sorted (make-fxvector count -1)]
           [bad 0])
      (vector-for-each
        (lambda (bv)
          (do ([i 0 (fx+ i 1)]) ((fx= i (fxquotient (bytevector-length bv) 4)))
            (let* ([k (u32 bv i)] [r (fx- (fxvector-ref ranks (fx- k lo)) 1)] [p (fx- r base)])
              (fxvector-set! ranks (fx- k lo) r)
              (if (and (fx<= 0 p) (fx< p count))
                  (fxvector-set! sorted p k)
                  (set! bad (fx+ bad 1))))))
        received)
      (do ([i 1 (fx+ i 1)]
           [bad bad (if (fx> (fxvector-ref sorted (fx- i 1)) (fxvector-ref sorted i)) (fx+ bad 1) bad)])
          ((fx>= i count) (values bad count)))))

  (lift-places (nas is-mpi)))
