#!chezscheme
;;; CG in its MPI decomposition (the mpi mode of (nas cg)), over fork-join's
;;; CG operations only (no shared memory): NPB's process grid.
;;;
;;; np = nprows * npcols members (np a power of two; npcols = nprows or
;;; 2 nprows), member m at grid row m div npcols, column m mod npcols.  The
;;; n rows are cut into nprows row blocks; the columns into npcols column
;;; blocks: with a square grid column block c is row block c, otherwise
;;; the two halves of row block R are column blocks 2R and 2R+1.  Member
;;; (r, c) holds the matrix block (row block r, column block c) and the
;;; column-block-c pieces of x, z, p, q and r (every member of grid column
;;; c holds the same values: they do the same arithmetic on them).
;;;
;;; q = A p: each member multiplies its block by its piece of p; the
;;; products are summed across the grid row (the row reduction: log2
;;; npcols exchanges with the member whose column differs in one bit),
;;; giving every member of row r the row-block-r piece of q; then member
;;; (r, c) sends its part of that to (c div k, k r + c mod k) (k =
;;; npcols / nprows; the transpose), which needs exactly that part as its
;;; column-block piece, and receives its own piece from the same member
;;; (the map is its own inverse).  A dot product is summed the same way across the
;;; grid row (each row's pieces cover the vector once).  Exchanges add
;;; mine + theirs in both members, so both get the same bits.
(library (nas cg-mpi)
  (export cg-mpi-run grid-possible?)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (nas common) (nas nursery) (nas cg-matrix))

  (define cg-steps 25)

  (define-syntax d@ (syntax-rules () [(_ v j) (#3%bytevector-ieee-double-native-ref v (#3%fx* 8 j))]))
  (define-syntax d! (syntax-rules () [(_ v j x) (#3%bytevector-ieee-double-native-set! v (#3%fx* 8 j) x)]))

  (define (grid-possible? np) (and (fx> np 0) (fx= 0 (fxand np (fx- np 1)))))

  ;; np (a power of two) -> (values nprows npcols).
  (define (grid-shape np)
    (let ([rows (fxsll 1 (fxquotient (fx- (fxlength np) 1) 2))])
      (values rows (fxquotient np rows))))

  ;; [start, end) of share i of [lo, hi) in k shares.
  (define (share lo hi k i)
    (let* ([n (fx- hi lo)] [q (fxquotient n k)] [r (fxremainder n k)]
           [start (fx+ lo (fx* i q) (fxmin i r))])
      (values start (fx+ start q (if (fx< i r) 1 0)))))

  ;; -> (zeta seconds), member 0's.
  (define (cg-mpi-run members n nonzer niter shift)
    (vector-ref (fork-join members cg ([n n] [nonzer nonzer] [niter niter] [shift shift])
                  (with-nursery (lambda () (cg-member cg n nonzer niter shift))))
                0))

  (define (cg-member cg n nonzer niter shift)
    (let*-values ([(me) (CG-id cg)] [(np) (CG-np cg)]
                  [(nprows npcols) (grid-shape np)]
                  [(k) (fxquotient npcols nprows)]
                  [(row col) (values (fxquotient me npcols) (fxremainder me npcols))]
                  [(r0 r1) (share 0 n nprows row)]
                  [(c0 c1) (let-values ([(R0 R1) (share 0 n nprows (fxquotient col k))])
                             (share R0 R1 k (fxremainder col k)))]
                  [(nr nc) (values (fx- r1 r0) (fx- c1 c0))]
                  [(start cols vals) (local-block (build-cg-matrix n nonzer shift) r0 r1 c0 c1)]
                  ;; the transpose partner: it needs my part of the row block,
                  ;; and I need its part (the map is its own inverse)
                  [(to) (fx+ (fx* (fxquotient col k) npcols) (fx+ (fx* k row) (fxremainder col k)))]
                  ;; my part of the row block, for `to`: its column piece
                  [(p0 p1) (let ([tc (fxremainder to npcols)])
                             (let-values ([(R0 R1) (share 0 n nprows row)])
                               (share R0 R1 k (fxremainder tc k))))])
      (define (vec) (make-bytevector (fx* 8 nc) 0))
      (define x (vec)) (define z (vec)) (define p (vec)) (define q (vec)) (define rr (vec))
      (define w (make-bytevector (fx* 8 nr) 0))
      ;; sums bv (doubles) element-wise across my grid row, in place
      (define (row-sum! bv)
        (let loop ([bit 1])
          (when (fx< bit npcols)
            (let ([partner (fx+ (fx* row npcols) (fxxor col bit))])
              (CGsend cg partner bv)
              (let ([theirs (CGrecv cg partner)])
                (do ([j 0 (fx+ j 1)]) ((fx= j (fxquotient (bytevector-length bv) 8)))
                  (d! bv j (fl+ (d@ bv j) (d@ theirs j))))))
            (loop (fxsll bit 1)))))
      ;; the exchange buffers, made once (a send copies its message)
      (define one-sum (make-bytevector 8))
      (define part (make-bytevector (fx* 8 (fx- p1 p0))))
      ;; x (a partial dot product) summed across the row
      (define (row-total x)
        (d! one-sum 0 x)
        (row-sum! one-sum)
        (d@ one-sum 0))
      ;; into out (column piece): A v; -> v.out, this member's part
      (define (product! v out)
        (multiply! start cols vals v w nr)
        (row-sum! w)
        (bytevector-copy! w (fx* 8 (fx- p0 r0)) part 0 (fx* 8 (fx- p1 p0)))
        (let ([from (if (fx= to me) part (begin (CGsend cg to part) (CGrecv cg to)))])
          (let loop ([j 0] [s 0.0])
            (if (fx= j nc)
                s
                (let ([x (d@ from j)])
                  (d! out j x)
                  (loop (fx+ j 1) (fl+ s (fl* (d@ v j) x))))))))
      (define (outer-iteration)
        (bytevector-fill! z 0) (bytevector-fill! q 0)
        (bytevector-copy! x 0 rr 0 (fx* 8 nc)) (bytevector-copy! x 0 p 0 (fx* 8 nc))
        (let step ([i 0] [rho (row-total (dot rr rr nc))])
          (when (fx< i cg-steps)
            (let ([alpha (fl/ rho (row-total (product! p q)))])
              ;; z += alpha p, rr -= alpha q, and the new rr.rr
              (let ([rho1 (row-total
                            (let loop ([j 0] [s 0.0])
                              (if (fx= j nc)
                                  s
                                  (let ([rj (fl- (d@ rr j) (fl* alpha (d@ q j)))])
                                    (d! z j (fl+ (d@ z j) (fl* alpha (d@ p j))))
                                    (d! rr j rj)
                                    (loop (fx+ j 1) (fl+ s (fl* rj rj)))))))])
                (let ([beta (fl/ rho1 rho)])
                  (do ([j 0 (fx+ j 1)]) ((fx= j nc))
                    (d! p j (fl+ (d@ rr j) (fl* beta (d@ p j))))))
                (step (fx+ i 1) rho1)))))
        ;; the residual |x - A z| (computed as the reference does; not checked)
        (product! z rr)
        (do ([j 0 (fx+ j 1)]) ((fx= j nc)) (d! rr j (fl- (d@ x j) (d@ rr j))))
        (let ([sums (make-bytevector 24)])
          (d! sums 0 (dot rr rr nc)) (d! sums 1 (dot x z nc)) (d! sums 2 (dot z z nc))
          (row-sum! sums)
          (let ([xz (d@ sums 1)] [zz (d@ sums 2)])
            (let ([s (fl/ 1.0 (flsqrt zz))])
              (do ([j 0 (fx+ j 1)]) ((fx= j nc)) (d! x j (fl* s (d@ z j)))))
            (fl+ shift (fl/ 1.0 xz)))))
      (define (fill-x!) (do ([j 0 (fx+ j 1)]) ((fx= j nc)) (d! x j 1.0)))
      (fill-x!)
      (outer-iteration)                 ; untimed, as in the reference
      (fill-x!)
      (CGBarrier cg)
      (let-values ([(zeta seconds)
                    (nas-seconds
                      (lambda ()
                        (let loop ([it 0] [zeta 0.0])
                          (if (fx= it niter)
                              (begin (CGBarrier cg) zeta)
                              (loop (fx+ it 1) (outer-iteration))))))])
        (and (fx= me 0) (list zeta seconds)))))

  (define (dot a b n)
    (let loop ([j 0] [s 0.0])
      (if (fx= j n) s (loop (fx+ j 1) (fl+ s (fl* (d@ a j) (d@ b j)))))))

  ;; out[j] = row j of my block times v, j < nr.
  (define (multiply! start cols vals v out nr)
    (do ([j 0 (fx+ j 1)]) ((fx= j nr))
      (let ([end (#3%fxvector-ref start (fx+ j 1))])
        (d! out j
            (let loop ([e (#3%fxvector-ref start j)] [s 0.0])
              (if (fx= e end)
                  s
                  (loop (fx+ e 1) (fl+ s (fl* (d@ vals e) (d@ v (#3%fxvector-ref cols e)))))))))))

  ;; The entries of rows [r0, r1) in columns [c0, c1), in compressed rows
  ;; (columns relative to c0): (values start cols vals).
  (define (local-block m r0 r1 c0 c1)
    (let* ([rowstr (cg-matrix-rowstr m)] [colidx (cg-matrix-colidx m)] [a (cg-matrix-values m)]
           [inside? (lambda (e) (let ([c (fxvector-ref colidx e)]) (and (fx<= c0 c) (fx< c c1))))]
           [count (do ([e (fxvector-ref rowstr r0) (fx+ e 1)]
                       [k 0 (if (inside? e) (fx+ k 1) k)])
                      ((fx= e (fxvector-ref rowstr r1)) k))]
           [start (make-fxvector (fx+ (fx- r1 r0) 1))]
           [cols (make-fxvector count)] [vals (make-bytevector (fx* 8 count))])
      (let row ([j r0] [k 0])
        (fxvector-set! start (fx- j r0) k)
        (if (fx= j r1)
            (values start cols vals)
            (let entry ([e (fxvector-ref rowstr j)] [k k])
              (cond
                [(fx= e (fxvector-ref rowstr (fx+ j 1))) (row (fx+ j 1) k)]
                [(inside? e)
                 (fxvector-set! cols k (fx- (fxvector-ref colidx e) c0))
                 (d! vals k (d@ a e))
                 (entry (fx+ e 1) (fx+ k 1))]
                [else (entry (fx+ e 1) k)]))))))

  (lift-places (nas cg-mpi)))
