#!chezscheme
;;; IS in its MPI decomposition (the mpi mode of (nas is)), over fork-join's
;;; CG operations only: no memory is shared, so it runs over MPI ranks and
;;; over places alike.
;;;
;;; Member m generates block m of the keys.  The key values are split into
;;; np runs of consecutive buckets (2^10 buckets of equal key ranges), each
;;; holding about N/np keys; member m owns the values of run m.  One ranking:
;;;   1. scatter my keys by owner, so that each owner's keys are one
;;;      stretch (in their order in my block);
;;;   2. one element-wise allreduce of a table: the np x np counts (row m:
;;;      what m sends each member), and the bucket sizes of each member's
;;;      run in its previous ranking.  Every member learns what it
;;;      receives from whom, the keys of lower runs (base), and the global
;;;      bucket sizes, from which it computes the next ranking's split (the
;;;      same at every member);
;;;   3. one all-to-all (CGalltoallv: typed blocks, in place over MPI
;;;      ranks) sends each stretch to its owner;
;;;   4. count the keys received per key value and sum them up: a key's rank
;;;      is base plus its running count.
;;; Two passes over the keys (the scatter, the count): the split comes from
;;; the bucket sizes the previous ranking counted, where NPB's MPI IS first
;;; counts every member's keys per bucket (a third pass) to split by the
;;; current sizes.  Any split gives the right ranks; this one lags the keys
;;; by a ranking (the first split, before the untimed ranking, from a count
;;; of the initial keys).  One member alone ranks its keys directly (step 4
;;; over its own keys: no buckets, no all-to-all).  The buffers (the
;;; scatter's, the received keys', the counts) are made once per run: a
;;; ranking allocates only the allreduce's table and the split.  The test
;;; keys' values (at fixed indices, which the iterations never change) are
;;; found once by an allreduce; each member checks the ranks of those in its
;;; run.  Full verification (untimed): each member places the keys it
;;; received last by their ranks into its stretch of the sorted order and
;;; counts what is out of order there.
(library (nas is-mpi)
  (export is-mpi-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (only (spindle unsafe) unsafe-shared-vector-address unsafe-shared-vector->bytevector!)
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
  ;; inside my run, a scattered key inside its owner's stretch).  Keys and counts are
  ;; 32 bits: in bytevectors (u32, u32-set!) or in the memory of shared
  ;; bytes (at, at-set!: an address, kept valid by holding the shared
  ;; bytes in a variable of the member).
  (define-syntax u32 (syntax-rules () [(_ bv i) (#3%bytevector-u32-native-ref bv (#3%fx* 4 i))]))
  (define-syntax u32-set! (syntax-rules () [(_ bv i x) (#3%bytevector-u32-native-set! bv (#3%fx* 4 i) x)]))
  (define-syntax at (syntax-rules () [(_ a i) (#3%foreign-ref 'unsigned-32 a (#3%fx* 4 i))]))
  (define-syntax at-set! (syntax-rules () [(_ a i x) (#3%foreign-set! 'unsigned-32 a (#3%fx* 4 i) x)]))
  (define-syntax fx@ (syntax-rules () [(_ v i) (#3%fxvector-ref v i)]))
  (define-syntax fx! (syntax-rules () [(_ v i x) (#3%fxvector-set! v i x)]))

  ;; The count of each key value v of [lo, hi) among n keys read by (key
  ;; i), in tally[v - lo] (8 bits: a key value occurs at most 111 times in
  ;; any class, as (nas is) measured, and the smaller table stays in a
  ;; core's cache); then their running sum from base, 32 bits in counts:
  ;; the ranks (an inclusive count: the last key of value v has rank
  ;; counts[v - lo]).
  (define-syntax rank-keys!
    (syntax-rules ()
      [(_ counts tally n key lo hi base)
       (let* ([range (fx- hi lo)] [words (fxsrl range 3)])
         (do ([w 0 (fx+ w 1)]) ((fx= w words)) (#3%bytevector-u64-native-set! tally (#3%fx* 8 w) 0))
         (do ([v (fx* 8 words) (fx+ v 1)]) ((fx= v range)) (#3%bytevector-u8-set! tally v 0))
         (do ([i 0 (fx+ i 1)]) ((fx= i n))
           (let ([v (#3%fx- (key i) lo)])
             (#3%bytevector-u8-set! tally v (#3%fx+ (#3%bytevector-u8-ref tally v) 1))))
         (let loop ([v 0] [acc base])
           (unless (fx= v range)
             (let ([acc (#3%fx+ acc (#3%bytevector-u8-ref tally v))])
               (u32-set! counts v acc)
               (loop (fx+ v 1) acc)))))]))

  ;; Key i of mine (m keys) to sorted (at address a) at next[r] for its
  ;; owner r, next[r] advancing.
  (define (scatter! mine m owner next shift a)
    (do ([i 0 (fx+ i 1)]) ((fx= i m))
      (let* ([k (u32 mine i)] [r (fx@ owner (#3%fxsrl k shift))] [j (fx@ next r)])
        (at-set! a j k)
        (fx! next r (#3%fx+ j 1)))))

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
           [counts (make-bytevector (fx* 4 max-key))]   ; the ranks of my run's values
           [tally (make-bytevector max-key)]            ; their counts
           ;; the allreduce's table: np x np key counts (row me: what I send
           ;; each member), then a bucket size per bucket (mine: my run's)
           [sizes-at (fx* np np)]
           [table (make-fxvector (fx+ sizes-at buckets) 0)]
           [owner (make-fxvector buckets)]              ; the member whose run holds bucket b
           [next (make-fxvector np)]                    ; where a key for member r goes in sorted
           ;; with several members: my keys by owner (room for all of them
           ;; in each owner's stretch), and my run's keys as received (room
           ;; for 1/8 more than N/np, grown if needed)
           [sorted (and (fx> np 1) (make-shared-bytes (fx* 4 (fx* np m))))]
           [sorted-at (and sorted (unsafe-shared-vector-address sorted))]
           [received (and (fx> np 1) (make-shared-bytes (fx* 4 (fx+ (fxquotient n np) (fxquotient n (fx* 8 np))))))]
           [send-count (make-fxvector np)] [send-displ (make-fxvector np)]
           [recv-count (make-fxvector np)] [recv-displ (make-fxvector np)]
           [passed 0]
           [last #f])               ; -> (keys lo base) of the last ranking
      (define (check-tests! it lo hi)
        (do ([t 0 (fx+ t 1)]) ((fx= t 5))
          (let ([k (fxvector-ref test-keys t)])
            (when (and (fx> k 0) (fx<= k (fx- n 1)) (fx<= lo (fx- k 1)) (fx< (fx- k 1) hi)
                       (fx= (u32 counts (fx- (fx- k 1) lo))
                            (expected-rank class t (vector-ref test-rank t) it)))
              (set! passed (fx+ passed 1))))))
      ;; one member: rank my keys (all of them) directly
      (define (rank-alone! it)
        (rank-keys! counts tally m (lambda (i) (u32 mine i)) 0 max-key 0)
        (check-tests! it 0 max-key)
        (set! last (lambda () (list mine 0 0))))
      ;; the split of the buckets among the members, for the next ranking
      (define first #f)
      (define (split! all)
        (let ([sizes (make-fxvector buckets)])
          (do ([b 0 (fx+ b 1)]) ((fx= b buckets)) (fx! sizes b (fx@ all (fx+ sizes-at b))))
          (set! first (split-buckets sizes n np))))
      ;; the first split: my keys' bucket sizes, summed over the members
      (define (first-split!)
        (do ([i 0 (fx+ i 1)]) ((fx= i m))
          (let ([b (#3%fx+ sizes-at (#3%fxsrl (u32 mine i) shift))])
            (fx! table b (#3%fx+ (fx@ table b) 1))))
        (split! (CGallreduce cg + table)))
      (define (rank-buckets! it)
        (let* ([b0 (vector-ref first me)] [b1 (vector-ref first (fx+ me 1))]
               [lo (fxsll b0 shift)] [hi (fxsll b1 shift)])
          (do ([r 0 (fx+ r 1)]) ((fx= r np))
            (do ([b (vector-ref first r) (fx+ b 1)]) ((fx= b (vector-ref first (fx+ r 1)))) (fx! owner b r))
            (fx! next r (fx* r m)))
          (scatter! mine m owner next shift sorted-at)
          ;; to r: my keys of run r, from r m in sorted
          (do ([r 0 (fx+ r 1)]) ((fx= r np))
            (let ([c (fx- (fx@ next r) (fx* r m))])
              (fx! table (fx+ (fx* me np) r) c)
              (fx! send-displ r (fx* 4 (fx* r m)))
              (fx! send-count r (fx* 4 c))))
          (let* ([all (CGallreduce cg + table)]
                 ;; keys of lower runs, and from s: its keys of my run
                 [base (do ([s 0 (fx+ s 1)]
                            [acc 0 (do ([r 0 (fx+ r 1)] [acc acc (fx+ acc (fx@ all (fx+ (fx* s np) r)))]) ((fx= r me) acc))])
                           ((fx= s np) acc))]
                 [total (let loop ([s 0] [at 0])
                          (if (fx= s np)
                              (fxquotient at 4)
                              (let ([c (fx* 4 (fx@ all (fx+ (fx* s np) me)))])
                                (fx! recv-displ s at)
                                (fx! recv-count s c)
                                (loop (fx+ s 1) (fx+ at c)))))])
            (when (fx> (fx* 4 total) (shared-bytes-length received))
              (set! received (make-shared-bytes (fx* 4 (fx+ total (fxquotient total 8))))))
            (CGalltoallv cg sorted send-count send-displ received recv-count recv-displ)
            (let ([a (unsafe-shared-vector-address received)])
              (rank-keys! counts tally total (lambda (i) (at a i)) lo hi base))
            (check-tests! it lo hi)
            ;; my run's bucket sizes, for the next allreduce and so the
            ;; split after it
            (do ([b 0 (fx+ b 1)]) ((fx= b buckets)) (fx! table (fx+ sizes-at b) 0))
            (do ([b b0 (fx+ b 1)] [before base (u32 counts (fx- (fx- (fxsll (fx+ b 1) shift) 1) lo))])
                ((fx= b b1))
              (fx! table (fx+ sizes-at b) (fx- (u32 counts (fx- (fx- (fxsll (fx+ b 1) shift) 1) lo)) before)))
            (split! all)
            (set! last (lambda ()
                         (let ([keys (make-bytevector (fx* 4 total))])
                           (unsafe-shared-vector->bytevector! received 0 keys 0 (fx* 4 total))
                           (list keys lo base)))))))
      (when (fx> np 1) (first-split!))
      (CGBarrier cg)
      (let ([iteration! (let ([rank! (if (fx= np 1) rank-alone! rank-buckets!)])
                          (lambda (it)
                            ;; member 0's block holds keys 0 .. 2*iterations (is-run checks)
                            (when (fx= me 0)
                              (u32-set! mine it it)
                              (u32-set! mine (fx+ it iterations) (fx- max-key it)))
                            (rank! it)))])
        (iteration! 1)                  ; untimed, as in the reference
        (set! passed 0)
        (let-values ([(v s) (nas-seconds
                              (lambda ()
                                (do ([it 1 (fx+ it 1)]) ((fx> it iterations)) (iteration! it))
                                (CGBarrier cg)))])
          (let-values ([(bad count) (apply full-verify counts (last))])
            (let ([passed (CGallreduce cg + passed)] [bad (CGallreduce cg + bad)] [count (CGallreduce cg + count)])
              (and (fx= me 0) (list s passed bad count))))))))

  ;; -> (values keys out of order, keys placed) in my stretch of the sorted
  ;; order: keys are my run's keys (32 bits each), counts[v - lo] the rank
  ;; of the last key of value v.  A rank outside the stretch counts as out
  ;; of order.
  (define (full-verify counts keys lo base)
    (let* ([count (fxquotient (bytevector-length keys) 4)]
           [sorted (make-fxvector count -1)]
           [bad 0])
      (do ([i 0 (fx+ i 1)]) ((fx= i count))
        (let* ([k (bytevector-u32-native-ref keys (fx* 4 i))]
               [r (fx- (bytevector-u32-native-ref counts (fx* 4 (fx- k lo))) 1)] [p (fx- r base)])
          (bytevector-u32-native-set! counts (fx* 4 (fx- k lo)) r)
          (if (and (fx<= 0 p) (fx< p count))
              (fxvector-set! sorted p k)
              (set! bad (fx+ bad 1)))))
      (do ([i 1 (fx+ i 1)]
           [bad bad (if (fx> (fxvector-ref sorted (fx- i 1)) (fxvector-ref sorted i)) (fx+ bad 1) bad)])
          ((fx>= i count) (values bad count)))))

  (lift-places (nas is-mpi)))
