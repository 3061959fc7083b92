#!chezscheme
;;; MG in its MPI decomposition (the mpi mode of (nas mg)), over fork-join's
;;; CG operations only (no shared memory): a slab of planes per member and
;;; halo exchange.
;;;
;;; With 2^k interior planes at level k and np members (a power of two),
;;; member m owns planes lo .. hi-1 = 1 + m s .. (m+1) s, s = 2^k / np, when
;;; s >= 1 and np > 1 (a distributed level), and holds only those and one
;;; ghost plane on each side (mg-grid's make-planes: the operators of (nas
;;; mg-ops) keep indexing by absolute plane).  A coarser level is
;;; replicated: every member holds and computes all of it, which costs
;;; little (fewer planes than members) and needs no messages.
;;;
;;; comm3 on a distributed level: the i1, i2 ghosts of my planes from their
;;; own interior, then my first plane to member m-1 (its upper ghost) and my
;;; last to member m+1 (its lower ghost), periodically; on a replicated
;;; level it is local.  Restriction reads the fine planes 2j-1 .. 2j+1 for
;;; coarse plane j: inside the slab and its upper ghost when the coarse
;;; level is distributed too.  Below the finest replicated level the fine
;;; level has one plane a member (2^k = np): its planes are gathered by
;;; every member (an all-to-all) into a whole grid of side np + 2 kept for
;;; that.  Prolongation writes fine planes 2i, 2i+1 from coarse plane i; a
;;; member takes the coarse planes (lo-1) div 2 .. hi div 2, whose fine
;;; planes cover its slab and both ghosts (coarse ghosts are valid after
;;; comm3) and, when the coarse level is replicated (s = 1), one plane
;;; beyond on one side, for which u holds a plane more there.
;;;
;;; v (the right-hand side) holds only my planes, no ghosts (resid reads
;;; its own points only); zran3 draws only my planes' deviates, and the
;;; global 10 largest and 10 smallest are an allreduce of each member's.
;;; The norm's per-plane sums go through an element-wise allreduce (planes
;;; not mine are 0.0) and are added in plane order: rnm2 does not depend
;;; on np.
(library (nas mg-mpi)
  (export mg-mpi-run mg-mpi-array-bytes)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (only (spindle private os memory) memcpy-to-bytevector! memcpy-from-bytevector!)
          (nas common) (nas nursery) (nas raw) (nas mg-grid) (nas mg-ops))

  (define (side k) (fx+ (fxsll 1 k) 2))

  ;; -> (rnm2 seconds array-bytes), member 0's; array-bytes: the bytes of
  ;; the grids it allocated.
  (define (mg-mpi-run members lt nit)
    (vector-ref (fork-join members cg ([lt lt] [nit nit]) (with-nursery (lambda () (mg-member cg lt nit)))) 0))

