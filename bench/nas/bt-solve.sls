#!chezscheme
;;; BT's implicit part: along every grid line of one direction, the block
;;; tridiagonal system (I - dt (A_x - D_x)) x = rhs, whose blocks come from
;;; the flux Jacobian (fjac) and the viscous Jacobian (njac) at the line's
;;; points, solved in place in rhs by block Gaussian elimination and back
;;; substitution.  Then add! updates u.
;;;
;;; The boundary points of a line carry identity blocks and a zero right
;;; side (the forcing, hence rhs, is zero there), so they change nothing:
;;; only the interior positions 1 .. n-2 are formed and solved.
;;;
;;; Lines of different planes are independent: solve! takes a range of
;;; planes, k for the x and y directions, j for z.
(library (nas bt-solve)
  (export make-workspace solve! add!)
  (import (except (chezscheme) fl+ fl- fl* fl/ fx+ fx- fx*) (nas bt-unsafe)
          (nas bt-grid) (nas bt-exact) (nas bt-block))

  ;; A member's private scratch (Scheme vectors: a flonum stored there is
  ;; not boxed again when read): fjac, njac and the eliminated upper block
  ;; C' at every position of a line, 25 elements each.
  (define (make-workspace n)
    (vector (make-vector (fx* 25 n) 0.0) (make-vector (fx* 25 n) 0.0)
            (make-vector (fx* 25 n) 0.0)))

  (define-syntax jset!
    (syntax-rules () [(_ v b r c x) (#3%vector-set! v (fx+ b (fx+ (fx* r 5) c)) x)]))

  ;; Writes fjac and njac of direction d (normal momentum component nm =
  ;; d+1) at point pt into elements b .. b+24 of fj and nj: only the
  ;; entries that can be nonzero (bt-block's fj-nonzero? and nj-nonzero?;
  ;; fjac's row 0 is the constant e_nm).
  (define (jacobians! cs A nm pt fj nj b)
    (let* ([u (addrs-u A)] [o (fx* 5 pt)]
           [t1 (fref (addrs-rho-i A) pt)] [t2 (fl* t1 t1)] [t3 (fl* t1 t2)]
           [q (fref (addrs-qs A) pt)] [sq (fref (addrs-square A) pt)]
           [un (fref u (fx+ o nm))] [u4 (fref u (fx+ o 4))]
           [c1 (consts-c1 cs)] [c2 (consts-c2 cs)] [c3c4 (consts-c3c4 cs)]
           [c1345 (consts-c1345 cs)] [c3c4n (fl* (consts-con43 cs) (consts-c3c4 cs))])
      (jset! fj b nm 0 (fl+ (fl- 0.0 (fl* (fl* un un) t2)) (fl* c2 q)))
      (jset! fj b nm nm (fl* (fl- 2.0 c2) (fl* un t1)))
      (jset! fj b nm 4 c2)
      (jset! fj b 4 0 (fl* (fl- (fl* (fl* c2 2.0) sq) (fl* c1 u4)) (fl* un t2)))
      (jset! fj b 4 nm (fl- (fl* (fl* c1 u4) t1) (fl* c2 (fl+ (fl* (fl* un un) t2) q))))
      (jset! fj b 4 4 (fl* c1 (fl* un t1)))
      (let loop ([m 1] [acc 0.0])
        (if (fx= m 4)
            (jset! nj b 4 0 (fl- (fl- 0.0 acc) (fl* (fl* c1345 t2) u4)))
            (let* ([um (fref u (fx+ o m))] [km (if (fx= m nm) c3c4n c3c4)]
                   [kd (fl- km c1345)])
              (unless (fx= m nm)
                (jset! fj b nm m (fl- 0.0 (fl* c2 (fl* um t1))))
                (jset! fj b m 0 (fl* (fl- 0.0 (fl* un um)) t2))
                (jset! fj b m nm (fl* um t1))
                (jset! fj b m m (fl* un t1))
                (jset! fj b 4 m (fl* (fl- 0.0 (fl* c2 (fl* um un))) t2)))
              (jset! nj b m 0 (fl* (fl- 0.0 (fl* km t2)) um))
              (jset! nj b m m (fl* km t1))
              (jset! nj b 4 m (fl* (fl* kd t2) um))
              (loop (fx+ m 1) (fl+ acc (fl* (fl* kd t3) (fl* um um)))))))
      (jset! nj b 4 4 (fl* c1345 t1))))

  ;; Solves direction d's lines through the planes [lo, hi) (k for x and
  ;; y, j for z), with the workspace work.
  (define (solve! cs A work d lo hi)
    (let* ([n (consts-n cs)] [nm (fx+ d 1)] [r (addrs-rhs A)]
           [fj (vector-ref work 0)] [nj (vector-ref work 1)] [cp (vector-ref work 2)]
           [s (case d [(0) 1] [(1) n] [else (fx* n n)])]
           [tmp1 (fl* (consts-dt cs) (consts-t1 cs))] [tmp2 (fl* (consts-dt cs) (consts-t2 cs))]
           [dtd (fl* tmp1 (vector-ref (consts-dd cs) d))]
           [ntmp2 (fl- 0.0 tmp2)] [tmp1x2 (fl* tmp1 2.0)] [bdiag (fl+ 1.0 (fl* tmp1x2 (vector-ref (consts-dd cs) d)))]
           [first (block-step d 0)] [middle (block-step d 1)] [final (block-step d 2)]
           [last (fx- n 2)])
      (define (line! base)
        (define (ro p) (fx* 5 (fx+ base (fx* p s))))
        (do ([p 1 (fx+ p 1)]) ((fx> p last))
          (jacobians! cs A nm (fx+ base (fx* p s)) fj nj (fx* 25 p)))
        (first fj nj cp r 1 (ro 1) 0 tmp1 tmp2 ntmp2 dtd tmp1x2 bdiag)
        (do ([p 2 (fx+ p 1)]) ((fx= p last))
          (middle fj nj cp r p (ro p) (ro (fx- p 1)) tmp1 tmp2 ntmp2 dtd tmp1x2 bdiag))
        (final fj nj cp r last (ro last) (ro (fx- last 1)) tmp1 tmp2 ntmp2 dtd tmp1x2 bdiag)
        (do ([p (fx- last 1) (fx- p 1)]) ((fx= p 0))
          (back-substitute! cp p r (ro p) (ro (fx+ p 1)))))
      (do ([x lo (fx+ x 1)]) ((fx>= x hi))
        (do ([y 1 (fx+ y 1)]) ((fx= y (fx- n 1)))
          (line! (case d
                   [(0) (fx* n (fx+ y (fx* n x)))]
                   [(1) (fx+ y (fx* n (fx* n x)))]
                   [else (fx+ y (fx* n x))]))))))

  ;; u <- u + rhs at the interior points of planes [klo, khi).
  (define (add! cs A klo khi)
    (let ([n (consts-n cs)] [u (addrs-u A)] [r (addrs-rhs A)])
      (do ([k (fxmax klo 1) (fx+ k 1)]) ((fx>= k (fxmin khi (fx- n 1))))
        (do ([j 1 (fx+ j 1)]) ((fx= j (fx- n 1)))
          (do ([o (fx* 5 (fx+ 1 (fx* n (fx+ j (fx* n k))))) (fx+ o 1)])
              ((fx= o (fx* 5 (fx+ (fx- n 1) (fx* n (fx+ j (fx* n k)))))))
            (fset! u o (fl+ (fref u o) (fref r o)))))))))
