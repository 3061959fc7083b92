#!chezscheme
;;; SP's line solves (NPB x_solve, y_solve, z_solve): along every grid line
;;; of a direction, three scalar pentadiagonal systems (the u, u+c and u-c
;;; factors) solved by the Thomas algorithm, then the block-diagonal
;;; product that follows each (ninvr after xi, pinvr after eta, tzetar
;;; after zeta; the zeta step also adds the update to u (NPB add) and
;;; refreshes the auxiliary quantities of the updated points).
;;;
;;; A line's unknowns are its n-2 interior points g = 1 .. n-2.  The
;;; reference also carries the two boundary points as identity rows; their
;;; right-hand side is always zero, so dropping them changes no result.
;;; The diagonals of the u factor are, at interior point g (cv the velocity
;;; along the line, rhon the viscous bound, s the sound speed, all times
;;; the step ratios):
;;;   a = comz1, b = -dtt2 cv[g-1] - dtt1 rhon[g-1] - comz4,
;;;   c = 1 + c2dtt1 rhon[g] + (comz5 at g = 1 and n-2, else comz6),
;;;   d = dtt2 cv[g+1] - dtt1 rhon[g+1] - comz4, e = comz1;
;;; the u+c factor has b - s[g-1] and d + s[g+1], the u-c factor b + s[g-1]
;;; and d - s[g+1].  Entries outside the band the elimination reaches
;;; (a and b of the first rows, d and e of the last) are never read.
;;;
;;; The forward elimination carries the partly reduced next two rows in
;;; loop variables and stores the normalised d and e of each row in the
;;; member's work line (a bytevector of 64 n bytes: cv, rhon, s, b, c, d,
;;; then the reduced d and e, n doubles each).
(library (nas sp-solve)
  (export sp-x-solve! sp-y-solve! sp-z-solve! sp-work-line)
  (import (except (chezscheme) fl+ fl- fl* fl/ flsqrt fl< fl> fx+ fx- fx* fx< fx<= fx= fx>= fx>)
          (nas sp-memory) (nas sp-constants) (nas sp-setup))

  (define (sp-work-line n) (make-bytevector (fx* 64 n)))

  ;; (line-pass ((off R R1 Rp1 Rp2) ...) b-of d-of env post): one factor's
  ;; elimination and back substitution for the components at byte offsets
  ;; off ..., the other names being the caller's temporaries per component;
  ;; b-of and d-of give the factor's unreduced b and d at g; post runs at
  ;; each row once its components are final.
  (define-syntax line-pass
    (syntax-rules ()
      [(_ ((off R R1 Rp1 Rp2) ...) b-of d-of
          (rhs wb o0 su a0 sa n comz1 c-at dd-at ee-at) post)
       (let ([last (fx- n 2)])
         (let fwd ([g 1] [o (fx+ o0 su)] [cr (bref wb (c-at 1))] [dr (d-of 1)]
                   [R (fref rhs (fx+ (fx+ o0 su) off))] ...
                   [b1 (b-of 2)] [c1 (bref wb (c-at 2))]
                   [R1 (fref rhs (fx+ (fx+ o0 (fx+ su su)) off))] ...)
           (let* ([fac (fl/ 1.0 cr)] [d (fl* dr fac)] [e (fl* comz1 fac)] [R (fl* fac R)] ...)
             (bset! wb (dd-at g) d)
             (bset! wb (ee-at g) e)
             (fset! rhs (fx+ o off) R) ...
             (when (fx< g last)
               (let ([g1 (fx+ g 1)] [o1 (fx+ o su)])
                 (if (fx< g1 last)
                     (let ([g2 (fx+ g 2)] [o2 (fx+ o1 su)])
                       (fwd g1 o1 (fl- c1 (fl* b1 d)) (fl- (d-of g1) (fl* b1 e)) (fl- R1 (fl* b1 R)) ...
                            (fl- (b-of g2) (fl* comz1 d)) (fl- (bref wb (c-at g2)) (fl* comz1 e))
                            (fl- (fref rhs (fx+ o2 off)) (fl* comz1 R)) ...))
                     ;; row g1 is the last: no row g2, placeholders never read
                     (fwd g1 o1 (fl- c1 (fl* b1 d)) (fl- (d-of g1) (fl* b1 e)) (fl- R1 (fl* b1 R)) ...
                          0.0 0.0 (begin 'R1 0.0) ...))))))
         (let* ([ol (fx+ o0 (fx* last su))] [al (fx+ a0 (fx* last sa))]
                [Rp1 (fref rhs (fx+ ol off))] ...)
           (post ol al Rp1 ...)
           (let* ([g (fx- last 1)] [o (fx- ol su)] [a (fx- al sa)] [dd (bref wb (dd-at g))]
                  [R (fl- (fref rhs (fx+ o off)) (fl* dd Rp1))] ...)
             (fset! rhs (fx+ o off) R) ...
             (post o a R ...)
             (let bwd ([g (fx- g 1)] [o (fx- o su)] [a (fx- a sa)] [Rp1 R] ... [Rp2 Rp1] ...)
               (unless (fx= g 0)
                 (let ([dd (bref wb (dd-at g))] [ee (bref wb (ee-at g))])
                   (let ([R (fl- (fl- (fref rhs (fx+ o off)) (fl* dd Rp1)) (fl* ee Rp2))] ...)
                     (fset! rhs (fx+ o off) R) ...
                     (post o a R ...)
                     (bwd (fx- g 1) (fx- o su) (fx- a sa) R ... Rp1 ...))))))))]))

  (define-syntax no-post (syntax-rules () [(_ o a r ...) (void)]))

  ;; (define-line-solver name dir vel-slot post): (name c u rhs aux wb o0 su a0 sa)
  ;; solves the line whose point g lies at byte o0 + g su of u and rhs and
  ;; a0 + g sa of aux; dir is the direction (0 xi, 1 eta, 2 zeta), vel-slot
  ;; the aux slot of the velocity along it.  post is a macro (post env o a r4) run at each point
  ;; once the line is solved, env being (u rhs aux bt c2iv c1c2 c1 c2).
  (define-syntax define-line-solver
    (syntax-rules ()
      [(_ name dir vel-slot post)
       (define (name c u rhs aux wb o0 su a0 sa)
         (let* ([n (c-n c)] [c3c4 (c-c3c4 c)] [con43 (c-con43 c)] [c1c5 (c-c1c5 c)]
                [dtt1 (c-dtt1 c)] [dtt2 (c-dtt2 c)] [-dtt2 (fl- (c-dtt2 c))] [c2dtt1 (c-c2dtt1 c)]
                [comz1 (c-comz1 c)] [comz4 (c-comz4 c)] [comz5 (c-comz5 c)] [comz6 (c-comz6 c)]
                [dd (vector-ref (c-dd c) dir)]
                [bt (c-bt c)] [c2iv (c-c2iv c)] [c1c2 (c-c1c2 c)] [c1 (c-c1 c)] [c2 (c-c2 c)]
                [n8 (fx* n 8)])
           (define-syntax at (syntax-rules () [(_ section g) (fx+ (fx* section n8) (fx* g 8))]))
           (define-syntax cv-at (syntax-rules () [(_ g) (at 0 g)]))
           (define-syntax rhon-at (syntax-rules () [(_ g) (at 1 g)]))
           (define-syntax s-at (syntax-rules () [(_ g) (at 2 g)]))
           (define-syntax b-at (syntax-rules () [(_ g) (at 3 g)]))
           (define-syntax c-at (syntax-rules () [(_ g) (at 4 g)]))
           (define-syntax d-at (syntax-rules () [(_ g) (at 5 g)]))
           (define-syntax dd-at (syntax-rules () [(_ g) (at 6 g)]))
           (define-syntax ee-at (syntax-rules () [(_ g) (at 7 g)]))
           (define-syntax post* (syntax-rules () [(_ o a r (... ...)) (post (u rhs aux bt c2iv c1c2 c1 c2) o a r (... ...))]))
           (do ([g 0 (fx+ g 1)] [a a0 (fx+ a sa)]) ((fx= g n))
             (let ([ru1 (fl* c3c4 (fref aux (fx+ a aux-rho)))])
               (bset! wb (cv-at g) (fref aux (fx+ a vel-slot)))
               (bset! wb (rhon-at g) (flmax2 (flmax2 (fl+ dd (fl* con43 ru1)) (fl+ dd (fl* c1c5 ru1)))
                                             (flmax2 (fl+ dd ru1) dd)))
               (bset! wb (s-at g) (fl* dtt2 (fref aux (fx+ a aux-speed))))))
           (do ([g 1 (fx+ g 1)]) ((fx= g (fx- n 1)))
             (let ([gm (fx- g 1)] [gp (fx+ g 1)])
               (bset! wb (b-at g) (fl- (fl- (fl* -dtt2 (bref wb (cv-at gm)))
                                            (fl* dtt1 (bref wb (rhon-at gm))))
                                       comz4))
               (bset! wb (c-at g) (fl+ (fl+ 1.0 (fl* c2dtt1 (bref wb (rhon-at g))))
                                       (if (or (fx= g 1) (fx= g (fx- n 2))) comz5 comz6)))
               (bset! wb (d-at g) (fl- (fl- (fl* dtt2 (bref wb (cv-at gp)))
                                            (fl* dtt1 (bref wb (rhon-at gp))))
                                       comz4))))
           (line-pass ((0 r0 q0 p0 s0) (8 r1 q1 p1 s1) (16 r2 q2 p2 s2))
                      (lambda (g) (bref wb (b-at g))) (lambda (g) (bref wb (d-at g)))
                      (rhs wb o0 su a0 sa n comz1 c-at dd-at ee-at) no-post)
           (line-pass ((24 r3 q3 p3 s3))
                      (lambda (g) (fl- (bref wb (b-at g)) (bref wb (s-at (fx- g 1)))))
                      (lambda (g) (fl+ (bref wb (d-at g)) (bref wb (s-at (fx+ g 1)))))
                      (rhs wb o0 su a0 sa n comz1 c-at dd-at ee-at) no-post)
           (line-pass ((32 r4 q4 p4 s4))
                      (lambda (g) (fl+ (bref wb (b-at g)) (bref wb (s-at (fx- g 1)))))
                      (lambda (g) (fl- (bref wb (d-at g)) (bref wb (s-at (fx+ g 1)))))
                      (rhs wb o0 su a0 sa n comz1 c-at dd-at ee-at) post*)))]))

  ;; NPB ninvr at the point at byte o, whose rhs[4] is r4
  (define-syntax ninvr-post
    (syntax-rules ()
      [(_ (u rhs aux bt c2iv c1c2 c1 c2) o a r4)
       (let* ([r0 (fref rhs o)] [r1 (fref rhs (fx+ o 8))] [r2 (fref rhs (fx+ o 16))]
              [r3 (fref rhs (fx+ o 24))] [t1 (fl* bt r2)] [t2 (fl* 0.5 (fl+ r3 r4))])
         (fset! rhs o (fl- r1))
         (fset! rhs (fx+ o 8) r0)
         (fset! rhs (fx+ o 16) (fl* bt (fl- r3 r4)))
         (fset! rhs (fx+ o 24) (fl+ (fl- t1) t2))
         (fset! rhs (fx+ o 32) (fl+ t1 t2)))]))

  ;; NPB pinvr
  (define-syntax pinvr-post
    (syntax-rules ()
      [(_ (u rhs aux bt c2iv c1c2 c1 c2) o a r4)
       (let* ([r0 (fref rhs o)] [r1 (fref rhs (fx+ o 8))] [r2 (fref rhs (fx+ o 16))]
              [r3 (fref rhs (fx+ o 24))] [t1 (fl* bt r0)] [t2 (fl* 0.5 (fl+ r3 r4))])
         (fset! rhs o (fl* bt (fl- r3 r4)))
         (fset! rhs (fx+ o 8) (fl- r2))
         (fset! rhs (fx+ o 16) r1)
         (fset! rhs (fx+ o 24) (fl+ (fl- t1) t2))
         (fset! rhs (fx+ o 32) (fl+ t1 t2)))]))

  ;; NPB tzetar, then add (u += the result; rhs is not read again in the
  ;; step), then the point's auxiliary quantities from the new u
  (define-syntax tzetar-add-post
    (syntax-rules ()
      [(_ (u rhs aux bt c2iv c1c2 c1 c2) o a r4)
       (let* ([r0 (fref rhs o)] [r1 (fref rhs (fx+ o 8))] [r2 (fref rhs (fx+ o 16))]
              [r3 (fref rhs (fx+ o 24))]
              [xvel (fref aux (fx+ a aux-us))] [yvel (fref aux (fx+ a aux-vs))]
              [zvel (fref aux (fx+ a aux-ws))] [ac (fref aux (fx+ a aux-speed))]
              [ac2u (fl* ac ac)] [uz (fref u o)] [btuz (fl* bt uz)]
              [t1 (fl* (fl/ btuz ac) (fl+ r3 r4))] [t2 (fl+ r2 t1)] [t3 (fl* btuz (fl- r3 r4))])
         (fset! u o (fl+ uz t2))
         (fset! u (fx+ o 8) (fl+ (fref u (fx+ o 8)) (fl+ (fl* (fl- uz) r1) (fl* xvel t2))))
         (fset! u (fx+ o 16) (fl+ (fref u (fx+ o 16)) (fl+ (fl* uz r0) (fl* yvel t2))))
         (fset! u (fx+ o 24) (fl+ (fref u (fx+ o 24)) (fl+ (fl* zvel t2) t3)))
         (fset! u (fx+ o 32)
                (fl+ (fref u (fx+ o 32))
                     (fl+ (fl+ (fl+ (fl* uz (fl+ (fl* (fl- xvel) r1) (fl* yvel r0)))
                                    (fl* (fref aux (fx+ a aux-qs)) t2))
                               (fl* (fl* c2iv ac2u) t1))
                          (fl* zvel t3))))
         (aux-point! u aux o a c1c2 c1 c2))]))

  (define-line-solver x-line! 0 aux-us ninvr-post)
  (define-line-solver y-line! 1 aux-vs pinvr-post)
  (define-line-solver z-line! 2 aux-ws tzetar-add-post)

  ;; The xi lines of plane k, then ninvr.
  (define (sp-x-solve! c u rhs aux wb k)
    (let ([n (c-n c)])
      (do ([j 1 (fx+ j 1)]) ((fx= j (fx- n 1)))
        (let ([p (fx* (fx+ (fx* k n) j) n)])
          (x-line! c u rhs aux wb (fx* p 40) 40 (fx* p aux-width) aux-width)))))

  ;; The eta lines of plane k, then pinvr.
  (define (sp-y-solve! c u rhs aux wb k)
    (let ([n (c-n c)])
      (do ([i 1 (fx+ i 1)]) ((fx= i (fx- n 1)))
        (let ([p (fx+ (fx* (fx* k n) n) i)])
          (y-line! c u rhs aux wb (fx* p 40) (fx* 40 n) (fx* p aux-width) (fx* aux-width n))))))

  ;; The zeta lines of the plane j = const, then tzetar and add.
  (define (sp-z-solve! c u rhs aux wb j)
    (let* ([n (c-n c)] [n2 (fx* n n)])
      (do ([i 1 (fx+ i 1)]) ((fx= i (fx- n 1)))
        (let ([p (fx+ (fx* j n) i)])
          (z-line! c u rhs aux wb (fx* p 40) (fx* 40 n2) (fx* p aux-width) (fx* aux-width n2)))))))
