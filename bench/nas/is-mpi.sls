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

  ;; Unchecked in the loops over keys: every index below is inside its
  ;; vector (a key is below Bmax, a bucket below 2^10, a received key
  ;; inside my run).
  (define-syntax u32 (syntax-rules () [(_ bv i) (#3%bytevector-u32-native-ref bv (#3%fx* 4 i))]))
  (define-syntax u32-set! (syntax-rules () [(_ bv i x) (#3%bytevector-u32-native-set! bv (#3%fx* 4 i) x)]))
  (define-syntax fx@ (syntax-rules () [(_ v i) (#3%fxvector-ref v i)]))
  (define-syntax fx! (syntax-rules () [(_ v i x) (#3%fxvector-set! v i x)]))

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
           [sorted (make-bytevector (bytevector-length mine))] ; my keys in bucket order, each ranking
           [passed 0]
           [last #f])               ; -> (received lo base ranks) of the last ranking
      (define (rank! it)
        ;; member 0's block holds keys 0 .. 2*iterations (is-run checks)
        (when (fx= me 0)
          (u32-set! mine it it)
          (u32-set! mine (fx+ it iterations) (fx- max-key it)))
        (let ([mine-sizes (make-fxvector buckets 0)])
          (do ([i 0 (fx+ i 1)]) ((fx= i m))
            (let ([b (#3%fxsrl (u32 mine i) shift)])
              (fx! mine-sizes b (#3%fx+ (fx@ mine-sizes b) 1))))
          (let* ([sizes (CGallreduce cg + mine-sizes)]
                 [first (split-buckets sizes n np)]
                 [next (make-fxvector buckets)]      ; where a key of bucket b goes in sorted
                 [out (make-vector np #f)])
            ;; after the scatter below, next[b] is where bucket b+1 starts;
            ;; my own stretch stays in sorted (out[me] is #f)
            (define (stretch r)
              (let ([at (lambda (b) (if (fx= b 0) 0 (fx@ next (fx- b 1))))])
                (values (at (vector-ref first r)) (at (vector-ref first (fx+ r 1))))))
            ;; my keys in bucket order (so each owner's keys are one stretch)
            (do ([b 0 (fx+ b 1)] [at 0 (fx+ at (fx@ mine-sizes b))]) ((fx= b buckets))
              (fx! next b at))
            (do ([i 0 (fx+ i 1)]) ((fx= i m))
              (let* ([k (u32 mine i)] [b (#3%fxsrl k shift)] [j (fx@ next b)])
                (u32-set! sorted j k)
                (fx! next b (#3%fx+ j 1))))
            (do ([r 0 (fx+ r 1)]) ((fx= r np))
              (unless (fx= r me)
                (let-values ([(start end) (stretch r)])
                  (vector-set! out r (let ([bv (make-bytevector (fx* 4 (fx- end start)))])
                                       (bytevector-copy! sorted (fx* 4 start) bv 0 (fx* 4 (fx- end start)))
                                       bv)))))
            (let* ([received (CGalltoall cg out)]
                   [lo (fxsll (vector-ref first me) shift)]
                   [hi (fxsll (vector-ref first (fx+ me 1)) shift)]
                   [base (do ([b 0 (fx+ b 1)] [s 0 (fx+ s (fxvector-ref sizes b))])
                             ((fx= b (vector-ref first me)) s))]
                   [ranks (make-fxvector (fx- hi lo) 0)])
              (do ([s 0 (fx+ s 1)]) ((fx= s np))
                (let-values ([(bv start end) (if (fx= s me)
                                                 (let-values ([(start end) (stretch me)]) (values sorted start end))
                                                 (let ([bv (vector-ref received s)])
                                                   (values bv 0 (fxquotient (bytevector-length bv) 4))))])
                  (do ([i start (fx+ i 1)]) ((fx= i end))
                    (let ([v (#3%fx- (u32 bv i) lo)])
                      (fx! ranks v (#3%fx+ (fx@ ranks v) 1))))))
              (let loop ([v 0] [acc base])   ; the running count, from base
                (unless (fx= v (fx- hi lo))
                  (let ([acc (#3%fx+ acc (fx@ ranks v))])
                    (fx! ranks v acc)
                    (loop (fx+ v 1) acc))))
              (do ([t 0 (fx+ t 1)]) ((fx= t 5))
                (let ([k (fxvector-ref test-keys t)])
                  (when (and (fx> k 0) (fx<= k (fx- n 1)) (fx<= lo (fx- k 1)) (fx< (fx- k 1) hi)
                             (fx= (fxvector-ref ranks (fx- (fx- k 1) lo))
                                  (expected-rank class t (vector-ref test-rank t) it)))
                    (set! passed (fx+ passed 1)))))
              ;; full-verify's arguments, if this ranking is the last
              (set! last (lambda ()
                           (list (let-values ([(start end) (stretch me)])
                                   (let ([bv (make-bytevector (fx* 4 (fx- end start)))])
                                     (bytevector-copy! sorted (fx* 4 start) bv 0 (fx* 4 (fx- end start)))
                                     (vector-set! received me bv)
                                     received))
                                 lo base ranks)))))))
      (CGBarrier cg)
      (rank! 1)                         ; untimed, as in the reference
      (set! passed 0)
      (let-values ([(v s) (nas-seconds
                            (lambda ()
                              (do ([it 1 (fx+ it 1)]) ((fx> it iterations)) (rank! it))
                              (CGBarrier cg)))])
        (let-values ([(bad count) (apply full-verify (last))])
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
