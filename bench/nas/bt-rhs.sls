#!chezscheme
;;; BT's right-hand side: the explicit part of each time step.  For the
;;; planes k in [klo, khi): prepare! derives the pointwise quantities from
;;; u (every point of the plane, boundary included); rhs! sets rhs to dt
;;; times (forcing + the three directions' flux differences, viscous terms
;;; and fourth-order dissipation) at the interior points of the interior
;;; planes among them.  rhs! reads u and the prepared quantities of the
;;; planes k-2 .. k+2, so all of them must be prepared first.
(library (nas bt-rhs)
  (export prepare! rhs!)
  (import (except (chezscheme) fl+ fl- fl* fl/ fx+ fx- fx*) (nas bt-unsafe)
          (nas bt-grid) (nas bt-exact))

  (define (prepare! cs A klo khi)
    (let* ([n (consts-n cs)] [u (addrs-u A)] [rho (addrs-rho-i A)] [us (addrs-us A)]
           [vs (addrs-vs A)] [ws (addrs-ws A)] [qs (addrs-qs A)] [sq (addrs-square A)]
           [end (fx* n (fx* n khi))])
      (do ([pt (fx* n (fx* n klo)) (fx+ pt 1)]) ((fx= pt end))
        (let* ([o (fx* 5 pt)]
               [ri (fl/ 1.0 (fref u o))]
               [u1 (fref u (fx+ o 1))] [u2 (fref u (fx+ o 2))] [u3 (fref u (fx+ o 3))]
               [s (fl* 0.5 (fl* (fl+ (fl+ (fl* u1 u1) (fl* u2 u2)) (fl* u3 u3)) ri))])
          (fset! rho pt ri)
          (fset! us pt (fl* u1 ri))
          (fset! vs pt (fl* u2 ri))
          (fset! ws pt (fl* u3 ri))
          (fset! sq pt s)
          (fset! qs pt (fl* s ri))))))

  ;; Fourth-order dissipation at position p of a line of n points (1 <= p
  ;; <= n-2) from the values at offsets -2 .. 2, one-sided near the ends
  ;; (where the missing offsets are not read).
  (define-syntax dissipation
    (syntax-rules ()
      [(_ p n mm m z pl pp)
       (cond
         [(fx= p 1) (fl+ (fl- (fl* 5.0 z) (fl* 4.0 pl)) pp)]
         [(fx= p 2) (fl+ (fl- (fl+ (fl* -4.0 m) (fl* 6.0 z)) (fl* 4.0 pl)) pp)]
         [(fx= p (fx- n 3)) (fl- (fl+ (fl- mm (fl* 4.0 m)) (fl* 6.0 z)) (fl* 4.0 pl))]
         [(fx= p (fx- n 2)) (fl+ (fl- mm (fl* 4.0 m)) (fl* 5.0 z))]
         [else (fl+ (fl- (fl+ mm pp) (fl* 4.0 (fl+ m pl))) (fl* 6.0 z))])]))

  ;; x_p - 2 x_0 + x_m
  (define-syntax second-difference
    (syntax-rules () [(_ xp x0 xm) (fl+ (fl- xp (fl* 2.0 x0)) xm)]))

  ;; Direction d's (0 x, 1 y, 2 z) procedure (pt o p) -> five values: the
  ;; flux differences, viscous terms and dissipation at interior point pt
  ;; (first element o, position p along d).  Each operand is read once.
  (define (make-direction cs A d)
    (let* ([n (consts-n cs)] [u (addrs-u A)] [rho (addrs-rho-i A)]
           [qs (addrs-qs A)] [sq (addrs-square A)]
           [us (addrs-us A)] [vs (addrs-vs A)] [ws (addrs-ws A)]
           [vn (vector-ref (vector us vs ws) d)] [nm (fx+ d 1)]
           [s (case d [(0) 1] [(1) n] [else (fx* n n)])] [s5 (fx* 5 s)]
           [dt1 (vector-ref (consts-dt1 cs) d)] [t2 (consts-t2 cs)]
           [con2 (consts-con2 cs)] [con2n (fl* (consts-con2 cs) (consts-con43 cs))]
           [con3 (consts-con3 cs)] [con4 (consts-con4 cs)] [con5 (consts-con5 cs)]
           [c1 (consts-c1 cs)] [c2 (consts-c2 cs)] [dssp (consts-dssp cs)])
      (lambda (pt o p)
        (let* ([op (fx+ o s5)] [om (fx- o s5)] [opp (fx+ op s5)] [omm (fx- om s5)]
               [pp (fx+ pt s)] [pm (fx- pt s)] [lo2? (fx>= p 2)] [hi2? (fx<= p (fx- n 3))])
          ;; binds the five values of component c along the stencil
          (define-syntax with-stencil
            (syntax-rules ()
              [(_ (xmm xm x xp xpp) c body)
               (let ([xmm (if lo2? (fref u (fx+ omm c)) 0.0)] [xm (fref u (fx+ om c))]
                     [x (fref u (fx+ o c))] [xp (fref u (fx+ op c))]
                     [xpp (if hi2? (fref u (fx+ opp c)) 0.0)])
                 body)]))
          (define-syntax select
            (syntax-rules () [(_ x1 x2 x3) (case nm [(1) x1] [(2) x2] [else x3])]))
          (with-stencil (a0mm a0m a0 a0p a0pp) 0
           (with-stencil (a1mm a1m a1 a1p a1pp) 1
            (with-stencil (a2mm a2m a2 a2p a2pp) 2
             (with-stencil (a3mm a3m a3 a3p a3pp) 3
              (with-stencil (a4mm a4m a4 a4p a4pp) 4
               (let ([unp (select a1p a2p a3p)] [unm (select a1m a2m a3m)]
                     [vnp (fref vn pp)] [vn0 (fref vn pt)] [vnm (fref vn pm)]
                     [sqp (fref sq pp)] [sqm (fref sq pm)])
                 ;; momentum component m (1 .. 3) with velocity field vel
                 (define-syntax momentum
                   (syntax-rules ()
                     [(_ m vel amm am a ap app)
                      (fl- (fl- (fl+ (fl* dt1 (second-difference ap a am))
                                     (if (fx= m nm)
                                         (fl* con2n (second-difference vnp vn0 vnm))
                                         (fl* con2 (second-difference (fref vel pp) (fref vel pt)
                                                                      (fref vel pm)))))
                                (fl* t2 (if (fx= m nm)
                                            (fl+ (fl- (fl* ap vnp) (fl* am vnm))
                                                 (fl* (fl+ (fl- (fl- a4p sqp) a4m) sqm) c2))
                                            (fl- (fl* ap vnp) (fl* am vnm)))))
                           (fl* dssp (dissipation p n amm am a ap app)))]))
                 (values
                   (fl- (fl- (fl* dt1 (second-difference a0p a0 a0m)) (fl* t2 (fl- unp unm)))
                        (fl* dssp (dissipation p n a0mm a0m a0 a0p a0pp)))
                   (momentum 1 us a1mm a1m a1 a1p a1pp)
                   (momentum 2 vs a2mm a2m a2 a2p a2pp)
                   (momentum 3 ws a3mm a3m a3 a3p a3pp)
                   (fl- (fl- (fl+ (fl+ (fl+ (fl* dt1 (second-difference a4p a4 a4m))
                                            (fl* con3 (second-difference (fref qs pp) (fref qs pt)
                                                                         (fref qs pm))))
                                       (fl* con4 (fl+ (fl- (fl* vnp vnp) (fl* (fl* 2.0 vn0) vn0))
                                                      (fl* vnm vnm))))
                                  (fl* con5 (fl+ (fl- (fl* a4p (fref rho pp))
                                                      (fl* (fl* 2.0 a4) (fref rho pt)))
                                                 (fl* a4m (fref rho pm)))))
                             (fl* t2 (fl- (fl* (fl- (fl* c1 a4p) (fl* c2 sqp)) vnp)
                                          (fl* (fl- (fl* c1 a4m) (fl* c2 sqm)) vnm))))
                        (fl* dssp (dissipation p n a4mm a4m a4 a4p a4pp))))))))))))))

  ;; rhs <- dt (forcing + the three directions' terms) at the interior
  ;; points of the interior planes among [klo, khi).
  (define (rhs! cs A klo khi)
    (let* ([n (consts-n cs)] [r (addrs-rhs A)] [f (addrs-forcing A)] [dt (consts-dt cs)]
           [x (make-direction cs A 0)] [y (make-direction cs A 1)] [z (make-direction cs A 2)])
      (do ([k (fxmax klo 1) (fx+ k 1)]) ((fx>= k (fxmin khi (fx- n 1))))
        (do ([j 1 (fx+ j 1)]) ((fx= j (fx- n 1)))
          (do ([i 1 (fx+ i 1)]) ((fx= i (fx- n 1)))
            (let* ([pt (fx+ i (fx* n (fx+ j (fx* n k))))] [o (fx* 5 pt)])
              (let-values ([(x0 x1 x2 x3 x4) (x pt o i)]
                           [(y0 y1 y2 y3 y4) (y pt o j)]
                           [(z0 z1 z2 z3 z4) (z pt o k)])
                (define-syntax store!
                  (syntax-rules ()
                    [(_ c xc yc zc)
                     (let ([oc (fx+ o c)])
                       (fset! r oc (fl* dt (fl+ (fl+ (fl+ (fref f oc) xc) yc) zc))))]))
                (store! 0 x0 y0 z0)
                (store! 1 x1 y1 z1)
                (store! 2 x2 y2 z2)
                (store! 3 x3 y3 z3)
                (store! 4 x4 y4 z4))))))))
)
