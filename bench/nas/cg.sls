#!chezscheme
;;; NAS CG (NPB 3.4): the inverse power method on the sparse symmetric
;;; matrix of (nas cg-matrix), each outer iteration solving A z = x with 25
;;; unpreconditioned conjugate-gradient steps; zeta = shift + 1/(x.z) of
;;; the last iteration is checked against the official value (relative
;;; error 1e-10).  Timed: the niter outer iterations, after one untimed
;;; iteration, as in the reference.
;;;
;;; Parallel decomposition: member id of np owns a block of rows (cut so
;;; the blocks hold equal work, see row-split) and the same block of every
;;; vector.  A matrix-vector product reads all of its source vector, so a
;;; barrier separates the update of p (or z) from the product.  Dot
;;; products are summed by chunks of chunk-rows rows, whatever np: each
;;; member writes the partial sum of each of its chunks into that chunk's
;;; slot of a shared vector, a barrier, then every member sums all the
;;; slots in chunk order.  So all members hold the same value, and the
;;; result does not depend on timing or on np (serial, which runs the same
;;; member procedure as id 0 of 1 with a barrier that does nothing,
;;; included): zeta is the same to the last bit in every mode and np.
;;;
;;; Mode mpi: the process-grid decomposition of (nas cg-mpi), with no
;;; shared memory.
(library (nas cg)
  (export cg-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (only (spindle) fork-join CG-id CG-np CGBarrier lift-places
                make-shared-flvector shared-flvector-ref shared-flvector-set!
                shared-flvector-length make-shared-fxvector shared-fxvector-ref
                shared-fxvector-set!)
          (nas common) (nas timed) (nas nursery) (nas raw) (nas cg-matrix) (nas cg-mpi))

  ;; class -> (na nonzer niter shift zeta)
  (define (class-parameters class)
    (case class
      [(S) '(1400 7 15 10.0 8.5971775078648)]
      [(W) '(7000 8 15 12.0 10.362595087124)]
      [(A) '(14000 11 15 20.0 17.130235054029)]))

  (define cg-steps 25)
  (define epsilon 1e-10)

  (define-syntax fl@ (identifier-syntax shared-flvector-ref))
  (define-syntax fl! (identifier-syntax shared-flvector-set!))
  (define-syntax fx@ (identifier-syntax shared-fxvector-ref))
  ;; element j of a vector by its address (nas raw): the vector loops
  ;; below take the addresses of x z p q r
  (define-syntax v@ (syntax-rules () [(_ a j) (g@ a (#3%fx* 8 j))]))
  (define-syntax v! (syntax-rules () [(_ a j x) (g! a (#3%fx* 8 j) x)]))

  ;; Rows are summed in chunks of chunk-rows; blocks start at a chunk.
  (define chunk-rows 8)
  (define (chunk-count n) (fxquotient (fx+ n (fx- chunk-rows 1)) chunk-rows))

  ;; Slots of the partial sums: kind k of chunk c at k*chunks + c.
  (define rho-slot 0)
  (define pq-slot 1)
  (define residual-slot 2)
  (define xz-slot 3)
  (define zz-slot 4)
  (define slot-kinds 5)

  ;; Member id's block of rows starts at row-split(id) (row-split(np) = n).
  ;; Rows hold different numbers of nonzeros, so the blocks are cut by
  ;; work, not by row count: a row weighs its nonzeros plus row-weight
  ;; (the vector updates cost about as much as 4 nonzeros a row), and
  ;; block id starts at the first chunk whose weight before it reaches
  ;; id/np of the total.  Class A, the largest block's nonzeros over the
  ;; mean: 1.0001 at np 2 either way; 1.007 at np 16 (by row count: 1.022).
  (define row-weight 4)

  (define (row-split rowstr n np id)
    (let* ([base (fx@ rowstr 0)]
           [chunk-start (lambda (c) (fxmin n (fx* c chunk-rows)))]
           [weight-before (lambda (j) (fx+ (fx- (fx@ rowstr j) base) (fx* row-weight j)))]
           [target (fxquotient (fx* id (weight-before n)) np)])
      ;; the first chunk c with weight-before(chunk-start(c)) >= target
      ;; (increasing in c)
      (let search ([lo 0] [hi (chunk-count n)])
        (if (fx= lo hi)
            (chunk-start lo)
            (let ([mid (fxsrl (fx+ lo hi) 1)])
              (if (fx>= (weight-before (chunk-start mid)) target)
                  (search lo mid)
                  (search (fx+ mid 1) hi)))))))

  ;; body once for each chunk of rows [lo, hi) (lo at a chunk start), with
  ;; c the chunk's index and [start, end) its rows.
  (define-syntax for-chunks
    (syntax-rules ()
      [(_ (c start end lo hi) body ...)
       (let ([h hi])
         (let chunk ([start lo])
           (when (fx< start h)
             (let ([end (fxmin h (fx+ start chunk-rows))] [c (fxquotient start chunk-rows)])
               body ...
               (chunk end)))))]))

  ;; q = 0, z = 0, r = p = x on [lo, hi); each chunk's r.r into slot
  ;; base + c of the partials at address sa.
  (define (init-vectors! x z p q r lo hi sa base)
    (for-chunks (c start end lo hi)
      (v! sa (fx+ base c)
          (let loop ([j start] [s 0.0])
            (if (fx= j end)
                s
                (let ([xj (v@ x j)])
                  (v! q j 0.0) (v! z j 0.0) (v! r j xj) (v! p j xj)
                  (loop (fx+ j 1) (fl+ s (fl* xj xj)))))))))

  ;; A member's rows of A, copied out of the shared vectors into its own
  ;; heap: row j (0-based in the block) holds entries start[j] ..
  ;; start[j+1]-1 of offs (fxvector of the columns' byte offsets, 8 col)
  ;; and vals.  The product's inner loop reads only these and the shared
  ;; source vector (by its address), with unchecked primitives (the
  ;; indices come from the matrix build), so it runs inline at any
  ;; optimize level.
  (define-record-type rows (fields start offs vals) (sealed #t))

  ;; vals: a bytevector of doubles on 9.5; on 10 an flvector, whose element
  ;; k is read with k's fixnum as the scaled index (no shift).
  (by-chez
   (begin
     (define-syntax make-vals (syntax-rules () [(_ n) (make-bytevector (fx* 8 n))]))
     (define-syntax vals-set! (syntax-rules () [(_ v k x) (bytevector-ieee-double-native-set! v (fx* 8 k) x)]))
     (define-syntax vals@ (syntax-rules () [(_ v k) (#3%bytevector-ieee-double-native-ref v (#3%fx* 8 k))])))
   (begin
     (define-syntax make-vals (syntax-rules () [(_ n) (make-flvector n)]))
     (define-syntax vals-set! (syntax-rules () [(_ v k x) (flvector-set! v k x)]))
     (define-syntax vals@ (syntax-rules () [(_ v k) (flvector-ref v k)]))))

  (define (local-rows rowstr colidx a lo hi)
    (let* ([base (fx@ rowstr lo)] [count (fx- (fx@ rowstr hi) base)]
           [start (make-fxvector (fx+ (fx- hi lo) 1))]
           [offs (make-fxvector count)] [vals (make-vals count)])
      (do ([j lo (fx+ j 1)]) ((fx> j hi))
        (fxvector-set! start (fx- j lo) (fx- (fx@ rowstr j) base)))
      (do ([k 0 (fx+ k 1)]) ((fx= k count))
        (fxvector-set! offs k (fx* 8 (fx@ colidx (fx+ base k))))
        (vals-set! vals k (fl@ a (fx+ base k))))
      (make-rows start offs vals)))

  ;; The sum of local row jl times the shared vector at address src, in
  ;; entry order.  On 10, two entries a turn (the same sum, bit for bit):
  ;; 8% less time a product at class A than one.
  (define-syntax row-product
    (syntax-rules ()
      [(_ rows src jl)
       (let ([start (rows-start rows)] [offs (rows-offs rows)] [vals (rows-vals rows)])
         (define-syntax term
           (syntax-rules () [(_ k) (#3%fl* (vals@ vals k) (g@ src (#3%fxvector-ref offs k)))]))
         (let ([end (#3%fxvector-ref start (#3%fx+ jl 1))])
           (by-chez
            (let loop ([k (#3%fxvector-ref start jl)] [s 0.0])
              (if (#3%fx= k end)
                  s
                  (loop (#3%fx+ k 1) (#3%fl+ s (term k)))))
            (let ([end-1 (fx- end 1)])
              (let loop ([k (#3%fxvector-ref start jl)] [s 0.0])
                (cond
                  [(fx< k end-1) (loop (fx+ k 2) (fl+ (fl+ s (term k)) (term (fx+ k 1))))]
                  [(fx= k end) s]
                  [else (fl+ s (term k))]))))))]))

  ;; q = A p on rows [lo, hi) (the member's rows); each chunk's p.q into
  ;; its slot.
  (define (product-pq! rows p q lo hi sa base)
    (for-chunks (c start end lo hi)
      (v! sa (fx+ base c)
          (let loop ([j start] [d 0.0])
            (if (fx= j end)
                d
                (let ([s (row-product rows p (fx- j lo))])
                  (v! q j s)
                  (loop (fx+ j 1) (fl+ d (fl* (v@ p j) s)))))))))

  ;; z += alpha p, r -= alpha q on [lo, hi); each chunk's r.r into its slot.
  (define (update-zr! alpha z p r q lo hi sa base)
    (for-chunks (c start end lo hi)
      (v! sa (fx+ base c)
          (let loop ([j start] [s 0.0])
            (if (fx= j end)
                s
                (let ([rj (fl- (v@ r j) (fl* alpha (v@ q j)))])
                  (v! z j (fl+ (v@ z j) (fl* alpha (v@ p j))))
                  (v! r j rj)
                  (loop (fx+ j 1) (fl+ s (fl* rj rj)))))))))

  ;; p = r + beta p on [lo, hi).
  (define (update-p! beta p r lo hi)
    (do ([j lo (fx+ j 1)]) ((fx= j hi))
      (v! p j (fl+ (v@ r j) (fl* beta (v@ p j))))))

  ;; On the member's rows [lo, hi): each chunk's partials of |x - A z|^2,
  ;; x.z and z.z into their slots.
  (define (residual-and-norms! rows x z lo hi sa chunks)
    (for-chunks (c start end lo hi)
      (let loop ([j start] [res 0.0] [xz 0.0] [zz 0.0])
        (if (fx= j end)
            (begin
              (v! sa (fx+ (fx* residual-slot chunks) c) res)
              (v! sa (fx+ (fx* xz-slot chunks) c) xz)
              (v! sa (fx+ (fx* zz-slot chunks) c) zz))
            (let* ([xj (v@ x j)] [zj (v@ z j)]
                   [e (fl- xj (row-product rows z (fx- j lo)))])
              (loop (fx+ j 1) (fl+ res (fl* e e)) (fl+ xz (fl* xj zj)) (fl+ zz (fl* zj zj))))))))

  (define (scale-into! x z c lo hi)
    (do ([j lo (fx+ j 1)]) ((fx= j hi))
      (v! x j (fl* c (v@ z j)))))

  (define (fill! v x lo hi)
    (do ([j lo (fx+ j 1)]) ((fx= j hi)) (v! v j x)))

  ;; The slots of kind (partials at address sa) summed in chunk order.
  (define (sum-slots sa kind chunks)
    (let ([base (fx* kind chunks)])
      (let loop ([c 0] [s 0.0])
        (if (fx= c chunks) s (loop (fx+ c 1) (fl+ s (v@ sa (fx+ base c))))))))

  ;; One member's whole run; returns (zeta seconds usage): the seconds of
  ;; the timed iterations between two barriers, and the allocation and CPU
  ;; time of (nas timed).
  (define (cg-member id np barrier n niter shift rowstr colidx a x z p q r partials)
    (define lo (row-split rowstr n np id))
    (define hi (row-split rowstr n np (fx+ id 1)))
    (define rows (local-rows rowstr colidx a lo hi))
    (define vectors (list x z p q r partials))
    (define chunks (chunk-count n))
    (define xa (shared-address x))
    (define za (shared-address z))
    (define pa (shared-address p))
    (define qa (shared-address q))
    (define ra (shared-address r))
    (define sa (shared-address partials))
    (define (base kind) (fx* kind chunks))
    ;; after the slots of kind are written: the sum of them all
    (define (reduce! kind)
      (barrier)
      (sum-slots sa kind chunks))
    ;; 25 CG steps for A z = x, then x = z/|z|; returns zeta.
    (define (outer-iteration)
      (init-vectors! xa za pa qa ra lo hi sa (base rho-slot))
      (let step ([k 0] [rho (reduce! rho-slot)])
        (when (fx< k cg-steps)
          (product-pq! rows pa qa lo hi sa (base pq-slot))
          (let ([alpha (fl/ rho (reduce! pq-slot))])
            (update-zr! alpha za pa ra qa lo hi sa (base rho-slot))
            (let ([rho1 (reduce! rho-slot)])
              (update-p! (fl/ rho1 rho) pa ra lo hi)
              (barrier)
              (step (fx+ k 1) rho1)))))
      (residual-and-norms! rows xa za lo hi sa chunks)
      (barrier)
      (let ([xz (sum-slots sa xz-slot chunks)] [zz (sum-slots sa zz-slot chunks)])
        (scale-into! xa za (fl/ 1.0 (flsqrt zz)) lo hi)
        (fl+ shift (fl/ 1.0 xz))))
    (fill! xa 1.0 lo hi)
    (outer-iteration)                   ; untimed: touches every page
    (fill! xa 1.0 lo hi)
    (barrier)
    (let-values ([(zeta seconds usage)
                  (timed
                   (lambda ()
                     (let loop ([it 0] [zeta 0.0])
                       (if (fx= it niter)
                           (begin (barrier) zeta)
                           (loop (fx+ it 1) (outer-iteration))))))])
      ;; the vectors stay reachable while their addresses are in use
      (for-each shared-flvector-length vectors)
      (list zeta seconds usage)))

  (define (places-run np n niter shift rowstr colidx a x z p q r partials)
    (fork-join np cg ([n n] [niter niter] [shift shift] [rowstr rowstr] [colidx colidx] [a a]
                      [x x] [z z] [p p] [q q] [r r] [partials partials])
      (with-nursery                     ; in each place's process
        (lambda ()
          (cg-member (CG-id cg) (CG-np cg) (lambda () (CGBarrier cg))
                     n niter shift rowstr colidx a x z p q r partials)))))

  (define (shared-copy-fx fxv)
    (let* ([n (fxvector-length fxv)] [v (make-shared-fxvector n)])
      (do ([i 0 (fx+ i 1)]) ((fx= i n) v) (shared-fxvector-set! v i (fxvector-ref fxv i)))))

  (define (shared-copy-fl bv)
    (let* ([n (fxquotient (bytevector-length bv) 8)] [v (make-shared-flvector n)])
      (do ([i 0 (fx+ i 1)]) ((fx= i n) v)
        (fl! v i (bytevector-ieee-double-native-ref bv (fx* 8 i))))))

  (define (cg-run class mode np)
    (check-nas-arguments 'cg-run class '(S W A) mode '(serial places threads mpi) np)
    (if (eq? mode 'mpi) (mpi-run class np) (shared-run class mode np)))

  (define (mops n nonzer niter seconds)
    (if (> seconds 0)
        (/ (* 1e-6 2 niter n
              (+ 3 (* nonzer (+ nonzer 1)) (* 25 (+ 5 (* nonzer (+ nonzer 1)))) 3))
           seconds)
        0.0))

  (define (zeta-note zeta zeta-ref)
    (format "zeta ~a, reference ~a, relative error ~a (epsilon ~a)"
            zeta zeta-ref (relative-error zeta zeta-ref) epsilon))

  ;; The process grid needs np a power of two.
  (define (mpi-run class np)
    (unless (grid-possible? np)
      (assertion-violation 'cg-run "mode mpi runs on a power-of-two number of ranks" np))
    (let* ([params (class-parameters class)]
           [n (list-ref params 0)] [nonzer (list-ref params 1)] [niter (list-ref params 2)]
           [shift (list-ref params 3)] [zeta-ref (list-ref params 4)]
           [r (cg-mpi-run (nas-mpi-members 'cg-run np) n nonzer niter shift)]
           [zeta (car r)] [seconds (cadr r)])
      (make-nas-result 'cg class 'mpi np seconds (mops n nonzer niter seconds)
                       (within-epsilon? zeta zeta-ref epsilon)
                       (list (zeta-note zeta zeta-ref)))))

  (define (shared-run class mode np)
    (let* ([params (class-parameters class)]
           [n (list-ref params 0)] [nonzer (list-ref params 1)] [niter (list-ref params 2)]
           [shift (list-ref params 3)] [zeta-ref (list-ref params 4)]
           [m (build-cg-matrix n nonzer shift)]
           [rowstr (shared-copy-fx (cg-matrix-rowstr m))]
           [colidx (shared-copy-fx (cg-matrix-colidx m))]
           [a (shared-copy-fl (cg-matrix-values m))]
           [x (make-shared-flvector n 1.0)] [z (make-shared-flvector n 0.0)]
           [p (make-shared-flvector n 0.0)] [q (make-shared-flvector n 0.0)]
           [r (make-shared-flvector n 0.0)]
           [partials (make-shared-flvector (fx* slot-kinds (chunk-count n)) 0.0)]
           [result
            (with-mode-nursery mode np
              (lambda ()
                (case mode
                  [(serial) (cg-member 0 1 void n niter shift rowstr colidx a x z p q r partials)]
                  [(threads)
                   (vector-ref (threads-spmd np (lambda (id barrier)
                                                  (cg-member id np barrier n niter shift rowstr colidx
                                                             a x z p q r partials)))
                               0)]
                  [(places)
                   (vector-ref (places-run np n niter shift rowstr colidx a x z p q r partials) 0)])))]
           [zeta (car result)] [seconds (cadr result)] [usage (caddr result)]
           [verified? (within-epsilon? zeta zeta-ref epsilon)])
      (make-nas-result
       'cg class mode np seconds (mops n nonzer niter seconds) verified?
       (list (zeta-note zeta zeta-ref) (allocation-note usage mode)))))

  (lift-places (nas cg)))
