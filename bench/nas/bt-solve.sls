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
  (import (chezscheme) (nas bt-grid) (nas bt-exact) (nas bt-block))

  ;; A member's private scratch: fjac and njac at every position of a line,
  ;; the eliminated upper blocks C' of the line, and two blocks A and B.
  ;; Returns the shared flvector (keep it reachable while in use).
  (define (make-workspace n) (make-field (fx+ (fx* 75 n) 50)))

  (define-syntax el
    (syntax-rules () [(_ r c) (fx+ (fx* r 5) c)]))

  ;; Writes fjac and njac of direction d (normal momentum component nm =
  ;; d+1) at point pt into the blocks at addresses fj and nj.
  (define (jacobians! cs A nm pt fj nj)
    (let* ([u (addrs-u A)] [o (fx* 5 pt)]
           [t1 (fref (addrs-rho-i A) pt)] [t2 (fl* t1 t1)] [t3 (fl* t1 t2)]
           [q (fref (addrs-qs A) pt)] [sq (fref (addrs-square A) pt)]
           [un (fref u (fx+ o nm))] [u4 (fref u (fx+ o 4))]
           [c1 (consts-c1 cs)] [c2 (consts-c2 cs)] [c3c4 (consts-c3c4 cs)]
           [c1345 (consts-c1345 cs)] [c3c4n (fl* (consts-con43 cs) (consts-c3c4 cs))])
      (do ([e 0 (fx+ e 1)]) ((fx= e 25)) (fset! fj e 0.0) (fset! nj e 0.0))
      (fset! fj (el 0 nm) 1.0)
      (fset! fj (el nm 0) (fl+ (fl- 0.0 (fl* (fl* un un) t2)) (fl* c2 q)))
      (fset! fj (el nm nm) (fl* (fl- 2.0 c2) (fl* un t1)))
      (fset! fj (el nm 4) c2)
      (fset! fj (el 4 0) (fl* (fl- (fl* (fl* c2 2.0) sq) (fl* c1 u4)) (fl* un t2)))
      (fset! fj (el 4 nm) (fl- (fl* (fl* c1 u4) t1) (fl* c2 (fl+ (fl* (fl* un un) t2) q))))
      (fset! fj (el 4 4) (fl* c1 (fl* un t1)))
      (let loop ([m 1] [acc 0.0])
        (if (fx= m 4)
            (fset! nj (el 4 0) (fl- (fl- 0.0 acc) (fl* (fl* c1345 t2) u4)))
            (let* ([um (fref u (fx+ o m))] [km (if (fx= m nm) c3c4n c3c4)]
                   [kd (fl- km c1345)])
              (unless (fx= m nm)
                (fset! fj (el nm m) (fl- 0.0 (fl* c2 (fl* um t1))))
                (fset! fj (el m 0) (fl* (fl- 0.0 (fl* un um)) t2))
                (fset! fj (el m nm) (fl* um t1))
                (fset! fj (el m m) (fl* un t1))
                (fset! fj (el 4 m) (fl* (fl- 0.0 (fl* c2 (fl* um un))) t2)))
              (fset! nj (el m 0) (fl* (fl- 0.0 (fl* km t2)) um))
              (fset! nj (el m m) (fl* km t1))
              (fset! nj (el 4 m) (fl* (fl* kd t2) um))
              (loop (fx+ m 1) (fl+ acc (fl* (fl* kd t3) (fl* um um)))))))
      (fset! nj (el 4 4) (fl* c1345 t1))))

  ;; The three blocks of row p: A from the Jacobians at p-1 (addresses
  ;; fjm, njm), B from njac at p (nj0), C from p+1 (fjp, njp); #f skips one.
  (define (form-a! a fjm njm tmp1 tmp2 dtd)
    (do ([e 0 (fx+ e 1)]) ((fx= e 25))
      (fset! a e (fl- (fl- (fl- 0.0 (fl* tmp2 (fref fjm e))) (fl* tmp1 (fref njm e)))
                      (if (fx= 0 (fxremainder e 6)) dtd 0.0)))))
  (define (form-b! b nj0 tmp1x2 dtdx2)
    (do ([e 0 (fx+ e 1)]) ((fx= e 25))
      (fset! b e (if (fx= 0 (fxremainder e 6))
                     (fl+ (fl+ 1.0 (fl* tmp1x2 (fref nj0 e))) dtdx2)
                     (fl* tmp1x2 (fref nj0 e))))))
  (define (form-c! c fjp njp tmp1 tmp2 dtd)
    (do ([e 0 (fx+ e 1)]) ((fx= e 25))
      (fset! c e (fl- (fl- (fl* tmp2 (fref fjp e)) (fl* tmp1 (fref njp e)))
                      (if (fx= 0 (fxremainder e 6)) dtd 0.0)))))

  ;; Solves direction d's lines through the planes [lo, hi) (k for x and
  ;; y, j for z), with the workspace at address w.
  (define (solve! cs A w d lo hi)
    (let* ([n (consts-n cs)] [nm (fx+ d 1)] [r (addrs-rhs A)]
           [s (case d [(0) 1] [(1) n] [else (fx* n n)])]
           [tmp1 (fl* (consts-dt cs) (consts-t1 cs))] [tmp2 (fl* (consts-dt cs) (consts-t2 cs))]
           [dtd (fl* tmp1 (vector-ref (consts-dd cs) d))]
           [tmp1x2 (fl* tmp1 2.0)] [dtdx2 (fl* tmp1x2 (vector-ref (consts-dd cs) d))]
           [blk (fx* 25 8)] [fj (lambda (p) (fx+ w (fx* p blk)))]
           [nj (lambda (p) (fx+ w (fx* (fx+ n p) blk)))]
           [cp (lambda (p) (fx+ w (fx* (fx+ (fx* 2 n) p) blk)))]
           [a (fx+ w (fx* (fx* 3 n) blk))] [b (fx+ a blk)])
      (define (line! base)
        (let ([rv (lambda (p) (fx+ r (fx* 40 (fx+ base (fx* p s)))))] [last (fx- n 2)])
          (do ([p 1 (fx+ p 1)]) ((fx= p (fx- n 1)))
            (jacobians! cs A nm (fx+ base (fx* p s)) (fj p) (nj p)))
          (form-b! b (nj 1) tmp1x2 dtdx2)
          (form-c! (cp 1) (fj 2) (nj 2) tmp1 tmp2 dtd)
          (binvcrhs! b (cp 1) (rv 1))
          (do ([p 2 (fx+ p 1)]) ((fx= p last))
            (form-a! a (fj (fx- p 1)) (nj (fx- p 1)) tmp1 tmp2 dtd)
            (form-b! b (nj p) tmp1x2 dtdx2)
            (form-c! (cp p) (fj (fx+ p 1)) (nj (fx+ p 1)) tmp1 tmp2 dtd)
            (matvec-sub! a (rv (fx- p 1)) (rv p))
            (matmul-sub! a (cp (fx- p 1)) b)
            (binvcrhs! b (cp p) (rv p)))
          (form-a! a (fj (fx- last 1)) (nj (fx- last 1)) tmp1 tmp2 dtd)
          (form-b! b (nj last) tmp1x2 dtdx2)
          (matvec-sub! a (rv (fx- last 1)) (rv last))
          (matmul-sub! a (cp (fx- last 1)) b)
          (binvrhs! b (rv last))
          (do ([p (fx- last 1) (fx- p 1)]) ((fx= p 0))
            (matvec-sub! (cp p) (rv (fx+ p 1)) (rv p)))))
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
