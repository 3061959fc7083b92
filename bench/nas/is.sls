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
;;;   A. count the keys of my block per key value into row id of `hist`
;;;      (a member keeps its block in its own bytevector too, 32 bits a
;;;      key, and reads only that);
;;;   B. for my Bmax/np share of the key values, add the members' counts
;;;      into `ranks` as a running sum and publish my share's total in
;;;      `totals`;
;;;   C. add the totals of the lower shares to my share of `ranks` (member
;;;      0 has none: B made its ranks).
;;; A barrier ends each phase.  One pass over the keys: a row of the
;;; histogram (Bmax 32-bit counts, 2 MB at class A) stays in the cache,
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
  ;; for the full verification), ranks (Bmax), hist (shared bytes: np rows
  ;; of Bmax 32-bit counts), totals (np).
  ;; Member id's keys, into keys and into the bytevector returned (its
  ;; block, 32 bits a key).
  (define (generate-keys! keys n max-key np id)
    (let-values ([(start end) (block n np id)])
      (let ([mine (block-keys n max-key np id)])
        (do ([i start (fx+ i 1)]) ((fx= i end) mine)
          (shared-fxvector-set! keys i (bytevector-u32-native-ref mine (fx* 4 (fx- i start))))))))

  (define-record-type arrays
    (fields n max-key keys sorted ranks hist totals))

  ;; Count i of hist, unchecked.  32 bits: a row of the histogram (2 MB at
  ;; class A) is half as much cache as fixnums, and counting took half the
  ;; time.  A count is at most N < 2^32.  hist stays reachable in the
  ;; arrays record while its address is used.
  (define-syntax count-ref
    (syntax-rules () [(_ a i) (#3%foreign-ref 'unsigned-32 a (#3%fx* 4 i))]))
  (define-syntax count-set!
    (syntax-rules () [(_ a i x) (#3%foreign-set! 'unsigned-32 a (#3%fx* 4 i) x)]))

  ;; One ranking (phases A, B, C), by member id; mine: my block of keys,
  ;; 32 bits each.  Every key lies in [0, Bmax) (generate-keys! and
  ;; is-kernel's set-key! make no other), so the unchecked accesses below
  ;; stay in their arrays.
  (define (rank! a np id barrier mine)
    (let* ([mk (arrays-max-key a)] [m4 (bytevector-length mine)]
           [ha (unsafe-shared-vector-address (arrays-hist a))]
           [ranks (arrays-ranks a)] [totals (arrays-totals a)]
           [row (fx* id mk)])
      ;; A (the counts are zero: made so, then cleared by B as it reads them)
      (do ([j 0 (fx+ j 4)]) ((fx= j m4))
        (let ([h (fx+ row (#3%bytevector-u32-native-ref mine j))])
          (count-set! ha h (fx+ (count-ref ha h) 1))))
      (barrier)
      ;; B: ranks[v] = my running count through v, which is the rank for
      ;; member 0 (its share starts at rank 0); each count read is cleared
      ;; for the next ranking (the shares cover every row's every value)
      (let-values ([(lo hi) (block mk np id)])
        (let loop ([v lo] [acc 0])
          (if (fx= v hi)
              (unsafe-shared-fxvector-set! totals id acc)
              (let ([acc (let sum ([r v] [acc acc])
                           (if (fx>= r (fx* np mk))
                               acc
                               (let ([c (count-ref ha r)])
                                 (count-set! ha r 0)
                                 (sum (fx+ r mk) (fx+ acc c)))))])
                (unsafe-shared-fxvector-set! ranks v acc)
                (loop (fx+ v 1) acc))))
        (barrier)
        ;; C
        (unless (fx= id 0)
          (let ([base (let sum ([w 0] [acc 0])
                        (if (fx= w id) acc (sum (fx+ w 1) (fx+ acc (unsafe-shared-fxvector-ref totals w)))))])
            (do ([v lo (fx+ v 1)]) ((fx= v hi))
              (unsafe-shared-fxvector-set! ranks v (fx+ base (unsafe-shared-fxvector-ref ranks v))))))
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
                         (fx= (shared-fxvector-ref ranks (fx- k 1))
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
        (let* ([k (shared-fxvector-ref keys i)] [r (fx- (shared-fxvector-ref ranks k) 1)])
          (shared-fxvector-set! ranks k r)
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
                             (make-shared-fxvector max-key) (make-shared-bytes (fx* 4 (fx* np max-key)))
                             (make-shared-fxvector np))]
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
