#!chezscheme
;;; LU's spatial operator: the residual of the steady compressible
;;; Navier-Stokes equations discretised by central differences, with
;;; fourth-order artificial dissipation.  The operator is a sum over the
;;; three directions of one line operator applied along every grid line of
;;; that direction; erhs applies it to the exact solution (the forcing
;;; term frct), rhs to the current solution u (rsd = Op(u) - frct).
(library (nas lu-rhs)
  (export make-line-scratch compute-forcing!
          rhs-init-planes! rhs-init-point! rhs-xy-planes! rhs-x-lines! rhs-y-lines!
          rhs-z-rows!)
  (import (except (chezscheme) fl+ fl- fl* fl/ flsqrt fx+ fx- fx* fx= fx< fx> fx<= fx>= fxsll)
          (nas lu-ops) (nas lu-grid))

  ;; Scratch for one line: at each of n points the 5 convective fluxes
  ;; and the 4 viscous fluxes (slots 5..8, between the point and the one
  ;; before it).
  (define slots 9)
  (define (make-line-scratch n) (make-bytevector (fx* (fx* 8 slots) n)))

  (define-syntax flux
    (syntax-rules () [(_ s o m) (fl-ref s (fxsll (fx+ o m) 3))]))
  (define-syntax flux!
    (syntax-rules () [(_ s o m x) (fl-set! s (fxsll (fx+ o m) 3) x)]))

  ;; Adds the operator along one grid line to dst at the line's interior
  ;; points.  The line has n points: point index base + a*stride for
  ;; a = 0 .. n-1.  src is the field, rho its 1/density and qs its kinetic
  ;; energy density (u2^2+u3^2+u4^2)/(2 u1); nd (1, 2, 3) is the momentum
  ;; component along the line; dc the second-order dissipation coefficient
  ;; of the direction.
  (define (line-operator! dst src rho qs base stride nd dc cfg s)
    (let* ([n (lu-config-n cfg)] [t1 (lu-config-t1 cfg)] [t2 (lu-config-t2 cfg)]
           [t3 (lu-config-t3 cfg)]
           [t3n (fl* (fl/ 4.0 3.0) t3)]
           [k-kin (fl* (fl* 0.5 (fl- 1.0 (fl* c1 c5))) t3)]
           [k-norm (fl* (fl/ 1.0 6.0) t3)]
           [k-energy (fl* (fl* c1 c5) t3)]
           [kv (fl* (fl* t3 c3) c4)]
           [kd (fl* dc t1)]
           [last (fx- n 1)])
      ;; The fluxes at every point; the previous point's velocities,
      ;; energy, squared speed and squared normal velocity ride along.
      (let loop ([a 0] [p base] [o 0] [pv1 0.0] [pv2 0.0] [pv3 0.0] [pe 0.0] [pk 0.0] [pn 0.0])
        (unless (fx= a n)
          (let* ([b (fx* p 5)] [r (fl@ rho p)] [q (fl@ qs p)]
                 [u1 (fl@ src (fx+ b 1))] [u2 (fl@ src (fx+ b 2))] [u3 (fl@ src (fx+ b 3))]
                 [u4 (fl@ src (fx+ b 4))]
                 [v1 (fl* u1 r)] [v2 (fl* u2 r)] [v3 (fl* u3 r)] [e (fl* r u4)]
                 [vn (case nd [(1) v1] [(2) v2] [else v3])]
                 [pressure (fl* c2 (fl- u4 q))]
                 [k (fl+ (fl* v1 v1) (fl* v2 v2) (fl* v3 v3))]
                 [kn (fl* vn vn)])
            (flux! s o 0 (case nd [(1) u1] [(2) u2] [else u3]))
            (flux! s o 1 (if (fx= nd 1) (fl+ (fl* u1 vn) pressure) (fl* u1 vn)))
            (flux! s o 2 (if (fx= nd 2) (fl+ (fl* u2 vn) pressure) (fl* u2 vn)))
            (flux! s o 3 (if (fx= nd 3) (fl+ (fl* u3 vn) pressure) (fl* u3 vn)))
            (flux! s o 4 (fl* (fl- (fl* c1 u4) (fl* c2 q)) vn))
            (unless (fx= a 0)
              (flux! s o 5 (fl* (if (fx= nd 1) t3n t3) (fl- v1 pv1)))
              (flux! s o 6 (fl* (if (fx= nd 2) t3n t3) (fl- v2 pv2)))
              (flux! s o 7 (fl* (if (fx= nd 3) t3n t3) (fl- v3 pv3)))
              (flux! s o 8 (fl+ (fl* k-kin (fl- k pk)) (fl* k-norm (fl- kn pn))
                                (fl* k-energy (fl- e pe)))))
            (loop (fx+ a 1) (fx+ p stride) (fx+ o slots) v1 v2 v3 e k kn))))
      ;; Per component, along the line with a window of five values of
      ;; the component and three convective and two viscous fluxes:
      ;; dst -= t2 (F(a+1) - F(a-1)), += kv (G(a+1) - G(a)) (momentum and
      ;; energy), += kd (second difference), -= dissipation (fourth
      ;; difference, one-sided next to the ends of the line).
      (do ([m 0 (fx+ m 1)]) ((fx= m 5))
        (let ([gm (fx+ m 4)])
          (define (x a) (fl@ src (fx+ (fx* 5 (fx+ base (fx* a stride))) m)))
          (let loop ([a 1] [xm2 0.0] [xm1 (x 0)] [x0 (x 1)] [xp1 (x 2)]
                     [fm (flux s 0 m)] [f0 (flux s slots m)] [g0 (if (fx= m 0) 0.0 (flux s slots gm))])
            (unless (fx= a last)
              (let* ([o (fx* (fx+ a 1) slots)]
                     [xp2 (if (fx< (fx+ a 2) n) (x (fx+ a 2)) 0.0)]
                     [fp (flux s o m)]
                     [gp (if (fx= m 0) 0.0 (flux s o gm))]
                     [i (fx+ (fx* 5 (fx+ base (fx* a stride))) m)]
                     [s1 (fl+ xm1 xp1)]
                     [d2 (fl* kd (fl- s1 (fl* 2.0 x0)))]
                     [d4 (cond
                           [(fx= a 1) (fl+ (fl- (fl* 5.0 x0) (fl* 4.0 xp1)) xp2)]
                           [(fx= a 2) (fl+ (fl- (fl* 6.0 x0) (fl* 4.0 s1)) xp2)]
                           [(fx= a (fx- n 2)) (fl+ (fl- xm2 (fl* 4.0 xm1)) (fl* 5.0 x0))]
                           [(fx= a (fx- n 3)) (fl+ (fl- xm2 (fl* 4.0 s1)) (fl* 6.0 x0))]
                           [else (fl+ (fl- (fl+ xm2 xp2) (fl* 4.0 s1)) (fl* 6.0 x0))])]
                     [convected (fl- (fl@ dst i) (fl* t2 (fl- fp fm)))])
                (fl@! dst i (fl- (if (fx= m 0)
                                     (fl+ convected d2)
                                     (fl+ convected (fl* kv (fl- gp g0)) d2))
                                 (fl* dissipation d4)))
                (loop (fx+ a 1) xm1 x0 xp1 xp2 f0 fp gp))))))))

  ;; 1/density and kinetic energy density of field f at point p.
  (define (set-derived! f rho qs p)
    (let* ([b (fx* p 5)] [r (fl/ 1.0 (fl@ f b))]
           [a (fl@ f (fx+ b 1))] [c (fl@ f (fx+ b 2))] [d (fl@ f (fx+ b 3))])
      (fl@! rho p r)
      (fl@! qs p (fl* (fl* 0.5 (fl+ (fl* a a) (fl* c c) (fl* d d))) r))))

  ;; Dissipation coefficients of the x, y and z directions.
  (define dx 0.75) (define dy 0.75) (define dz 1.0)

  ;; The operator along the x lines, then along the y lines, of plane k.
  (define (xy-plane! dst src rho qs cfg k s)
    (rhs-x-lines! dst src rho qs cfg k s)
    (rhs-y-lines! dst src rho qs cfg k s))

  ;; Phase (2) of plane k's x lines or y lines alone (rhs-xy-planes! does
  ;; both, x first).
  (define (rhs-x-lines! dst src rho qs cfg k s)
    (let* ([n (lu-config-n cfg)] [plane (fx* k (fx* n n))])
      (do ([j 1 (fx+ j 1)]) ((fx= j (fx- n 1)))
        (line-operator! dst src rho qs (fx+ plane (fx* j n)) 1 1 dx cfg s))))

  (define (rhs-y-lines! dst src rho qs cfg k s)
    (let* ([n (lu-config-n cfg)] [plane (fx* k (fx* n n))])
      (do ([i 1 (fx+ i 1)]) ((fx= i (fx- n 1)))
        (line-operator! dst src rho qs (fx+ plane i) n 2 dy cfg s))))

  ;; The operator along the z lines of the points i-lo .. i-hi - 1 of row j.
  (define (z-row! dst src rho qs cfg j i-lo i-hi s)
    (let ([n (lu-config-n cfg)])
      (do ([i i-lo (fx+ i 1)]) ((fx= i i-hi))
        (line-operator! dst src rho qs (fx+ (fx* j n) i) (fx* n n) 3 dz cfg s))))

  ;; frct = Op(exact solution), computed once before the iterations; the
  ;; exact field is built in work, its derived quantities in rho and qs.
  (define (compute-forcing! frct work rho qs cfg)
    (let* ([n (lu-config-n cfg)] [points (fx* n (fx* n n))] [s (make-line-scratch n)])
      (fill-exact! work cfg)
      (do ([p 0 (fx+ p 1)]) ((fx= p (fx* 5 points))) (fl@! frct p 0.0))
      (do ([p 0 (fx+ p 1)]) ((fx= p points)) (set-derived! work rho qs p))
      (do ([k 1 (fx+ k 1)]) ((fx= k (fx- n 1))) (xy-plane! frct work rho qs cfg k s))
      (do ([j 1 (fx+ j 1)]) ((fx= j (fx- n 1))) (z-row! frct work rho qs cfg j 1 (fx- n 1) s))))

  ;; rhs in three phases, each over a range [from, to) of planes or rows
  ;; and separated by barriers: (1) rsd = -frct and rho, qs of u on planes
  ;; k; (2) the x and y lines of interior planes k; (3) the z lines of
  ;; a list of rows (j i-lo . i-hi), each the points i-lo .. i-hi - 1 of
  ;; row j.
  (define (rhs-init-planes! rsd frct u rho qs cfg from to)
    (let ([nn (fx* (lu-config-n cfg) (lu-config-n cfg))])
      (do ([p (fx* from nn) (fx+ p 1)]) ((fx= p (fx* to nn)))
        (rhs-init-point! rsd frct u rho qs p))))

  ;; Phase (1) at point p alone.
  (define (rhs-init-point! rsd frct u rho qs p)
    (let ([b (fx* p 5)])
      (do ([m 0 (fx+ m 1)]) ((fx= m 5))
        (fl@! rsd (fx+ b m) (fl- (fl@ frct (fx+ b m)))))
      (set-derived! u rho qs p)))

  (define (rhs-xy-planes! rsd u rho qs cfg from to s)
    (do ([k from (fx+ k 1)]) ((fx= k to)) (xy-plane! rsd u rho qs cfg k s)))

  (define (rhs-z-rows! rsd u rho qs cfg rows s)
    (for-each (lambda (row) (z-row! rsd u rho qs cfg (car row) (cadr row) (cddr row) s)) rows)))
