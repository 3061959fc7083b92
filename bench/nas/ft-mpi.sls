#!chezscheme
;;; FT in its MPI decomposition (the mpi mode of (nas ft)), over fork-join's
;;; CG operations only (no shared memory): NPB's slab layout with
;;; transposes.
;;;
;;; Member m owns the z planes [k0, k1) for the x and y transforms and the
;;; y slabs [j0, j1) for the z transforms (the blocks of (nas ft-passes)),
;;; and holds only those: its arrays are (nas ft-passes)'s own views, about
;;; 2/np of the whole array's size (u0's slabs, and one vector for u0's
;;; planes, u1's slabs and u1's planes in turn).  Between the two passes an
;;; all-to-all transposes the array: member s sends member d the rows
;;; (k, j) with k in s's planes and j in d's slabs (forward: from the plane
;;; view of u0 to the slab view), or k in d's planes and j in s's slabs
;;; (back, after the inverse z transforms: from u1's slab view to its plane
;;; view); for each k such rows are consecutive in both views, so a block
;;; is one copy per plane.  Every block, a member's own included, is copied
;;; out before any is copied in, which lets the source and destination
;;; views share a vector.  The checksum sums of each step go through an
;;; element-wise allreduce (a slot per member, the others 0.0), so every
;;; member has them all.
(library (nas ft-mpi)
  (export ft-mpi-run ft-mpi-array-bytes)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (only (spindle unsafe) unsafe-shared-vector->bytevector! unsafe-bytevector->shared-vector!
                unsafe-shared-vector-address)
          (only (spindle private os memory) memmove!)
          (nas common) (nas ft-passes))

  ;; -> (seconds . sums), member 0's: sums[2 (m + np t)] and the next
  ;; slot are member m's (re, im) at step t.
  (define (ft-mpi-run members size young-generation-bytes)
    (vector-ref (fork-join members cg ([size size] [young young-generation-bytes])
                  (ft-member cg size young))
                0))

  ;; The bytes of member id's arrays.
  (define (ft-mpi-array-bytes size np id)
    (let-values ([(slabs other) (ft-own-array-doubles size np id)])
      (fx* 8 (fx+ slabs other))))

  ;; Member id's block of n items: (values start end) (ft-passes's rule).
  (define (share n np id)
    (let* ([q (fxquotient n np)] [r (fxremainder n np)]
           [start (fx+ (fx* id q) (fxmin id r))])
      (values start (fx+ start q (if (fx< id r) 1 0)))))

  (define (ft-member cg size young)
    (let* ([id (CG-id cg)] [np (CG-np cg)]
           [nx (vector-ref size 0)] [ny (vector-ref size 1)] [nz (vector-ref size 2)]
           [niter (vector-ref size 3)]
           [me (make-ft-member/own id np size)]
           [sums (make-vector (fx* 2 (fx* np niter)) 0.0)])
      (define (planes m) (share nz np m))
      (define (slabs m) (share ny np m))
      ;; rows j in [ja, jb) of planes k in [ka, kb) of u, row (ja, k) at
      ;; element (start k), as one bytevector, and back
      (define (block u start ka kb ja jb)
        (let* ([piece (fx* 16 (fx* nx (fx- jb ja)))]
               [bv (make-bytevector (fx* piece (fx- kb ka)))])
          (do ([k ka (fx+ k 1)] [o 0 (fx+ o piece)]) ((fx= k kb) bv)
            (unsafe-shared-vector->bytevector! u (fx* 16 (start k)) bv o piece))))
      (define (unblock! u start ka kb ja jb bv)
        (let ([piece (fx* 16 (fx* nx (fx- jb ja)))])
          (do ([k ka (fx+ k 1)] [o 0 (fx+ o piece)]) ((fx= k kb))
            (unsafe-bytevector->shared-vector! bv o u (fx* 16 (start k)) piece))))
      (define (plane-start ja) (lambda (k) (fx+ (ft-plane-row me k) (fx* nx ja))))
      (define (slab-start ja) (lambda (k) (ft-slab-row me ja k)))
      ;; (ranges s d) -> (values ka kb ja jb), the rows s sends d; from the
      ;; view (from, from-start) to (to, to-start).  My own block is copied
      ;; directly between two vectors; within one (the back transpose) it
      ;; is staged first unless np = 1, where the two views are the same.
      (define (transpose! ranges from from-start to to-start)
        (let-values ([(ka kb ja jb) (ranges id id)])
          (let* ([staged (and (eq? from to) (fx> np 1) (block from (from-start ja) ka kb ja jb))]
                 [got (CGalltoall cg (let ([out (make-vector np #f)])
                                       (do ([d 0 (fx+ d 1)]) ((fx= d np) out)
                                         (unless (fx= d id)
                                           (vector-set! out d
                                             (let-values ([(ka kb ja jb) (ranges id d)])
                                               (block from (from-start ja) ka kb ja jb)))))))])
            (do ([s 0 (fx+ s 1)]) ((fx= s np))
              (unless (fx= s id)
                (let-values ([(ka kb ja jb) (ranges s id)])
                  (unblock! to (to-start ja) ka kb ja jb (vector-ref got s)))))
            (cond
              [staged (unblock! to (to-start ja) ka kb ja jb staged)]
              [(not (eq? from to))
               (let ([piece (fx* 16 (fx* nx (fx- jb ja)))] [fs (from-start ja)] [ts (to-start ja)])
                 (do ([k ka (fx+ k 1)]) ((fx= k kb))
                   (memmove! (fx+ (unsafe-shared-vector-address to) (fx* 16 (ts k)))
                             (fx+ (unsafe-shared-vector-address from) (fx* 16 (fs k)))
                             piece)))]))))
      (define (forward-ranges s d)
        (let-values ([(ka kb) (planes s)] [(ja jb) (slabs d)]) (values ka kb ja jb)))
      (define (back-ranges s d)
        (let-values ([(ka kb) (planes d)] [(ja jb) (slabs s)]) (values ka kb ja jb)))
      (define (forward! tables)
        (forward-planes! me tables)
        (transpose! forward-ranges (ft-member-plane-u0 me) plane-start (ft-member-slab-u0 me) slab-start)
        (forward-slabs! me tables))
      (forward! (make-ft-tables size))   ; untimed, as in the reference
      (collect-trip-bytes young)
      (CGBarrier cg)
      (let-values ([(v seconds)
                    (nas-seconds
                      (lambda ()
                        (let ([tables (make-ft-tables size)])
                          (forward! tables)
                          (do ([t 0 (fx+ t 1)]) ((fx= t niter))
                            (step-slabs! me tables)
                            (transpose! back-ranges (ft-member-slab-u1 me) slab-start (ft-member-plane-u1 me) plane-start)
                            (let-values ([(re im) (step-planes! me tables)])
                              (let ([mine (make-vector (fx* 2 np) 0.0)])
                                (vector-set! mine (fx* 2 id) re)
                                (vector-set! mine (fx+ 1 (fx* 2 id)) im)
                                (let ([all (CGallreduce cg + mine)])
                                  (do ([i 0 (fx+ i 1)]) ((fx= i (fx* 2 np)))
                                    (vector-set! sums (fx+ (fx* 2 (fx* np t)) i) (vector-ref all i))))))))))])
        (shared-flvector-length (ft-member-slab-u0 me)) (shared-flvector-length (ft-member-plane-u0 me))
        (and (fx= id 0) (cons seconds sums)))))

  (lift-places (nas ft-mpi)))
