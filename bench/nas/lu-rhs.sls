#!chezscheme
;;; LU's spatial operator: the residual of the steady compressible
;;; Navier-Stokes equations discretised by central differences, with
;;; fourth-order artificial dissipation.  The operator is a sum over the
;;; three directions of one line operator applied along every grid line of
;;; that direction; erhs applies it to the exact solution (the forcing
;;; term frct), rhs to the current solution u (rsd = Op(u) - frct).
(library (nas lu-rhs)
  (export make-line-scratch compute-forcing!
          rhs-init-planes! rhs-xy-planes! rhs-z-rows!)
  (import (except (chezscheme) fl+ fl- fl* fl/ flsqrt fx+ fx- fx* fx= fx< fx> fx<= fx>= fxsll)
          (nas lu-ops) (nas lu-grid))

  ;; Scratch for one line: the 5 fluxes at each of n points.
  (define (make-line-scratch n) (make-bytevector (fx* 40 n)))

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
      (define (point a) (fx+ base (fx* a stride)))
      ;; the convective fluxes at every point
      (do ([a 0 (fx+ a 1)]) ((fx= a n))
        (let* ([p (point a)] [b (fx* p 5)] [o (fx* a 5)]
               [r (fl@ rho p)] [q (fl@ qs p)] [un (fl@ src (fx+ b nd))]
               [vn (fl* un r)] [e (fl@ src (fx+ b 4))])
          (flux! s o 0 un)
          (do ([m 1 (fx+ m 1)]) ((fx= m 4))
            (let ([f (fl* (fl@ src (fx+ b m)) vn)])
              (flux! s o m (if (fx= m nd) (fl+ f (fl* c2 (fl- e q))) f))))
          (flux! s o 4 (fl* (fl- (fl* c1 e) (fl* c2 q)) vn))))
      (do ([a 1 (fx+ a 1)]) ((fx= a last))
        (let ([b (fx* 5 (point a))] [o (fx* a 5)])
          (do ([m 0 (fx+ m 1)]) ((fx= m 5))
            (fl@! dst (fx+ b m)
                  (fl- (fl@ dst (fx+ b m))
                       (fl* t2 (fl- (flux s (fx+ o 5) m) (flux s (fx- o 5) m))))))))
      ;; the viscous fluxes between points a-1 and a, in slots 1..4 of a
      (do ([a 1 (fx+ a 1)]) ((fx= a n))
        (let* ([p (point a)] [pm (fx- p stride)] [b (fx* p 5)] [bm (fx* pm 5)]
               [r (fl@ rho p)] [rm (fl@ rho pm)] [o (fx* a 5)])
          (let ([v1 (fl* r (fl@ src (fx+ b 1)))] [v2 (fl* r (fl@ src (fx+ b 2)))]
                [v3 (fl* r (fl@ src (fx+ b 3)))] [v4 (fl* r (fl@ src (fx+ b 4)))]
                [w1 (fl* rm (fl@ src (fx+ bm 1)))] [w2 (fl* rm (fl@ src (fx+ bm 2)))]
                [w3 (fl* rm (fl@ src (fx+ bm 3)))] [w4 (fl* rm (fl@ src (fx+ bm 4)))])
            (flux! s o 1 (fl* (if (fx= nd 1) t3n t3) (fl- v1 w1)))
            (flux! s o 2 (fl* (if (fx= nd 2) t3n t3) (fl- v2 w2)))
            (flux! s o 3 (fl* (if (fx= nd 3) t3n t3) (fl- v3 w3)))
            (let ([vn (case nd [(1) v1] [(2) v2] [else v3])]
                  [wn (case nd [(1) w1] [(2) w2] [else w3])])
              (flux! s o 4
                     (fl+ (fl* k-kin (fl- (fl+ (fl* v1 v1) (fl* v2 v2) (fl* v3 v3))
                                          (fl+ (fl* w1 w1) (fl* w2 w2) (fl* w3 w3))))
                          (fl* k-norm (fl- (fl* vn vn) (fl* wn wn)))
                          (fl* k-energy (fl- v4 w4))))))))
      ;; viscous terms and second differences at the interior points
      (do ([a 1 (fx+ a 1)]) ((fx= a last))
        (let* ([p (point a)] [b (fx* p 5)] [bm (fx* 5 (fx- p stride))]
               [bp (fx* 5 (fx+ p stride))] [o (fx* a 5)])
          (do ([m 0 (fx+ m 1)]) ((fx= m 5))
            (let ([d2 (fl* kd (fl+ (fl- (fl@ src (fx+ bm m)) (fl* 2.0 (fl@ src (fx+ b m))))
                                   (fl@ src (fx+ bp m))))])
              (fl@! dst (fx+ b m)
                    (if (fx= m 0)
                        (fl+ (fl@ dst b) d2)
                        (fl+ (fl@ dst (fx+ b m))
                             (fl* kv (fl- (flux s (fx+ o 5) m) (flux s o m)))
                             d2)))))))
      ;; fourth-order dissipation, one-sided next to the ends of the line
      (do ([a 1 (fx+ a 1)]) ((fx= a last))
        (let ([b (fx* 5 (point a))]
              [bm2 (and (fx>= a 2) (fx* 5 (point (fx- a 2))))]
              [bm1 (fx* 5 (point (fx- a 1)))]
              [bp1 (fx* 5 (point (fx+ a 1)))]
              [bp2 (and (fx<= a (fx- n 3)) (fx* 5 (point (fx+ a 2))))])
          (do ([m 0 (fx+ m 1)]) ((fx= m 5))
            (let ([x (fl@ src (fx+ b m))]
                  [xm1 (fl@ src (fx+ bm1 m))]
                  [xp1 (fl@ src (fx+ bp1 m))])
              (fl@! dst (fx+ b m)
                    (fl- (fl@ dst (fx+ b m))
                         (fl* dissipation
                              (cond
                                [(fx= a 1)
                                 (fl+ (fl- (fl* 5.0 x) (fl* 4.0 xp1)) (fl@ src (fx+ bp2 m)))]
                                [(fx= a 2)
                                 (fl+ (fl- (fl+ (fl* -4.0 xm1) (fl* 6.0 x)) (fl* 4.0 xp1))
                                      (fl@ src (fx+ bp2 m)))]
                                [(fx= a (fx- n 2))
                                 (fl+ (fl- (fl@ src (fx+ bm2 m)) (fl* 4.0 xm1)) (fl* 5.0 x))]
                                [(fx= a (fx- n 3))
                                 (fl- (fl+ (fl- (fl@ src (fx+ bm2 m)) (fl* 4.0 xm1)) (fl* 6.0 x))
                                      (fl* 4.0 xp1))]
                                [else
                                 (fl+ (fl- (fl+ (fl- (fl@ src (fx+ bm2 m)) (fl* 4.0 xm1))
                                                (fl* 6.0 x))
                                           (fl* 4.0 xp1))
                                      (fl@ src (fx+ bp2 m)))]))))))))))

  ;; 1/density and kinetic energy density of field f at point p.
  (define (set-derived! f rho qs p)
    (let* ([b (fx* p 5)] [r (fl/ 1.0 (fl@ f b))]
           [a (fl@ f (fx+ b 1))] [c (fl@ f (fx+ b 2))] [d (fl@ f (fx+ b 3))])
      (fl@! rho p r)
      (fl@! qs p (fl* (fl* 0.5 (fl+ (fl* a a) (fl* c c) (fl* d d))) r))))

  ;; Dissipation coefficients of the x, y and z directions.
  (define dx 0.75) (define dy 0.75) (define dz 1.0)

  ;; The operator along the x and y lines of plane k.
  (define (xy-plane! dst src rho qs cfg k s)
    (let* ([n (lu-config-n cfg)] [plane (fx* k (fx* n n))])
      (do ([j 1 (fx+ j 1)]) ((fx= j (fx- n 1)))
        (line-operator! dst src rho qs (fx+ plane (fx* j n)) 1 1 dx cfg s))
      (do ([i 1 (fx+ i 1)]) ((fx= i (fx- n 1)))
        (line-operator! dst src rho qs (fx+ plane i) n 2 dy cfg s))))

  ;; The operator along the z lines of row j.
  (define (z-row! dst src rho qs cfg j s)
    (let ([n (lu-config-n cfg)])
      (do ([i 1 (fx+ i 1)]) ((fx= i (fx- n 1)))
        (line-operator! dst src rho qs (fx+ (fx* j n) i) (fx* n n) 3 dz cfg s))))

  ;; frct = Op(exact solution), computed once before the iterations; the
  ;; exact field is built in work, its derived quantities in rho and qs.
  (define (compute-forcing! frct work rho qs cfg)
    (let* ([n (lu-config-n cfg)] [points (fx* n (fx* n n))] [s (make-line-scratch n)])
      (fill-exact! work cfg)
      (do ([p 0 (fx+ p 1)]) ((fx= p (fx* 5 points))) (fl@! frct p 0.0))
      (do ([p 0 (fx+ p 1)]) ((fx= p points)) (set-derived! work rho qs p))
      (do ([k 1 (fx+ k 1)]) ((fx= k (fx- n 1))) (xy-plane! frct work rho qs cfg k s))
      (do ([j 1 (fx+ j 1)]) ((fx= j (fx- n 1))) (z-row! frct work rho qs cfg j s))))

  ;; rhs in three phases, each over a range [from, to) of planes or rows
  ;; and separated by barriers: (1) rsd = -frct and rho, qs of u on planes
  ;; k; (2) the x and y lines of interior planes k; (3) the z lines of
  ;; interior rows j.
  (define (rhs-init-planes! rsd frct u rho qs cfg from to)
    (let ([nn (fx* (lu-config-n cfg) (lu-config-n cfg))])
      (do ([p (fx* from nn) (fx+ p 1)]) ((fx= p (fx* to nn)))
        (let ([b (fx* p 5)])
          (do ([m 0 (fx+ m 1)]) ((fx= m 5))
            (fl@! rsd (fx+ b m) (fl- (fl@ frct (fx+ b m)))))
          (set-derived! u rho qs p)))))

  (define (rhs-xy-planes! rsd u rho qs cfg from to s)
    (do ([k from (fx+ k 1)]) ((fx= k to)) (xy-plane! rsd u rho qs cfg k s)))

  (define (rhs-z-rows! rsd u rho qs cfg from to s)
    (do ([j from (fx+ j 1)]) ((fx= j to)) (z-row! rsd u rho qs cfg j s))))
