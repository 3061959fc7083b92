#!chezscheme
;;; The two triangular sweeps of LU's SSOR step, one grid row at a time.
;;;
;;; The implicit operator of a time step is I + dt (L + D + U) linearised:
;;; block 5x5 Jacobians couple a point to its six neighbours.  The block of
;;; the neighbour in direction x, y or z is
;;;     s dt t2 F(q) - dt t1 (V(q) + dc I)
;;; at the neighbour's state q, with F the Jacobian of the convective flux
;;; along that direction, V that of the viscous flux, dc the direction's
;;; dissipation coefficient and s = -1 for the lower neighbours (i-1, j-1,
;;; k-1), +1 for the upper ones.  The diagonal block is
;;;     I + 2 dt sum over directions of t1 (V + dc I)
;;; at the point itself, which is lower triangular (row 1 only its
;;; diagonal, rows 2-4 their first and diagonal entries, row 5 full).
;;; The blocks are never stored: products with them are formed from the
;;; state directly, and the diagonal block is solved by forward
;;; substitution.
;;;
;;; Lower sweep (ascending i, j, k): v <- D^-1 (v - omega (Lx v(i-1) +
;;; Ly v(j-1) + Lz v(k-1))).  Upper sweep (descending): v <- v - D^-1
;;; omega (Ux v(i+1) + Uy v(j+1) + Uz v(k+1)).
(library (nas lu-sweep)
  (export lower-row! upper-row!)
  (import (except (chezscheme) fl+ fl- fl* fl/ flsqrt fx+ fx- fx* fx= fx< fx> fx<= fx>= fxsll)
          (nas lu-ops) (nas lu-grid))

  (define r43 (fl/ 4.0 3.0))
  (define c34 (fl* c3 c4))
  (define r43c34 (fl* r43 c34))
  (define c1345 (fl* (fl* (fl* c1 c3) c4) c5))
  ;; the energy row's viscous coefficients: of P below, of vn dn
  (define k-dot (fl- c34 c1345))
  (define k-normal (fl* c34 (fl- r43 1.0)))

  ;; Binds r0 rn ra rb r4 to the rows 0, nd, ta, tb, 4 of the product of
  ;; the block of neighbour q (point index) with v at q; nd is the
  ;; momentum component along the direction, ta and tb the other two (all
  ;; literals).  st = s omega dt t2, a1 = omega dt t1, a1dc = a1 dc.  In terms of
  ;; the velocities vel = u/u1, e = u5/u1, kr = qs/u1 (rho holds 1/u1), the
  ;; differences d = w - vel w1 (d4 = w5 - e w1), P = vel . d:
  ;;   F w = (wn, c2 (w5 - kr w1 - P) + vn (wn + dn), vn da + va wn,
  ;;          vn db + vb wn, vn (c1 d4 - c2 P) + (c1 e - c2 kr) wn)
  ;;   V w = (1/u1) (0, r43 c34 dn, c34 da, c34 db,
  ;;              (c34 - c1345) P + c34 (r43 - 1) vn dn + c1345 d4)
  (define-syntax let-product
    (syntax-rules ()
      [(_ (r0 rn ra rb r4) (v u rho qs q nd ta tb st a1 a1dc) body ...)
       (let* ([bq (fx* q 5)] [r (fl@ rho q)]
              [vn (fl* r (fl@ u (fx+ bq nd)))] [va (fl* r (fl@ u (fx+ bq ta)))]
              [vb (fl* r (fl@ u (fx+ bq tb)))] [e (fl* r (fl@ u (fx+ bq 4)))]
              [kr (fl* r (fl@ qs q))]
              [w0 (fl@ v bq)] [wn (fl@ v (fx+ bq nd))] [wa (fl@ v (fx+ bq ta))]
              [wb (fl@ v (fx+ bq tb))] [w4 (fl@ v (fx+ bq 4))]
              [dn (fl- wn (fl* vn w0))] [da (fl- wa (fl* va w0))] [db (fl- wb (fl* vb w0))]
              [d4 (fl- w4 (fl* e w0))]
              [dot (fl+ (fl* vn dn) (fl* va da) (fl* vb db))]
              [ar (fl* a1 r)] [arc (fl* ar c34)]
              [r0 (fl- (fl* st wn) (fl* a1dc w0))]
              [rn (fl- (fl* st (fl+ (fl* c2 (fl- (fl- w4 (fl* kr w0)) dot)) (fl* vn (fl+ wn dn))))
                       (fl+ (fl* (fl* ar r43c34) dn) (fl* a1dc wn)))]
              [ra (fl- (fl* st (fl+ (fl* vn da) (fl* va wn)))
                       (fl+ (fl* arc da) (fl* a1dc wa)))]
              [rb (fl- (fl* st (fl+ (fl* vn db) (fl* vb wn)))
                       (fl+ (fl* arc db) (fl* a1dc wb)))]
              [r4 (fl- (fl* st (fl+ (fl* vn (fl- (fl* c1 d4) (fl* c2 dot)))
                                    (fl* (fl- (fl* c1 e) (fl* c2 kr)) wn)))
                       (fl+ (fl* ar (fl+ (fl* k-dot dot) (fl* k-normal (fl* vn dn)) (fl* c1345 d4)))
                            (fl* a1dc w4)))])
         body ...)]))

  ;; Dissipation coefficients of the x, y and z directions.
  (define dx 0.75) (define dy 0.75) (define dz 1.0)

  ;; Solves D x = t at point p, t = (t0 .. t4), and stores x into v at p
  ;; (lower?) or subtracts it from v at p.  With tm the sum over the
  ;; directions of t1 times a momentum component's viscous coefficient
  ;; (r43 c34 along its own direction, c34 across), te that of t1 c1345,
  ;; td that of t1 dc, and dt2 = 2 dt:
  ;;   D11 = 1 + dt2 td,  Dmm = 1 + dt2 (tm rho + td),  Dm1 = -dt2 tm rho vel_m,
  ;;   D5m = dt2 (tm - te) rho vel_m,  D55 = 1 + dt2 (te rho + td),
  ;;   D51 = -dt2 ((tm - te) rho |vel|^2 + te rho e).
  (define-syntax solve-diagonal!
    (syntax-rules ()
      [(_ v u rho p lower? cfg (t0 t1 t2 t3 t4))
       (let* ([b (fx* p 5)] [r (fl@ rho p)]
              [v1 (fl* r (fl@ u (fx+ b 1)))] [v2 (fl* r (fl@ u (fx+ b 2)))]
              [v3 (fl* r (fl@ u (fx+ b 3)))] [e (fl* r (fl@ u (fx+ b 4)))]
              [x0 (fl/ t0 (lu-config-d11 cfg))]
              [dmm (fl+ (lu-config-d11 cfg) (fl* (lu-config-dtm cfg) r))]
              [g (fl* (fl* (lu-config-dtm cfg) r) x0)]
              [x1 (fl/ (fl+ t1 (fl* g v1)) dmm)]
              [x2 (fl/ (fl+ t2 (fl* g v2)) dmm)]
              [x3 (fl/ (fl+ t3 (fl* g v3)) dmm)]
              [h (fl* (lu-config-dtme cfg) r)]
              [x4 (fl/ (fl- (fl+ t4 (fl* (fl+ (fl* h (fl+ (fl* v1 v1) (fl* v2 v2) (fl* v3 v3)))
                                              (fl* (fl* (lu-config-dte cfg) r) e))
                                         x0))
                            (fl* h (fl+ (fl* v1 x1) (fl* v2 x2) (fl* v3 x3))))
                       (fl+ (lu-config-d11 cfg) (fl* (lu-config-dte cfg) r)))])
         (if lower?
             (begin (fl@! v b x0) (fl@! v (fx+ b 1) x1) (fl@! v (fx+ b 2) x2)
                    (fl@! v (fx+ b 3) x3) (fl@! v (fx+ b 4) x4))
             (begin (fl@! v b (fl- (fl@ v b) x0))
                    (fl@! v (fx+ b 1) (fl- (fl@ v (fx+ b 1)) x1))
                    (fl@! v (fx+ b 2) (fl- (fl@ v (fx+ b 2)) x2))
                    (fl@! v (fx+ b 3) (fl- (fl@ v (fx+ b 3)) x3))
                    (fl@! v (fx+ b 4) (fl- (fl@ v (fx+ b 4)) x4)))))]))

  ;; One sweep over the points i-lo .. i-hi - 1 of row j of plane k: s = -1
  ;; (lower: ascending i, the neighbours at i-1, j-1, k-1) or +1 (upper:
  ;; descending i, neighbours at i+1, j+1, k+1).
  (define-syntax define-row-sweep
    (syntax-rules ()
      [(_ name s lower?)
       (define (name v u rho qs cfg j k i-lo i-hi)
         (let* ([n (lu-config-n cfg)] [nn (fx* n n)]
                ;; the blocks come scaled by omega
                [odt (fl* omega (lu-config-dt cfg))] [st (fl* s (fl* odt (lu-config-t2 cfg)))]
                [a1 (fl* odt (lu-config-t1 cfg))]
                [a1x (fl* a1 dx)] [a1y (fl* a1 dy)] [a1z (fl* a1 dz)]
                [row (fx* n (fx+ j (fx* n k)))])
           (let loop ([i (if lower? i-lo (fx- i-hi 1))])
             (unless (or (fx< i i-lo) (fx>= i i-hi))
               (let ([p (fx+ row i)])
                 (let-product (z0 z3 z1 z2 z4)
                              (v u rho qs (if lower? (fx- p nn) (fx+ p nn)) 3 1 2 st a1 a1z)
                   (let-product (y0 y2 y1 y3 y4)
                                (v u rho qs (if lower? (fx- p n) (fx+ p n)) 2 1 3 st a1 a1y)
                     (let-product (x0 x1 x2 x3 x4)
                                  (v u rho qs (if lower? (fx- p 1) (fx+ p 1)) 1 2 3 st a1 a1x)
                       (let ([b (fx* p 5)])
                         (define-syntax t
                           (syntax-rules ()
                             [(_ m zm ym xm)
                              (if lower?
                                  (fl- (fl@ v (fx+ b m)) (fl+ zm ym xm))
                                  (fl+ zm ym xm))]))
                         (solve-diagonal! v u rho p lower? cfg
                                          ((t 0 z0 y0 x0) (t 1 z1 y1 x1) (t 2 z2 y2 x2)
                                           (t 3 z3 y3 x3) (t 4 z4 y4 x4))))))))
               (loop (if lower? (fx+ i 1) (fx- i 1)))))))]))

  (define-row-sweep lower-row! -1.0 #t)
  (define-row-sweep upper-row! 1.0 #f))
