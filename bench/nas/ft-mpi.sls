#!chezscheme
;;; FT in its MPI decomposition (the mpi mode of (nas ft)), no shared
;;; memory: NPB's slab layout with transposes.
;;;
;;; Member m owns the z planes [k0, k1) for the x and y transforms and the
;;; y slabs [j0, j1) for the z transforms (the blocks of (nas ft-passes)),
;;; and holds only those: its arrays are (nas ft-passes)'s own views (u0's
;;; slabs, and one vector for u0's planes, u1's slabs and u1's planes in
;;; turn) and a buffer for the transposes, each about 1/np of the whole
;;; array.  Between the two passes an all-to-all transposes the array:
;;; member s sends member d the rows (k, j) with k in s's planes and j in
;;; d's slabs (forward: from u0's plane view to its slab view), or k in d's
;;; planes and j in s's slabs (back, after the inverse z transforms: from
;;; u1's slab view to its plane view).  Such a block is consecutive in the
;;; slab view, so MPI reads or writes it there in place; in the plane view
;;; it is a piece of each plane, copied to or from the buffer.  Over ranks
;;; the exchange is one MPI_Alltoallv between the shared vectors (no other
;;; copy); over places, CGalltoall of bytevectors.  At np 1 the two views
;;; have the same layout: the forward transpose is one copy and the back
;;; one nothing.  The checksum sums of each step go through an
;;; element-wise allreduce (a slot per member, the others 0.0), so every
;;; member has them all.
(library (nas ft-mpi)
  (export ft-mpi-run ft-mpi-array-bytes)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (only (spindle unsafe) unsafe-shared-vector->bytevector! unsafe-bytevector->shared-vector!
                unsafe-shared-vector-address)
          (only (spindle private os memory) memmove!)
          (only (spindle mpi) rmpi-comm? rmpi-alltoallv)
          (nas common) (nas ft-passes))

  ;; -> (seconds . sums), member 0's: sums[2 (m + np t)] and the next
  ;; slot are member m's (re, im) at step t.
  (define (ft-mpi-run members size young-generation-bytes)
    (vector-ref (fork-join members cg ([size size] [young young-generation-bytes] [ranks? (rmpi-comm? members)])
                  (ft-member cg size young ranks?))
                0))

  ;; The bytes of member id's arrays: its own (ft-passes) and the
  ;; transposes' buffer (none at np 1).
  (define (ft-mpi-array-bytes size np id)
    (let-values ([(slabs other) (ft-own-array-doubles size np id)])
      (fx* 8 (fx+ slabs (fx* other (if (fx> np 1) 2 1))))))

  ;; Member id's block of n items: (values start end) (ft-passes's rule).
  (define (share n np id)
    (let* ([q (fxquotient n np)] [r (fxremainder n np)]
           [start (fx+ (fx* id q) (fxmin id r))])
      (values start (fx+ start q (if (fx< id r) 1 0)))))

  ;; ranks?: the members are MPI ranks (the world's)
  (define (ft-member cg size young ranks?)
    (let* ([id (CG-id cg)] [np (CG-np cg)] [comm (and ranks? (fork-join-members #f))]
           [nx (vector-ref size 0)] [ny (vector-ref size 1)] [nz (vector-ref size 2)]
           [niter (vector-ref size 3)]
           [me (make-ft-member/own id np size)]
           [sums (make-vector (fx* 2 (fx* np niter)) 0.0)])
      (define (planes m) (share nz np m))
      (define (slabs m) (share ny np m))
      (define (address v element) (fx+ (unsafe-shared-vector-address v) (fx* 16 element)))
      (define (width m) (let-values ([(ja jb) (slabs m)]) (fx- jb ja)))
      (define (counts f) (let ([v (make-fxvector np)]) (do ([m 0 (fx+ m 1)]) ((fx= m np) v) (fxvector-set! v m (f m)))))
      (define k0 (ft-member-k0 me)) (define k1 (ft-member-k1 me)) (define j0 (ft-member-j0 me))
      (define plane-view (ft-member-plane-u0 me))   ; u0's and u1's plane views share it
      ;; Transposes' counts and displacements, in doubles: member m's block
      ;; of my planes (or m's planes of my slabs) is its rows k-major, row
      ;; (j, k) at ((k - ka) (jb - ja) + j - ja) nx in the block; those of
      ;; all members, in member order, make the buffer (sends of the forward
      ;; transpose, receives of the back one) and the slab views (receives,
      ;; sends): within the slab view they lie in place.
      (define mine (counts (lambda (m) (fx* 2 (fx* nx (fx* (fx- k1 k0) (width m)))))))
      (define mine-at (counts (lambda (m) (let-values ([(ja jb) (slabs m)]) (fx* 2 (fx* nx (fx* (fx- k1 k0) ja)))))))
      (define theirs (counts (lambda (m) (let-values ([(ka kb) (planes m)]) (fx* 2 (fx* nx (fx* (fx- kb ka) (width id))))))))
      (define theirs-at (counts (lambda (m) (let-values ([(ka kb) (planes m)]) (fx* 2 (fx* nx (fx* ka (width id))))))))
      (define buffer (and (fx> np 1) (let-values ([(slab-doubles other) (ft-own-array-doubles size np id)])
                                      (make-shared-flvector other 0.0))))
      ;; between the plane view and the buffer (to-buffer?) or back
      (define (plane-blocks! to-buffer?)
        (do ([m 0 (fx+ m 1)]) ((fx= m np))
          (let-values ([(ja jb) (slabs m)])
            (let ([piece (fx* 16 (fx* nx (fx- jb ja)))])
              (do ([k k0 (fx+ k 1)]
                   [b (fx* 8 (fxvector-ref mine-at m)) (fx+ b piece)])
                  ((fx= k k1))
                (let ([p (address plane-view (fx+ (ft-plane-row me k) (fx* nx ja)))]
                      [b (fx+ (unsafe-shared-vector-address buffer) b)])
                  (if to-buffer? (memmove! b p piece) (memmove! p b piece))))))))
      ;; the all-to-all of blocks (sc, sd) of out to blocks (rc, rd) of in:
      ;; over ranks in place (MPI_Alltoallv on the shared vectors), over
      ;; places as CGalltoall's bytevectors
      (define (exchange! out sc sd in rc rd)
        (if comm
            (rmpi-alltoallv comm out sc sd in rc rd)
            (let ([got (CGalltoall cg (let ([v (make-vector np #f)])
                                        (do ([d 0 (fx+ d 1)]) ((fx= d np) v)
                                          (unless (fx= d id)
                                            (let ([bv (make-bytevector (fx* 8 (fxvector-ref sc d)))])
                                              (unsafe-shared-vector->bytevector! out (fx* 8 (fxvector-ref sd d)) bv 0 (bytevector-length bv))
                                              (vector-set! v d bv))))))])
              (do ([s 0 (fx+ s 1)]) ((fx= s np))
                (if (fx= s id)
                    (memmove! (fx+ (unsafe-shared-vector-address in) (fx* 8 (fxvector-ref rd s)))
                              (fx+ (unsafe-shared-vector-address out) (fx* 8 (fxvector-ref sd s)))
                              (fx* 8 (fxvector-ref sc s)))
                    (let ([bv (vector-ref got s)])
                      (unsafe-bytevector->shared-vector! bv 0 in (fx* 8 (fxvector-ref rd s)) (bytevector-length bv))))))))
      ;; u0's planes to its slabs; at np 1 the views have the same layout
      (define (forward-transpose!)
        (if (fx= np 1)
            (memmove! (address (ft-member-slab-u0 me) 0) (address plane-view 0) (fx* 16 (fx* nx (fx* ny nz))))
            (begin
              (plane-blocks! #t)
              (exchange! buffer mine mine-at (ft-member-slab-u0 me) theirs theirs-at))))
      ;; u1's slabs to its planes (one vector; at np 1 nothing to do)
      (define (back-transpose!)
        (when (fx> np 1)
          (exchange! (ft-member-slab-u1 me) theirs theirs-at buffer mine mine-at)
          (plane-blocks! #f)))
      (define (forward! tables)
        (forward-planes! me tables)
        (forward-transpose!)
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
                            (back-transpose!)
                            (let-values ([(re im) (step-planes! me tables)])
                              (let ([partial (make-vector (fx* 2 np) 0.0)])
                                (vector-set! partial (fx* 2 id) re)
                                (vector-set! partial (fx+ 1 (fx* 2 id)) im)
                                (let ([all (CGallreduce cg + partial)])
                                  (do ([i 0 (fx+ i 1)]) ((fx= i (fx* 2 np)))
                                    (vector-set! sums (fx+ (fx* 2 (fx* np t)) i) (vector-ref all i))))))))))])
        (shared-flvector-length (ft-member-slab-u0 me)) (shared-flvector-length plane-view)
        (when buffer (shared-flvector-length buffer))
        (and (fx= id 0) (cons seconds sums)))))

  (lift-places (nas ft-mpi)))
