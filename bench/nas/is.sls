#!chezscheme
;;; IS, the integer sort kernel (NPB 3.4): N keys in [0, Bmax) drawn from
;;; the NPB generator (each the sum of four deviates times Bmax/4), ranked
;;; ten times by a counting sort: the histogram of the key values and its
;;; inclusive prefix sum (the reference's ranking without buckets).  Before
;;; ranking iteration i the keys at i and i+10 are set to i and Bmax - i;
;;; after it, the ranks of five keys are checked against the published ones
;;; (partial verification), and after the last the keys are placed by their
;;; ranks and checked to be in order (full verification, untimed).
;;;
;;; One ranking, by member id of np, over shared vectors:
;;;   A. clear row id of `hist`, then count the keys of my block per key
;;;      value into it (a member keeps its block in its own bytevector
;;;      too, 32 bits a key, and reads only that);
;;;   B. publish my row's count of each share of the key values in
;;;      `totals` (np x np);
;;;   C. for my Bmax/np share of the key values, add the members' counts
;;;      into `ranks` as a running sum starting at every row's count of the
;;;      lower shares.
;;; A barrier ends B and one ends C.  One pass over the keys: a row of the
;;; histogram (Bmax 8-bit counts, 512 KB at class A) stays in the cache,
;;; where the reference's bucket variant (count per bucket, scatter the
;;; keys into bucket order, count within each bucket) took 2.5 times the
;;; CPU.
;;;
;;; Mode mpi: the bucket decomposition with an all-to-all of the keys, of
;;; (nas is-mpi), with no shared memory.
(library (nas is)
  (export is-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (only (spindle unsafe) unsafe-shared-vector-address unsafe-shared-fxvector-ref unsafe-shared-fxvector-set!)
          (nas common) (nas timed) (nas is-keys) (nas is-mpi))

  (define is-classes '(S W A B))
  (define is-modes '(serial places threads mpi))


  ;; The arrays of one run, shared by every member: keys (N), sorted (N,
  ;; for the full verification), ranks (shared bytes: Bmax 32-bit ranks),
  ;; hist (shared bytes: np rows of Bmax 8-bit counts), totals (np x np).
  ;; Member id's keys, into keys and into the bytevector returned (its
  ;; block, 32 bits a key).
  (define (generate-keys! keys n max-key np id)
    (let-values ([(start end) (block n np id)])
      (let ([mine (block-keys n max-key np id)])
        (do ([i start (fx+ i 1)]) ((fx= i end) mine)
          (shared-fxvector-set! keys i (bytevector-u32-native-ref mine (fx* 4 (fx- i start))))))))

  (define-record-type arrays
    (fields n max-key keys sorted ranks hist totals))

  ;; Count i of hist, unchecked, 8 bits: a row of the histogram (512 KB at
  ;; class A) stays in a core's own cache, and counting takes 30% less time
  ;; than with 32-bit counts.  A key value occurs at most 111 times at
  ;; class S, 67 at W, 73 at A and 74 at B (the keys are the same for every
  ;; np; is-run's test keys add at most 2 to a value), so no count wraps;
  ;; a wrapped count would fail the verification.  hist stays reachable in
  ;; the arrays record while its address is used.
  (define-syntax count-ref
    (syntax-rules () [(_ a i) (#3%foreign-ref 'unsigned-8 a i)]))
  (define-syntax count-set!
    (syntax-rules () [(_ a i x) (#3%foreign-set! 'unsigned-8 a i x)]))

  ;; Rank v, 32 bits (a rank is at most N < 2^32), unchecked: half the
  ;; memory traffic of fixnums in phases B and C.
  (define-syntax rank-ref
    (syntax-rules () [(_ a v) (#3%foreign-ref 'unsigned-32 a (#3%fx* 4 v))]))
  (define-syntax rank-set!
    (syntax-rules () [(_ a v x) (#3%foreign-set! 'unsigned-32 a (#3%fx* 4 v) x)]))

  ;; Rank v, checked against ranks' length (for the verifications).
  (define (checked-rank ranks v)
    (unless (and (fx>= v 0) (fx< (fx* 4 v) (shared-bytes-length ranks)))
      (assertion-violation 'is-run "key value out of range" v))
    (rank-ref (unsafe-shared-vector-address ranks) v))
  (define (checked-rank-set! ranks v x)
    (unless (and (fx>= v 0) (fx< (fx* 4 v) (shared-bytes-length ranks)) (fx>= x 0))
      (assertion-violation 'is-run "key value out of range" v))
    (rank-set! (unsafe-shared-vector-address ranks) v x))

  ;; The sum of the counts at [i, j) of hist (address ha), unchecked:
  ;; four at a time from a 32-bit word, adding its bytes in two 16-bit
  ;; lanes (each lane at most 2 * 255, so no carry crosses a lane).
  (define (byte-sum ha i j)
    (let ([j4 (fx- j (fxand (fx- j i) 3))])
      (let words ([k i] [acc 0])
        (if (fx< k j4)
            (let* ([x (#3%foreign-ref 'unsigned-32 ha k)]
                   [s (fx+ (fxand x #x00ff00ff) (fxand (fxsrl x 8) #x00ff00ff))])
              (words (fx+ k 4) (fx+ acc (fx+ (fxand s #xffff) (fxsrl s 16)))))
            (do ([k k (fx+ k 1)] [acc acc (fx+ acc (count-ref ha k))]) ((fx= k j) acc))))))

  ;; One ranking (phases A, B, C), by member id; mine: my block of keys,
  ;; 32 bits each.  Every key lies in [0, Bmax) (generate-keys! and
  ;; is-kernel's set-key! make no other), so the unchecked accesses below
  ;; stay in their arrays.
  (define (rank! a np id barrier mine)
    (let* ([mk (arrays-max-key a)] [m4 (bytevector-length mine)]
           [ha (unsafe-shared-vector-address (arrays-hist a))]
           [ra (unsafe-shared-vector-address (arrays-ranks a))] [totals (arrays-totals a)]
           [row (fx* id mk)])
      ;; A: my row cleared (8 counts a store; a row is a multiple of 8),
      ;; then counted.  Only I write my row: the others only read it in C,
      ;; so its lines stay in my core's cache between rankings.
      (do ([j row (fx+ j 8)]) ((fx= j (fx+ row mk)))
        (#3%foreign-set! 'unsigned-64 ha j 0))
      (do ([j 0 (fx+ j 4)]) ((fx= j m4))
        (let ([h (fx+ row (#3%bytevector-u32-native-ref mine j))])
          (count-set! ha h (fx+ (count-ref ha h) 1))))
      ;; B: my row's count of each lower share of the key values (the last
      ;; share's is no one's base), while the row is in my cache
      (do ([s 0 (fx+ s 1)]) ((fx>= s (fx- np 1)))
        (let-values ([(slo shi) (block mk np s)])
          (unsafe-shared-fxvector-set! totals (fx+ (fx* id np) s)
            (byte-sum ha (fx+ row slo) (fx+ row shi)))))
      (barrier)
      (let-values ([(lo hi) (block mk np id)])
        ;; C: ranks[v] = the count of the keys through v: every row's count
        ;; of the lower shares, then a running sum over my share
        (let ([base (do ([m 0 (fx+ m 1)]
                         [acc 0 (do ([s 0 (fx+ s 1)] [acc acc (fx+ acc (unsafe-shared-fxvector-ref totals (fx+ (fx* m np) s)))])
                                    ((fx= s id) acc))])
                        ((fx= m np) acc))]
              [lo4 (fxand (fx+ lo 3) -4)] [hi4 (fxmax lo (fxand hi -4))]
              [end (fx* np mk)])
          ;; value v alone: its rows' counts added to acc
          (define (one v acc)
            (let sum ([r v] [acc acc])
              (if (fx>= r end)
                  (begin (rank-set! ra v acc) acc)
                  (sum (fx+ r mk) (fx+ acc (count-ref ha r))))))
          (let* ([acc (do ([v lo (fx+ v 1)] [acc base (one v acc)]) ((fx>= v (fxmin lo4 hi)) acc))]
                 ;; values v .. v+3 at once: each row's 32-bit word of
                 ;; their counts, bytes 0 and 2 added in the 16-bit lanes
                 ;; of even, bytes 1 and 3 in those of odd (a lane ends
                 ;; holding one key value's total count, under 2^8: see
                 ;; count-ref)
                 [acc (let words ([v lo4] [acc acc])
                        (if (fx>= v hi4)
                            acc
                            (let rows ([r v] [even 0] [odd 0])
                              (if (fx>= r end)
                                  (let* ([a0 (fx+ acc (fxand even #xffff))]
                                         [a1 (fx+ a0 (fxand odd #xffff))]
                                         [a2 (fx+ a1 (fxsrl even 16))]
                                         [a3 (fx+ a2 (fxsrl odd 16))])
                                    (rank-set! ra v a0)
                                    (rank-set! ra (fx+ v 1) a1)
                                    (rank-set! ra (fx+ v 2) a2)
                                    (rank-set! ra (fx+ v 3) a3)
                                    (words (fx+ v 4) a3))
                                  (let ([x (#3%foreign-ref 'unsigned-32 ha r)])
                                    (rows (fx+ r mk) (fx+ even (fxand x #x00ff00ff))
                                          (fx+ odd (fxand (fxsrl x 8) #x00ff00ff))))))))])
            (do ([v (fxmax hi4 lo) (fx+ v 1)] [acc acc (one v acc)]) ((fx>= v hi)))))
        (barrier))))

  ;; The SPMD body.  Member 0 owns keys 0 .. 2*iterations (its block holds
  ;; them: see is-run's check), so it modifies them with no barrier.  It
  ;; returns (seconds . partial verifications passed); the others #f.
  (define (is-kernel id np barrier class a)
    (let* ([params (class-parameters class)]
           [test-index (list-ref params 2)] [test-rank (list-ref params 3)]
           [keys (arrays-keys a)] [ranks (arrays-ranks a)] [n (arrays-n a)]
           [mine (generate-keys! keys n (arrays-max-key a) np id)]
           [passed 0])
      (define (set-key! i k) (shared-fxvector-set! keys i k) (bytevector-u32-native-set! mine (fx* 4 i) k))
      (define (iteration! it)
        (when (fx= id 0)
          (set-key! it it)
          (set-key! (fx+ it iterations) (fx- (arrays-max-key a) it)))
        (rank! a np id barrier mine)
        (when (fx= id 0)
          (do ([t 0 (fx+ t 1)]) ((fx= t 5))
            (let ([k (shared-fxvector-ref keys (vector-ref test-index t))])
              (when (and (fx> k 0) (fx<= k (fx- n 1))
                         (fx= (checked-rank ranks (fx- k 1))
                              (expected-rank class t (vector-ref test-rank t) it)))
                (set! passed (fx+ passed 1)))))))
      (barrier)
      (iteration! 1)                    ; untimed, as in the reference
      (set! passed 0)
      (let-values ([(v s usage) (timed
                                  (lambda ()
                                    (do ([it 1 (fx+ it 1)]) ((fx> it iterations)) (iteration! it))))])
        (and (fx= id 0) (list s passed usage)))))

  ;; Full verification, after the last ranking: each key goes to the place
  ;; its rank gives in `sorted` (ranks are counted down per equal key), then
  ;; `sorted` must be in order.  Returns the number of keys out of order.
  ;; Checked accesses: a wrong rank raises instead of writing elsewhere.
  (define (full-verify a)
    (let* ([n (arrays-n a)] [keys (arrays-keys a)] [sorted (arrays-sorted a)] [ranks (arrays-ranks a)])
      (do ([i 0 (fx+ i 1)]) ((fx= i n))
        (let* ([k (shared-fxvector-ref keys i)] [r (fx- (checked-rank ranks k) 1)])
          (checked-rank-set! ranks k r)
          (shared-fxvector-set! sorted r k)))
      (let loop ([i 1] [bad 0])
        (if (fx= i n)
            bad
            (loop (fx+ i 1) (if (fx> (shared-fxvector-ref sorted (fx- i 1)) (shared-fxvector-ref sorted i))
                                (fx+ bad 1) bad))))))

  (define (run-places np class a)
    (vector-ref
      (fork-join np cg ([class class] [n (arrays-n a)] [max-key (arrays-max-key a)]
                        [keys (arrays-keys a)] [sorted (arrays-sorted a)] [ranks (arrays-ranks a)]
                        [hist (arrays-hist a)] [totals (arrays-totals a)])
        (is-kernel (CG-id cg) (CG-np cg) (lambda () (CGBarrier cg)) class
                   (make-arrays n max-key keys sorted ranks hist totals)))
      0))

  (define (is-run class mode np)
    (check-nas-arguments 'is-run class is-classes mode is-modes np)
    (let* ([params (class-parameters class)]
           [n (fxsll 1 (car params))] [max-key (fxsll 1 (cadr params))])
      ;; member 0's block must hold keys 0 .. 2*iterations
      (unless (fx> (fxquotient n np) (fx* 2 iterations))
        (assertion-violation 'is-run "too many workers for the class" np))
      (if (eq? mode 'mpi)
          (let ([r (is-mpi-run (nas-mpi-members 'is-run np) class)])
            (apply (lambda (seconds passed bad count)
                     (make-nas-result 'is class mode np seconds (/ (* n iterations) seconds 1e6)
                                      (and (fx= passed (fx* 5 iterations)) (fx= bad 0) (fx= count n))
                                      (list (format "partial verification: ~a of ~a test ranks right" passed (* 5 iterations))
                                            (format "full verification: ~a of ~a keys out of order (~a ranked)" bad n count))))
                   r))
      (let* ([a (make-arrays n max-key (make-shared-fxvector n) (make-shared-fxvector n)
                             (make-shared-bytes (fx* 4 max-key)) (make-shared-bytes (fx* np max-key))
                             (make-shared-fxvector (fx* np np)))]
             [r (case mode
                  [(serial) (is-kernel 0 1 void class a)]
                  [(places) (run-places np class a)]
                  [(threads) (vector-ref (threads-spmd np (lambda (id barrier) (is-kernel id np barrier class a))) 0)])]
             [seconds (car r)] [passed (cadr r)] [usage (caddr r)]
             [bad (full-verify a)]
             [partial-ok (fx= passed (fx* 5 iterations))])
        (make-nas-result 'is class mode np seconds
                         (/ (* n iterations) seconds 1e6)
                         (and partial-ok (fx= bad 0))
                         (list (format "partial verification: ~a of ~a test ranks right" passed (* 5 iterations))
                               (format "full verification: ~a of ~a keys out of order" bad n)
                               (allocation-note usage mode)))))))

  (lift-places (nas is)))
