#!chezscheme
;;; MG in its MPI decomposition (the mpi mode of (nas mg)), over fork-join's
;;; CG operations only (no shared memory): a slab of planes per member and
;;; halo exchange.
;;;
;;; Every member keeps whole grids of its own (the operators of (nas
;;; mg-ops) index them by absolute plane), but at level k it computes only
;;; its slab: with 2^k interior planes and np members (a power of two),
;;; member m owns planes 1 + m s .. (m+1) s, s = 2^k / np, when s >= 1 and
;;; np > 1; a coarser level is replicated: every member computes all of
;;; it, which costs little (fewer planes than members) and needs no
;;; messages.  comm3 on a distributed level: the i1, i2 ghosts of my planes
;;; from their own interior, then my first plane to member m-1 (its upper
;;; ghost) and my last to member m+1 (its lower ghost), periodically; on a
;;; replicated level it is local.  Restriction reads the fine planes 2j-1
;;; .. 2j+1 for coarse plane j: inside the slab and its upper ghost when the
;;; coarse level is distributed too; for a replicated coarse level the fine
;;; slabs are first gathered by every member (an all-to-all).
;;; Prolongation writes fine planes 2i, 2i+1 from coarse plane i; a member
;;; takes the coarse planes (lo-1) div 2 .. hi div 2, whose fine planes
;;; cover its slab and both ghosts (coarse ghosts are valid after comm3).
;;; The norm's per-plane sums go through an element-wise allreduce (planes
;;; not mine are 0.0) and are added in plane order: rnm2 does not depend
;;; on np.
(library (nas mg-mpi)
  (export mg-mpi-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (only (spindle unsafe) unsafe-shared-vector-address)
          (only (spindle private os memory) memcpy-to-bytevector! memcpy-from-bytevector!)
          (nas common) (nas nursery) (nas raw) (nas mg-grid) (nas mg-ops))

  (define (side k) (fx+ (fxsll 1 k) 2))

  ;; -> (rnm2 seconds), member 0's.
  (define (mg-mpi-run members lt nit)
    (vector-ref (fork-join members cg ([lt lt] [nit nit]) (with-nursery (lambda () (mg-member cg lt nit)))) 0))

  (define (mg-member cg lt nit)
    (define me (CG-id cg))
    (define np (CG-np cg))
    (define (level-grids)
      (let ([gs (make-vector (fx+ lt 1) #f)])
        (do ([k 1 (fx+ k 1)]) ((fx> k lt) gs)
          (let ([n (side k)]) (vector-set! gs k (make-shared-flvector (fx* n (fx* n n)) 0.0))))))
    (define ug (level-grids))
    (define rg (level-grids))
    (define vg (let ([n (side lt)]) (make-shared-flvector (fx* n (fx* n n)) 0.0)))
    (define (u k) (shared-address (vector-ref ug k)))
    (define (r k) (shared-address (vector-ref rg k)))
    (define va (shared-address vg))
    (define (byte-address a) (fxsll a 3))   ; shared-address's fixnum is the address / 8
    (define (distributed? k) (and (fx> np 1) (fx>= (fxsll 1 k) np)))
    ;; (values lo hi): member m's planes of level k
    (define (planes-of k m)
      (if (distributed? k)
          (let ([s (fxquotient (fxsll 1 k) np)])
            (values (fx+ 1 (fx* m s)) (fx+ 1 (fx* (fx+ m 1) s))))
          (values 1 (fx+ (fxsll 1 k) 1))))
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
    ;; every member's slab of grid a (level k), then its ghost planes
    (define (gather! a k)
      (let-values ([(lo hi) (planes-of k me)])
        (let ([n (side k)]
              [got (CGalltoall cg (make-vector np (planes->bytevector a (side k) lo hi)))])
          (do ([m 0 (fx+ m 1)]) ((fx= m np))
            (unless (fx= m me)
              (let-values ([(mlo mhi) (planes-of k m)])
                (bytevector->planes! a n mlo (vector-ref got m)))))
          (ghost-planes! a n 0 n))))
    (define (residual! k vk)
      (let ([n (side k)])
        (produce! (r k) k (lambda (lo hi) (resid! (u k) vk (r k) n lo hi)))))
    (define (smooth! k)
      (let ([n (side k)])
        (produce! (u k) k (lambda (lo hi) (psinv! (r k) (u k) n lo hi)))))
    ;; u[k] (+)= Q u[k-1] on my planes and their ghosts, u[k] zeroed first below the top
    (define (prolong! k zero?)
      (let ([mm (side (fx- k 1))] [n (side k)])
        (let-values ([(lo hi) (planes-of k me)])
          (let ([clo (fxquotient (fx- lo 1) 2)] [chi (fxmin (fx- mm 1) (fx+ (fxquotient hi 2) 1))])
            (when zero? (zero-planes! (u k) n (fx* 2 clo) (fxmin n (fx* 2 chi))))
            (interp! (u (fx- k 1)) mm (u k) n clo chi)))))
    (define (v-cycle!)
      (do ([k lt (fx- k 1)]) ((fx= k 1))
        (let ([nf (side k)] [nc (side (fx- k 1))])
          (when (and (distributed? k) (not (distributed? (fx- k 1)))) (gather! (r k) k))
          (produce! (r (fx- k 1)) (fx- k 1) (lambda (lo hi) (rprj3! (r k) nf (r (fx- k 1)) nc lo hi)))))
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
    (zran3! va (fxsll 1 lt))
    ;; untimed: one iteration touches every grid; then u = 0 again
    (residual! lt va)
    (v-cycle!)
    (residual! lt va)
    (let ([n (side lt)]) (zero-planes! (u lt) n 0 n))
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
      ;; the grids stay reachable while their addresses are in use
      (vector-for-each (lambda (g) (when g (shared-flvector-length g))) ug)
      (vector-for-each (lambda (g) (when g (shared-flvector-length g))) rg)
      (shared-flvector-length vg)
      (and (fx= me 0) (list rnm2 seconds))))

  (lift-places (nas mg-mpi)))
