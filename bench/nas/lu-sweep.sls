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
  (export make-sweep-scratch lower-row! upper-row!)
  (import (except (chezscheme) fl+ fl- fl* fl/ flsqrt fx+ fx- fx* fx= fx< fx> fx<= fx>= fxsll)
          (nas lu-ops) (nas lu-grid))

  ;; 5 doubles: the accumulated neighbour products of one point.
  (define (make-sweep-scratch) (make-bytevector 40 0))

  (define-syntax acc
    (syntax-rules () [(_ s m) (fl-ref s (fxsll m 3))]))
  (define-syntax acc!
    (syntax-rules () [(_ s m x) (fl-set! s (fxsll m 3) x)]))

  (define r43 (fl/ 4.0 3.0))
  (define c34 (fl* c3 c4))
  (define c1345 (fl* (fl* (fl* c1 c3) c4) c5))

  ;; acc += (s dt t2 F(q) - dt t1 (V(q) + dc I)) v(q), q the neighbour's
  ;; point index, nd (1, 2, 3) the momentum component along the direction.
  (define (add-neighbour! sc v u rho qs q nd dc s cfg)
    (let* ([b (fx* q 5)]
           [st (fl* s (fl* (lu-config-dt cfg) (lu-config-t2 cfg)))]
           [a1 (fl* (lu-config-dt cfg) (lu-config-t1 cfg))]
           [r (fl@ rho q)] [kin (fl@ qs q)]
           [u1 (fl@ u (fx+ b 1))] [u2 (fl@ u (fx+ b 2))] [u3 (fl@ u (fx+ b 3))]
           [u4 (fl@ u (fx+ b 4))]
           [w0 (fl@ v b)] [w4 (fl@ v (fx+ b 4))]
           [un (case nd [(1) u1] [(2) u2] [else u3])]
           [wn (fl@ v (fx+ b nd))]
           [vn (fl* un r)]
           [r2 (fl* r r)]
           [dot (fl+ (fl* u1 (fl@ v (fx+ b 1))) (fl* u2 (fl@ v (fx+ b 2)))
                     (fl* u3 (fl@ v (fx+ b 3))))])
      (acc! sc 0 (fl+ (acc sc 0) (fl- (fl* st wn) (fl* a1 (fl* dc w0)))))
      ;; momentum rows; e4 gathers the viscous part of the energy row
      (let loop ([m 1] [e4 0.0])
        (if (fx< m 4)
            (let* ([um (fl@ u (fx+ b m))] [wm (fl@ v (fx+ b m))] [vel (fl* r um)]
                   [vis (if (fx= m nd) (fl* r43 c34) c34)]
                   [dw (fl- wm (fl* vel w0))]
                   [f (if (fx= m nd)
                          (fl+ (fl* (fl- (fl* (fl* c2 kin) r) (fl* vn vn)) w0)
                               (fl* (fl* (fl- c2) r) dot)
                               (fl* (fl* 2.0 vn) wn)
                               (fl* c2 w4))
                          (fl+ (fl* (fl- (fl* (fl* um un) r2)) w0)
                               (fl* vn wm)
                               (fl* vel wn)))])
              (acc! sc m (fl+ (acc sc m)
                              (fl- (fl* st f) (fl* a1 (fl+ (fl* (fl* vis r) dw) (fl* dc wm))))))
              (loop (fx+ m 1) (fl+ e4 (fl* (fl* (fl- vis c1345) (fl* r vel)) dw))))
            (let ([f (fl+ (fl* (fl* (fl- (fl* (fl* c2 2.0) kin) (fl* c1 u4)) (fl* un r2)) w0)
                          (fl* (fl- (fl* (fl* c2 un) r2)) dot)
                          (fl* (fl* (fl- (fl* c1 u4) (fl* c2 kin)) r) wn)
                          (fl* (fl* c1 vn) w4))]
                  [visc (fl+ e4 (fl* (fl* c1345 r) (fl- w4 (fl* (fl* r u4) w0))))])
              (acc! sc 4 (fl+ (acc sc 4)
                              (fl- (fl* st f) (fl* a1 (fl+ visc (fl* dc w4)))))))))))

  ;; Dissipation coefficients of the x, y and z directions.
  (define dx 0.75) (define dy 0.75) (define dz 1.0)

  ;; Solves D x = t at point p (t in sc) and stores x into v at p
  ;; (lower?) or subtracts it from v at p.
  (define (solve-diagonal! sc v u rho p lower? cfg)
    (let* ([b (fx* p 5)] [t1 (lu-config-t1 cfg)] [dt2 (fl* 2.0 (lu-config-dt cfg))]
           [r (fl@ rho p)]
           ;; sums over the directions: tm of t1 times the viscous
           ;; coefficient of a momentum component (r43 c34 along its own
           ;; direction, c34 across), te of t1 c1345, td of t1 dc
           [tm (fl* c34 (fl+ (fl* t1 r43) t1 t1))]
           [te (fl* c1345 (fl+ t1 t1 t1))]
           [td (fl+ (fl* t1 dx) (fl* t1 dy) (fl* t1 dz))]
           [x0 (fl/ (acc sc 0) (fl+ 1.0 (fl* dt2 td)))]
           [dmm (fl+ 1.0 (fl* dt2 (fl+ (fl* tm r) td)))]
           [e-coef (fl* dt2 (fl* (fl- tm te) r))])
      (let loop ([m 1] [rest (fl- (acc sc 4)
                                  (fl* (fl* (fl- dt2) (fl* te (fl* r (fl* r (fl@ u (fx+ b 4))))))
                                       x0))])
        (if (fx< m 4)
            (let* ([vel (fl* r (fl@ u (fx+ b m))) ]
                   [xm (fl/ (fl+ (acc sc m) (fl* (fl* dt2 (fl* (fl* tm r) vel)) x0)) dmm)])
              (acc! sc m xm)
              ;; row 5: d40 x0 gathers -dt2 (tm - te) r vel^2 per component
              (loop (fx+ m 1)
                    (fl- (fl+ rest (fl* (fl* e-coef (fl* vel vel)) x0))
                         (fl* (fl* e-coef vel) xm))))
            (let ([x4 (fl/ rest (fl+ 1.0 (fl* dt2 (fl+ (fl* te r) td))))])
              (acc! sc 0 x0)
              (acc! sc 4 x4)
              (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                (fl@! v (fx+ b m)
                      (if lower? (acc sc m) (fl- (fl@ v (fx+ b m)) (acc sc m))))))))))

  ;; The lower sweep over row j of plane k (ascending i).
  (define (lower-row! v u rho qs cfg j k sc)
    (let* ([n (lu-config-n cfg)] [nn (fx* n n)] [om omega])
      (do ([i 1 (fx+ i 1)]) ((fx= i (fx- n 1)))
        (let ([p (fx+ i (fx* n (fx+ j (fx* n k))))])
          (do ([m 0 (fx+ m 1)]) ((fx= m 5)) (acc! sc m 0.0))
          (add-neighbour! sc v u rho qs (fx- p nn) 3 dz -1.0 cfg)
          (add-neighbour! sc v u rho qs (fx- p n) 2 dy -1.0 cfg)
          (add-neighbour! sc v u rho qs (fx- p 1) 1 dx -1.0 cfg)
          (let ([b (fx* p 5)])
            (do ([m 0 (fx+ m 1)]) ((fx= m 5))
              (acc! sc m (fl- (fl@ v (fx+ b m)) (fl* om (acc sc m))))))
          (solve-diagonal! sc v u rho p #t cfg)))))

  ;; The upper sweep over row j of plane k (descending i).
  (define (upper-row! v u rho qs cfg j k sc)
    (let* ([n (lu-config-n cfg)] [nn (fx* n n)] [om omega])
      (do ([i (fx- n 2) (fx- i 1)]) ((fx= i 0))
        (let ([p (fx+ i (fx* n (fx+ j (fx* n k))))])
          (do ([m 0 (fx+ m 1)]) ((fx= m 5)) (acc! sc m 0.0))
          (add-neighbour! sc v u rho qs (fx+ p nn) 3 dz 1.0 cfg)
          (add-neighbour! sc v u rho qs (fx+ p n) 2 dy 1.0 cfg)
          (add-neighbour! sc v u rho qs (fx+ p 1) 1 dx 1.0 cfg)
          (do ([m 0 (fx+ m 1)]) ((fx= m 5))
            (acc! sc m (fl* om (acc sc m))))
          (solve-diagonal! sc v u rho p #f cfg))))))
