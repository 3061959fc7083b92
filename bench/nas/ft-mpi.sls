#!chezscheme
;;; FT in its MPI decomposition (the mpi mode of (nas ft)), over fork-join's
;;; CG operations only (no shared memory): NPB's slab layout with
;;; transposes.
;;;
;;; Member m owns the z planes [k0, k1) for the x and y transforms and the
;;; y slabs [j0, j1) for the z transforms (the blocks of (nas ft-passes)).
;;; Between the two passes an all-to-all transposes the array: member s
;;; sends member d the rows (k, j) with k in s's planes and j in d's slabs
;;; (forward), or k in d's planes and j in s's slabs (back, after the
;;; inverse z transforms); for each k such rows are consecutive, so a
;;; block is one copy per plane.  Each member keeps its arrays the full
;;; size, so that the passes of (nas ft-passes) run on it unchanged, but
;;; only its planes and slabs are ever written or read there.  The
;;; checksum sums of each step go through an element-wise allreduce (a
;;; slot per member, the others 0.0), so every member has them all.
(library (nas ft-mpi)
  (export ft-mpi-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (only (spindle unsafe) unsafe-shared-vector->bytevector! unsafe-bytevector->shared-vector!)
          (nas common) (nas ft-passes))

  ;; -> (seconds . sums), member 0's: sums[2 (m + np t)] and the next
  ;; slot are member m's (re, im) at step t.
  (define (ft-mpi-run members size young-generation-bytes)
    (vector-ref (fork-join members cg ([size size] [young young-generation-bytes])
                  (ft-member cg size young))
                0))

  ;; Member id's block of n items: (values start end) (ft-passes's rule).
  (define (share n np id)
    (let* ([q (fxquotient n np)] [r (fxremainder n np)]
           [start (fx+ (fx* id q) (fxmin id r))])
      (values start (fx+ start q (if (fx< id r) 1 0)))))

  (define (ft-member cg size young)
    (let* ([id (CG-id cg)] [np (CG-np cg)]
           [nx (vector-ref size 0)] [ny (vector-ref size 1)] [nz (vector-ref size 2)]
           [niter (vector-ref size 3)]
           [words (fx* 2 (fx* nx (fx* ny nz)))]
           [u0 (make-shared-flvector words 0.0)] [u1 (make-shared-flvector words 0.0)]
           [me (make-ft-member id np size u0 u1)]
           [sums (make-vector (fx* 2 (fx* np niter)) 0.0)])
      (define (planes m) (share nz np m))
      (define (slabs m) (share ny np m))
      ;; the rows k in [ka, kb), j in [ja, jb) of u, as one bytevector
      (define (block u ka kb ja jb)
        (let* ([row (fx* 16 nx)] [piece (fx* row (fx- jb ja))]
               [bv (make-bytevector (fx* piece (fx- kb ka)))])
          (do ([k ka (fx+ k 1)] [o 0 (fx+ o piece)]) ((fx= k kb) bv)
            (unsafe-shared-vector->bytevector! u (fx* row (fx+ (fx* k ny) ja)) bv o piece))))
      (define (unblock! u ka kb ja jb bv)
        (let* ([row (fx* 16 nx)] [piece (fx* row (fx- jb ja))])
          (do ([k ka (fx+ k 1)] [o 0 (fx+ o piece)]) ((fx= k kb))
            (unsafe-bytevector->shared-vector! bv o u (fx* row (fx+ (fx* k ny) ja)) piece))))
      ;; ranges: (ranges s d) -> (values ka kb ja jb), the rows s sends d
      (define (transpose! u ranges)
        (let ([got (CGalltoall cg (let ([out (make-vector np)])
                                    (do ([d 0 (fx+ d 1)]) ((fx= d np) out)
                                      (vector-set! out d
                                        (if (fx= d id) #f
                                            (let-values ([(ka kb ja jb) (ranges id d)]) (block u ka kb ja jb)))))))])
          (do ([s 0 (fx+ s 1)]) ((fx= s np))
            (unless (fx= s id)
              (let-values ([(ka kb ja jb) (ranges s id)]) (unblock! u ka kb ja jb (vector-ref got s)))))))
      (define (forward-ranges s d)
        (let-values ([(ka kb) (planes s)] [(ja jb) (slabs d)]) (values ka kb ja jb)))
      (define (back-ranges s d)
        (let-values ([(ka kb) (planes d)] [(ja jb) (slabs s)]) (values ka kb ja jb)))
      (define (forward! tables)
        (forward-planes! me tables)
        (transpose! u0 forward-ranges)
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
                            (transpose! u1 back-ranges)
                            (let-values ([(re im) (step-planes! me tables)])
                              (let ([mine (make-vector (fx* 2 np) 0.0)])
                                (vector-set! mine (fx* 2 id) re)
                                (vector-set! mine (fx+ 1 (fx* 2 id)) im)
                                (let ([all (CGallreduce cg + mine)])
                                  (do ([i 0 (fx+ i 1)]) ((fx= i (fx* 2 np)))
                                    (vector-set! sums (fx+ (fx* 2 (fx* np t)) i) (vector-ref all i))))))))))])
        (shared-flvector-length u0) (shared-flvector-length u1)
        (and (fx= id 0) (cons seconds sums)))))

  (lift-places (nas ft-mpi)))
