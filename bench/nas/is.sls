#!chezscheme
;;; IS, the integer sort kernel (NPB 3.4): N keys in [0, Bmax) drawn from
;;; the NPB generator (each the sum of four deviates times Bmax/4), ranked
;;; ten times by a counting sort through 2^b buckets.  Before ranking
;;; iteration i the keys at i and i+10 are set to i and Bmax - i; after it,
;;; the ranks of five keys are checked against the published ones (partial
;;; verification), and after the last the keys are sorted by their ranks and
;;; checked to be in order (full verification, untimed).
;;;
;;; One ranking, by member id of np, over shared vectors:
;;;   A. count the keys of my block per bucket into row id of `sizes`
;;;      (a member keeps its block in its own fxvector too: only the
;;;      exchange of phases B and C goes through shared memory, as in the
;;;      reference's MPI version);
;;;   B. scatter my block into `sorted`: bucket b of member id starts after
;;;      every key of a lower bucket and bucket b's keys of members < id;
;;;   C. rank my buckets: count each key value of the bucket into `ranks`,
;;;      then a prefix sum from the bucket's start.  A member's buckets are
;;;      those whose first key falls in its N/np share of `sorted`, so the
;;;      work is balanced by keys, not by buckets (they are bell-shaped).
;;; A barrier ends each phase.
(library (nas is)
  (export is-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (nas common) (nas random))

  (define is-classes '(S W A B))
  (define is-modes '(serial places threads))
  (define iterations 10)

  ;; class -> (log2 N, log2 Bmax, log2 buckets, test indices, test ranks)
  (define (class-parameters class)
    (case class
      [(S) '(16 11 9 #(48427 17148 23627 62548 4431) #(0 18 346 64917 65463))]
      [(W) '(20 16 10 #(357773 934767 875723 898999 404505) #(1249 11698 1039987 1043896 1048018))]
      [(A) '(23 19 10 #(2112377 662041 5336171 3642833 4250760) #(104 17523 123928 8288932 8388264))]
      [(B) '(25 21 10 #(41869 812306 5102857 18232239 26860214) #(33422937 10244 59149 33135281 99))]))

  ;; The published rank of test key t after iteration it: the reference
  ;; shifts each class's ranks by the iteration in its own way.
  (define (expected-rank class t rank it)
    (case class
      [(S) (if (fx<= t 2) (fx+ rank it) (fx- rank it))]
      [(W) (if (fx< t 2) (fx+ rank (fx- it 2)) (fx- rank it))]
      [(A) (if (fx<= t 2) (fx+ rank (fx- it 1)) (fx- rank (fx- it 1)))]
      [(B) (if (memv t '(1 2 4)) (fx+ rank it) (fx- rank it))]))

  ;; [start, end) of member id's share of n items (CGfor's block rule).
  (define (block n np id)
    (let* ([q (fxquotient n np)] [r (fxremainder n np)]
           [start (fx+ (fx* id q) (fxmin id r))])
      (values start (fx+ start q (if (fx< id r) 1 0)))))

  ;; Member id's keys, into keys and into the fxvector returned (its
  ;; block).  Key i is Bmax/4 (r1 + r2 + r3 + r4) truncated, for deviates
  ;; r = x 2^-46 number 4i+1 .. 4i+4.  In the reference's doubles every
  ;; step is exact (the sums stay below 2^48, Bmax/4 is a power of two),
  ;; so the key is exactly (x1 + x2 + x3 + x4) >> (48 - log2 Bmax).
  (define (generate-keys! keys n max-key np id)
    (let-values ([(start end) (block n np id)])
      (let ([shift (fx- 48 (fx- (fxlength max-key) 1))]
            [mine (make-fxvector (fx- end start))])
        (let loop ([i start]
                   [x (random-next nas-seed (random-power nas-multiplier (fx* 4 start)))])
          (if (fx= i end)
              mine
              (let* ([x1 (random-next x nas-multiplier)] [x2 (random-next x1 nas-multiplier)]
                     [x3 (random-next x2 nas-multiplier)] [x4 (random-next x3 nas-multiplier)]
                     [k (fxsra (fx+ (fx+ x1 x2) (fx+ x3 x4)) shift)])
                (shared-fxvector-set! keys i k)
                (fxvector-set! mine (fx- i start) k)
                (loop (fx+ i 1) x4)))))))

  ;; The arrays of one run, shared by every member.
  (define-record-type arrays
    (fields n max-key buckets keys sorted ranks sizes))

  ;; Total keys of buckets < b, for every b, in starts (a local fxvector).
  (define (bucket-starts! a np starts)
    (let ([nb (arrays-buckets a)] [sizes (arrays-sizes a)])
      (let loop ([b 0] [acc 0])
        (when (fx< b nb)
          (fxvector-set! starts b acc)
          (loop (fx+ b 1)
                (let sum ([m 0] [acc acc])
                  (if (fx= m np) acc (sum (fx+ m 1) (fx+ acc (shared-fxvector-ref sizes (fx+ (fx* m nb) b)))))))))))

  ;; One ranking (phases A, B, C), by member id.
  ;; mine (my block of keys), ptrs, starts (buckets) and counts (a
  ;; bucket's key values): this member's own fxvectors.
  (define (rank! a np id barrier mine ptrs starts counts)
    (let* ([n (arrays-n a)] [nb (arrays-buckets a)] [m (fxvector-length mine)]
           [sorted (arrays-sorted a)] [ranks (arrays-ranks a)] [sizes (arrays-sizes a)]
           [width (fxquotient (arrays-max-key a) nb)]
           [shift (fx- (fxlength width) 1)]
           [row (fx* id nb)])
        ;; A, counted in ptrs, then published
        (do ([b 0 (fx+ b 1)]) ((fx= b nb)) (fxvector-set! ptrs b 0))
        (do ([j 0 (fx+ j 1)]) ((fx= j m))
          (let ([b (fxsra (fxvector-ref mine j) shift)])
            (fxvector-set! ptrs b (fx+ (fxvector-ref ptrs b) 1))))
        (do ([b 0 (fx+ b 1)]) ((fx= b nb)) (shared-fxvector-set! sizes (fx+ row b) (fxvector-ref ptrs b)))
        (barrier)
        ;; B
        (bucket-starts! a np starts)
        (do ([b 0 (fx+ b 1)]) ((fx= b nb))
          (let sum ([w 0] [acc (fxvector-ref starts b)])
            (if (fx= w id)
                (fxvector-set! ptrs b acc)
                (sum (fx+ w 1) (fx+ acc (shared-fxvector-ref sizes (fx+ (fx* w nb) b)))))))
        (do ([j 0 (fx+ j 1)]) ((fx= j m))
          (let* ([k (fxvector-ref mine j)] [b (fxsra k shift)] [p (fxvector-ref ptrs b)])
            (shared-fxvector-set! sorted p k)
            (fxvector-set! ptrs b (fx+ p 1))))
        (barrier)
        ;; C: bucket b is mine when its start is in my share of `sorted`
        (let-values ([(share-from share-to) (block n np id)])
          (do ([b 0 (fx+ b 1)]) ((fx= b nb))
            (let ([from (fxvector-ref starts b)])
              (when (and (fx>= from share-from) (fx< from share-to))
                (let ([to (if (fx= b (fx- nb 1)) n (fxvector-ref starts (fx+ b 1)))]
                      [k0 (fx* b width)])
                  ;; counted in counts (index: key - k0), then published as ranks
                  (do ([j 0 (fx+ j 1)]) ((fx= j width)) (fxvector-set! counts j 0))
                  (do ([i from (fx+ i 1)]) ((fx= i to))
                    (let ([j (fx- (shared-fxvector-ref sorted i) k0)])
                      (fxvector-set! counts j (fx+ (fxvector-ref counts j) 1))))
                  (let loop ([j 0] [acc from])
                    (unless (fx= j width)
                      (let ([acc (fx+ acc (fxvector-ref counts j))])
                        (shared-fxvector-set! ranks (fx+ k0 j) acc)
                        (loop (fx+ j 1) acc)))))))))
        (barrier)))

  ;; The SPMD body.  Member 0 owns keys 0 .. 2*iterations (its block holds
  ;; them: see is-run's check), so it modifies them with no barrier.  It
  ;; returns (seconds . partial verifications passed); the others #f.
  (define (is-kernel id np barrier class a)
    (let* ([params (class-parameters class)]
           [test-index (list-ref params 3)] [test-rank (list-ref params 4)]
           [keys (arrays-keys a)] [ranks (arrays-ranks a)] [n (arrays-n a)]
           [ptrs (make-fxvector (arrays-buckets a))] [starts (make-fxvector (arrays-buckets a))]
           [counts (make-fxvector (fxquotient (arrays-max-key a) (arrays-buckets a)))]
           [mine (generate-keys! keys n (arrays-max-key a) np id)]
           [passed 0])
      (define (set-key! i k) (shared-fxvector-set! keys i k) (fxvector-set! mine i k))
      (define (iteration! it)
        (when (fx= id 0)
          (set-key! it it)
          (set-key! (fx+ it iterations) (fx- (arrays-max-key a) it)))
        (rank! a np id barrier mine ptrs starts counts)
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
      (let-values ([(v s) (nas-seconds
                            (lambda ()
                              (do ([it 1 (fx+ it 1)]) ((fx> it iterations)) (iteration! it))))])
        (and (fx= id 0) (cons s passed)))))

  ;; Full verification, after the last ranking: each key goes to the place
  ;; its rank gives (ranks are counted down per equal key), then the keys
  ;; must be in order.  Returns the number of keys out of order.
  (define (full-verify a np)
    (let* ([n (arrays-n a)] [keys (arrays-keys a)] [sorted (arrays-sorted a)] [ranks (arrays-ranks a)])
      (do ([i 0 (fx+ i 1)]) ((fx= i n))
        (let* ([k (shared-fxvector-ref sorted i)] [r (fx- (shared-fxvector-ref ranks k) 1)])
          (shared-fxvector-set! ranks k r)
          (shared-fxvector-set! keys r k)))
      (let loop ([i 1] [bad 0])
        (if (fx= i n)
            bad
            (loop (fx+ i 1) (if (fx> (shared-fxvector-ref keys (fx- i 1)) (shared-fxvector-ref keys i))
                                (fx+ bad 1) bad))))))

  (define (run-places np class a)
    (vector-ref
      (fork-join np cg ([class class] [n (arrays-n a)] [max-key (arrays-max-key a)]
                        [buckets (arrays-buckets a)] [keys (arrays-keys a)] [sorted (arrays-sorted a)]
                        [ranks (arrays-ranks a)] [sizes (arrays-sizes a)])
        (is-kernel (CG-id cg) (CG-np cg) (lambda () (CGBarrier cg)) class
                   (make-arrays n max-key buckets keys sorted ranks sizes)))
      0))

  (define (is-run class mode np)
    (check-nas-arguments 'is-run class is-classes mode is-modes np)
    (let* ([params (class-parameters class)]
           [n (fxsll 1 (car params))] [max-key (fxsll 1 (cadr params))]
           [nb (fxsll 1 (caddr params))])
      ;; member 0's block must hold keys 0 .. 2*iterations
      (unless (fx> (fxquotient n np) (fx* 2 iterations))
        (assertion-violation 'is-run "too many workers for the class" np))
      (let* ([a (make-arrays n max-key nb (make-shared-fxvector n) (make-shared-fxvector n)
                             (make-shared-fxvector max-key) (make-shared-fxvector (fx* np nb)))]
             [r (case mode
                  [(serial) (is-kernel 0 1 void class a)]
                  [(places) (run-places np class a)]
                  [(threads) (vector-ref (threads-spmd np (lambda (id barrier) (is-kernel id np barrier class a))) 0)])]
             [seconds (car r)] [passed (cdr r)]
             [bad (full-verify a np)]
             [partial-ok (fx= passed (fx* 5 iterations))])
        (make-nas-result 'is class mode np seconds
                         (/ (* n iterations) seconds 1e6)
                         (and partial-ok (fx= bad 0))
                         (list (format "partial verification: ~a of ~a test ranks right" passed (* 5 iterations))
                               (format "full verification: ~a of ~a keys out of order" bad n))))))

  (lift-places (nas is)))
