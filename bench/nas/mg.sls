#!chezscheme
;;; NAS MG (NPB 3.4): V-cycle multigrid for the discrete Poisson problem
;;; on a periodic nx^3 grid, right-hand side v from zran3 (+1 at the 10
;;; largest and -1 at the 10 smallest of the generator's deviates); nit
;;; iterations of u = u + M r, r = v - A u; the L2 norm of the final
;;; residual is checked against the official value (relative error 1e-8).
;;; Timed: the iterations and the norms, after one untimed iteration, as
;;; in the reference.
;;;
;;; Parallel decomposition: member id of np owns a block of the interior
;;; planes (the outermost index, i3) of every level's grid.  Each operator
;;; writes its block and the i1, i2 ghosts of its planes; after a barrier
;;; the members copy the ghost planes 0 and n-1 (split by rows), and a
;;; second barrier makes them visible: that is the reference's comm3.  The
;;; prolongation writes fine planes in pairs, split by coarse plane.  The
;;; norm's partial sums, one per plane, are reduced in plane order through
;;; a shared vector.  Every point's value is the same expression whatever
;;; np, and so is the norm: results do not depend on np.
;;; serial runs the same member procedure as id 0 of 1.
;;;
;;; Mode mpi: the slab decomposition with halo exchange of (nas mg-mpi),
;;; with no shared memory.
(library (nas mg)
  (export mg-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (only (spindle) fork-join CG-id CG-np CGBarrier lift-places
                make-shared-flvector shared-flvector-ref shared-flvector-set!
                shared-flvector-length)
          (nas common) (nas timed) (nas nursery) (nas raw) (nas mg-grid) (nas mg-ops) (nas mg-mpi))

  ;; class -> (lt nit rnm2), the grid side being 2^lt
  (define (class-parameters class)
    (case class
      [(S) '(5 4 0.5307707005734e-04)]
      [(W) '(7 4 0.6467329375339e-05)]
      [(A) '(8 4 0.2433365309069e-05)]))

  (define epsilon 1e-8)

  (define (side k) (fx+ (fxsll 1 k) 2))

  ;; One member's run over the grids u[k], r[k] (k = 1 .. lt, vectors of
  ;; shared flvectors indexed by k) and v (level lt); returns (rnm2
  ;; seconds usage): the seconds of the timed part between two barriers,
  ;; and its allocation and CPU time (nas timed).
  (define (mg-member id np barrier lt nit us rs v partials)
    (define ua (vector-map (lambda (g) (and g (shared-address g))) us))
    (define ra (vector-map (lambda (g) (and g (shared-address g))) rs))
    (define va (shared-address v))
    (define (u k) (vector-ref ua k))
    (define (r k) (vector-ref ra k))
    (define (interior n) (split 1 (fx- n 1) np id))
    ;; an operator over my interior planes of a grid, then comm3 on it
    (define (produce! a n op)
      (let-values ([(lo hi) (interior n)])
        (op lo hi)
        (borders! a n lo hi))
      (barrier)
      (let-values ([(lo hi) (split 0 n np id)])
        (ghost-planes! a n lo hi))
      (barrier))
    (define (residual! k vk)
      (let ([n (side k)])
        (produce! (r k) n (lambda (lo hi) (resid! (u k) vk (r k) n lo hi)))))
    (define (smooth! k)
      (let ([n (side k)])
        (produce! (u k) n (lambda (lo hi) (psinv! (r k) (u k) n lo hi)))))
    ;; u[k] (+)= Q u[k-1], u[k] zeroed first below the top
    (define (prolong! k zero?)
      (let ([mm (side (fx- k 1))] [n (side k)])
        (let-values ([(lo hi) (split 0 (fx- mm 1) np id)])
          (when zero? (zero-planes! (u k) n (fx* 2 lo) (fx* 2 hi)))
          (interp! (u (fx- k 1)) mm (u k) n lo hi)))
      (barrier))
    (define (v-cycle!)
      (do ([k lt (fx- k 1)]) ((fx= k 1))
        (let ([nf (side k)] [nc (side (fx- k 1))])
          (produce! (r (fx- k 1)) nc (lambda (lo hi) (rprj3! (r k) nf (r (fx- k 1)) nc lo hi)))))
      (let ([n (side 1)])
        (produce! (u 1) n (lambda (lo hi)
                            (zero-planes! (u 1) n lo hi)
                            (psinv! (r 1) (u 1) n lo hi))))
      (do ([k 2 (fx+ k 1)]) ((fx= k lt))
        (prolong! k #t)
        (residual! k (r k))
        (smooth! k))
      (prolong! lt #f)
      (residual! lt va)
      (smooth! lt))
    ;; the sums of squares of r's interior planes, each member's own, then
    ;; their sum in plane order: the same floating-point sum whatever np
    (define (norm2)
      (let ([n (side lt)])
        (let-values ([(lo hi) (interior n)])
          (do ([i3 lo (fx+ i3 1)]) ((fx= i3 hi))
            (shared-flvector-set! partials i3 (sum-squares (r lt) n i3 (fx+ i3 1)))))
        (barrier)
        (let loop ([i3 1] [s 0.0])
          (if (fx= i3 (fx- n 1))
              (flsqrt (fl/ s (fixnum->flonum (fx* (fx- n 2) (fx* (fx- n 2) (fx- n 2))))))
              (loop (fx+ i3 1) (fl+ s (shared-flvector-ref partials i3)))))))
    ;; untimed: one iteration touches every grid; then u = 0 again
    (residual! lt va)
    (v-cycle!)
    (residual! lt va)
    (let ([n (side lt)])
      (let-values ([(lo hi) (split 0 n np id)])
        (zero-planes! (u lt) n lo hi)))
    (barrier)
    (let-values ([(rnm2 seconds usage)
                  (timed
                   (lambda ()
                     (residual! lt va)
                     (norm2)
                     (do ([it 0 (fx+ it 1)]) ((fx= it nit))
                       (v-cycle!)
                       (residual! lt va))
                     (let ([rnm2 (norm2)]) (barrier) rnm2)))])
      ;; the grids stay reachable while their addresses are in use
      (vector-for-each (lambda (g) (when g (shared-flvector-length g))) us)
      (vector-for-each (lambda (g) (when g (shared-flvector-length g))) rs)
      (shared-flvector-length v)
      (list rnm2 seconds usage)))

  (define (places-run np lt nit us rs v partials)
    (fork-join np cg ([lt lt] [nit nit] [us us] [rs rs] [v v] [partials partials])
      (with-nursery                     ; in each place's process
        (lambda ()
          (mg-member (CG-id cg) (CG-np cg) (lambda () (CGBarrier cg)) lt nit us rs v partials)))))

  ;; level k's grid, k = 1 .. lt, at index k (index 0 unused)
  (define (make-levels lt)
    (let ([gs (make-vector (fx+ lt 1) #f)])
      (do ([k 1 (fx+ k 1)]) ((fx> k lt) gs)
        (let ([n (side k)])
          (vector-set! gs k (make-shared-flvector (fx* n (fx* n n)) 0.0))))))

  (define (mg-run class mode np)
    (check-nas-arguments 'mg-run class '(S W A) mode '(serial places threads mpi) np)
    (if (eq? mode 'mpi) (mpi-run class np) (shared-run class mode np)))

  (define (mops nit nx seconds) (if (> seconds 0) (/ (* 58.0 nit nx nx nx 1e-6) seconds) 0.0))

  (define (rnm2-note rnm2 rnm2-ref)
    (format "rnm2 ~a, reference ~a, relative error ~a (epsilon ~a)"
            rnm2 rnm2-ref (relative-error rnm2 rnm2-ref) epsilon))

  ;; The slabs need np a power of two no larger than the top grid's planes.
  (define (mpi-run class np)
    (let* ([params (class-parameters class)]
           [lt (car params)] [nit (cadr params)] [rnm2-ref (caddr params)] [nx (fxsll 1 lt)])
      (unless (and (fx= 0 (fxand np (fx- np 1))) (fx<= np nx))
        (assertion-violation 'mg-run (format "mode mpi runs on a power-of-two number of ranks, at most ~a" nx) np))
      (let* ([r (mg-mpi-run (nas-mpi-members 'mg-run np) lt nit)] [rnm2 (car r)] [seconds (cadr r)])
        (make-nas-result 'mg class 'mpi np seconds (mops nit nx seconds)
                         (within-epsilon? rnm2 rnm2-ref epsilon)
                         (list (rnm2-note rnm2 rnm2-ref))))))

  (define (shared-run class mode np)
    (let* ([params (class-parameters class)]
           [lt (car params)] [nit (cadr params)] [rnm2-ref (caddr params)]
           [nx (fxsll 1 lt)]
           [us (make-levels lt)] [rs (make-levels lt)]
           [n (side lt)]
           [v (make-shared-flvector (fx* n (fx* n n)) 0.0)]
           [partials (make-shared-flvector n 0.0)])   ; one per plane of the top grid
      (zran3! (shared-address v) nx)
      (let* ([result
              (with-mode-nursery mode np
                (lambda ()
                  (case mode
                    [(serial) (mg-member 0 1 void lt nit us rs v partials)]
                    [(threads)
                     (vector-ref (threads-spmd np (lambda (id barrier)
                                                    (mg-member id np barrier lt nit us rs v partials)))
                                 0)]
                    [(places) (vector-ref (places-run np lt nit us rs v partials) 0)])))]
             [rnm2 (car result)] [seconds (cadr result)] [usage (caddr result)])
        (shared-flvector-length v)        ; v stays reachable while its address is in use
        (make-nas-result
         'mg class mode np seconds
         (mops nit nx seconds)
         (within-epsilon? rnm2 rnm2-ref epsilon)
         (list (rnm2-note rnm2 rnm2-ref) (allocation-note usage mode))))))

  (lift-places (nas mg)))