;; The layout: level k is distributed among np members when np > 1 and
  ;; it has at least np interior planes.
  (define (level-distributed? k np) (and (fx> np 1) (fx>= (fxsll 1 k) np)))

  ;; (values lo hi): member m's planes of level k
  (define (level-planes k np m)
    (if (level-distributed? k np)
        (let ([s (fxquotient (fxsll 1 k) np)])
          (values (fx+ 1 (fx* m s)) (fx+ 1 (fx* (fx+ m 1) s))))
        (values 1 (fx+ (fxsll 1 k) 1))))

  ;; (values clo chi): the coarse planes member m's prolongation to level k takes
  (define (prolonged-planes k np m)
    (let-values ([(lo hi) (level-planes k np m)])
      (values (fxquotient (fx- lo 1) 2) (fxmin (fx- (side (fx- k 1)) 1) (fx+ (fxquotient hi 2) 1)))))

  ;; (values p0 p1): the planes member m's r of level k holds
  (define (r-planes k np m)
    (if (level-distributed? k np)
        (let-values ([(lo hi) (level-planes k np m)]) (values (fx- lo 1) (fx+ hi 1)))
        (values 0 (side k))))

  ;; ... and its u, which the prolongation may write a plane beyond the ghosts
  (define (u-planes k np m)
    (let-values ([(p0 p1) (r-planes k np m)])
      (if (or (fx= k 1) (not (level-distributed? k np)))
          (values p0 p1)
          (let-values ([(clo chi) (prolonged-planes k np m)])
            (values (fxmin p0 (fx* 2 clo)) (fxmax p1 (fxmin (side k) (fx* 2 chi))))))))

  ;; ... and its v (its planes, no ghosts)
  (define (v-planes lt np m)
    (if (level-distributed? lt np) (level-planes lt np m) (values 0 (side lt))))

  ;; The level whose planes every member gathers (one a member), or #f.
  (define (gather-level lt np)
    (and (fx>= np 4) (let loop ([k 2]) (cond [(fx> k lt) #f] [(fx= (fxsll 1 k) np) k] [else (loop (fx+ k 1))]))))

  ;; The bytes of member m's grids (mg-member allocates these).
  (define (mg-mpi-array-bytes lt np m)
    (define (bytes k window)
      (let-values ([(p0 p1) (window k np m)]) (fx* 8 (fx* (fx- p1 p0) (fx* (side k) (side k))))))
    (let loop ([k 1] [total (fx+ (bytes lt (lambda (k np m) (v-planes k np m)))
                                 (let ([g (gather-level lt np)]) (if g (fx* 8 (expt (side g) 3)) 0)))])
      (if (fx> k lt) total (loop (fx+ k 1) (fx+ total (bytes k r-planes) (bytes k u-planes))))))

  (define (mg-member cg lt nit)
    (define me (CG-id cg))
    (define np (CG-np cg))
    (define (distributed? k) (level-distributed? k np))
    (define (planes-of k m) (level-planes k np m))
    (define (coarse-planes k) (prolonged-planes k np me))
    (define (r-window k) (r-planes k np me))
    (define (u-window k) (u-planes k np me))
    (define keep '())                   ; the vectors, reachable while their bases are in use
    (define array-bytes 0)
    (define (planes n p0 p1)
      (let-values ([(v base) (make-planes n p0 p1)])
        (set! keep (cons v keep))
        (set! array-bytes (fx+ array-bytes (fx* 8 (shared-flvector-length v))))
        base))
    (define (levels window)
      (let ([gs (make-vector (fx+ lt 1) #f)])
        (do ([k 1 (fx+ k 1)]) ((fx> k lt) gs)
          (let-values ([(p0 p1) (window k)]) (vector-set! gs k (planes (side k) p0 p1))))))
    (define ua (levels u-window))
    (define ra (levels r-window))
    (define va (let-values ([(p0 p1) (v-planes lt np me)]) (planes (side lt) p0 p1)))
    (define (u k) (vector-ref ua k))
    (define (r k) (vector-ref ra k))
    ;; the level whose planes are gathered, and its whole grid
    (define gathered-level (gather-level lt np))
    (define gathered (and gathered-level (let ([n (side gathered-level)]) (planes n 0 n))))
    (define (byte-address a) (fxsll a 3))   ; a base's fixnum is the address / 8
    (define (plane-bytes n) (fx* 8 (fx* n n)))
    (define (planes->bytevector a n lo hi)
      (let ([bv (make-bytevector (fx* (fx- hi lo) (plane-bytes n)))])
        (memcpy-to-bytevector! bv (fx+ (byte-address a) (fx* lo (plane-bytes n))) (bytevector-length bv))
        bv))
    (define (bytevector->planes! a n lo bv)
      (memcpy-from-bytevector! (fx+ (byte-address a) (fx* lo (plane-bytes n))) bv (bytevector-length bv)))
    ;; comm3 on grid a of level k, whose planes lo .. hi-1 I have just written
    (define (comm3! a k lo hi)
      (let ([n (side k)])
        (borders! a n lo hi)
        (if (distributed? k)
            (let ([down (fxmodulo (fx- me 1) np)] [up (fxmodulo (fx+ me 1) np)])
              (CGsend cg down (planes->bytevector a n lo (fx+ lo 1)))
              (CGsend cg up (planes->bytevector a n (fx- hi 1) hi))
              ;; from up first: with two members up = down, and its first
              ;; message is its first plane
              (bytevector->planes! a n hi (CGrecv cg up))
              (bytevector->planes! a n (fx- lo 1) (CGrecv cg down)))
            (ghost-planes! a n 0 n))))
    (define (produce! a k op)
      (let-values ([(lo hi) (planes-of k me)])
        (op lo hi)
        (comm3! a k lo hi)))
    ;; every member's planes of r at the gather level, into gathered
    (define (gather!)
      (let ([k gathered-level] [n (side gathered-level)])
        (let-values ([(lo hi) (planes-of k me)])
          (let* ([mine (planes->bytevector (r k) n lo hi)]
                 [got (CGalltoall cg (make-vector np mine))])
            (do ([m 0 (fx+ m 1)]) ((fx= m np))
              (let-values ([(mlo mhi) (planes-of k m)])
                (bytevector->planes! gathered n mlo (if (fx= m me) mine (vector-ref got m)))))
            (ghost-planes! gathered n 0 n)))))
    (define (residual! k vk)
      (let ([n (side k)])
        (produce! (r k) k (lambda (lo hi) (resid! (u k) vk (r k) n lo hi)))))
    (define (smooth! k)
      (let ([n (side k)])
        (produce! (u k) k (lambda (lo hi) (psinv! (r k) (u k) n lo hi)))))
    ;; u[k] (+)= Q u[k-1] on my planes and their ghosts, u[k] zeroed first below the top
    (define (prolong! k zero?)
      (let ([mm (side (fx- k 1))] [n (side k)])
        (let-values ([(clo chi) (coarse-planes k)])
          (when zero? (zero-planes! (u k) n (fx* 2 clo) (fxmin n (fx* 2 chi))))
          (interp! (u (fx- k 1)) mm (u k) n clo chi))))
    (define (v-cycle!)
      (do ([k lt (fx- k 1)]) ((fx= k 1))
        (let ([nf (side k)] [nc (side (fx- k 1))])
          (let ([fine (if (eqv? k gathered-level) (begin (gather!) gathered) (r k))])
            (produce! (r (fx- k 1)) (fx- k 1) (lambda (lo hi) (rprj3! fine nf (r (fx- k 1)) nc lo hi))))))
      (let ([n (side 1)])
        (produce! (u 1) 1 (lambda (lo hi)
                            (zero-planes! (u 1) n lo hi)
                            (psinv! (r 1) (u 1) n lo hi))))
      (do ([k 2 (fx+ k 1)]) ((fx= k lt))
        (prolong! k #t)
        (residual! k (r k))
        (smooth! k))
      (prolong! lt #f)
      (residual! lt va)
      (smooth! lt))
    (define (norm2)
      (let* ([n (side lt)] [sums (make-vector n 0.0)])
        (let-values ([(lo hi) (planes-of lt me)])
          (do ([i3 lo (fx+ i3 1)]) ((fx= i3 hi))
            (vector-set! sums i3 (sum-squares (r lt) n i3 (fx+ i3 1)))))
        (let ([sums (if (distributed? lt) (CGallreduce cg + sums) sums)])
          (let loop ([i3 1] [s 0.0])
            (if (fx= i3 (fx- n 1))
                (flsqrt (fl/ s (fixnum->flonum (fx* (fx- n 2) (fx* (fx- n 2) (fx- n 2))))))
                (loop (fx+ i3 1) (fl+ s (vector-ref sums i3))))))))
    ;; v: zran3 on my planes, the charges those of the global extremes
    (define (right-hand-side!)
      (let ([nx (fxsll 1 lt)] [n (side lt)])
        (if (distributed? lt)
            (let-values ([(lo hi) (planes-of lt me)])
              (let* ([extremes (call-with-values (lambda () (zran3-extremes nx lo hi)) cons)]
                     [global (CGallreduce cg merge-extremes extremes)]
                     [mine? (lambda (e) (and (cdr e) (fx<= (fx* lo (plane-bytes n)) (cdr e))
                                             (fx< (cdr e) (fx* hi (plane-bytes n)))))])
                (zran3-charges! va (filter mine? (car global)) (filter mine? (cdr global)))
                (borders! va n lo hi)))
            (zran3! va nx))))
    (right-hand-side!)
    ;; untimed: one iteration touches every grid; then u = 0 again
    (residual! lt va)
    (v-cycle!)
    (residual! lt va)
    (let-values ([(p0 p1) (u-window lt)]) (zero-planes! (u lt) (side lt) p0 p1))
    (CGBarrier cg)
    (let-values ([(rnm2 seconds)
                  (nas-seconds
                    (lambda ()
                      (residual! lt va)
                      (norm2)
                      (do ([it 0 (fx+ it 1)]) ((fx= it nit))
                        (v-cycle!)
                        (residual! lt va))
                      (let ([rnm2 (norm2)]) (CGBarrier cg) rnm2)))])
      (for-each shared-flvector-length keep)
      (and (fx= me 0) (list rnm2 seconds array-bytes))))

  ;; (large . small) of two sets of members (zran3-extremes' lists): the
  ;; 10 largest and the 10 smallest of their union
  (define (merge-extremes x y)
    (define (best10 better? a b)
      (list-head (sort (lambda (e f) (better? (car e) (car f))) (append a b)) 10))
    (cons (best10 fl> (car x) (car y)) (best10 fl< (cdr x) (cdr y))))

  (lift-places (nas mg-mpi)))
