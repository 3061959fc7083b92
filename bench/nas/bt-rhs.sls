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
  (import (chezscheme) (nas bt-grid) (nas bt-exact))

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

  ;; Fourth-order dissipation stencil at position p of a line of n points
  ;; (1 <= p <= n-2), one-sided near the ends.  v: position offset -> value;
  ;; only the offsets the case needs are read.
  (define-syntax dissipation
    (syntax-rules ()
      [(_ p n v)
       (cond
         [(fx= p 1) (fl+ (fl- (fl* 5.0 (v 0)) (fl* 4.0 (v 1))) (v 2))]
         [(fx= p 2) (fl+ (fl- (fl+ (fl* -4.0 (v -1)) (fl* 6.0 (v 0))) (fl* 4.0 (v 1))) (v 2))]
         [(fx= p (fx- n 3)) (fl- (fl+ (fl- (v -2) (fl* 4.0 (v -1))) (fl* 6.0 (v 0))) (fl* 4.0 (v 1)))]
         [(fx= p (fx- n 2)) (fl+ (fl- (v -2) (fl* 4.0 (v -1))) (fl* 5.0 (v 0)))]
         [else (fl+ (fl- (fl+ (fl- (v -2) (fl* 4.0 (v -1))) (fl* 6.0 (v 0))) (fl* 4.0 (v 1))) (v 2))])]))

  ;; a[x+s] - 2 a[x] + a[x-s]
  (define-syntax second-difference
    (syntax-rules ()
      [(_ a x s) (fl+ (fl- (fref a (fx+ x s)) (fl* 2.0 (fref a x))) (fref a (fx- x s)))]))

  ;; rhs += the terms of direction d (0 x, 1 y, 2 z) at the interior points
  ;; of planes [klo, khi).
  (define (direction! cs A d klo khi)
    (let* ([n (consts-n cs)] [u (addrs-u A)] [r (addrs-rhs A)] [rho (addrs-rho-i A)]
           [qs (addrs-qs A)] [sq (addrs-square A)]
           [vel (vector (addrs-us A) (addrs-vs A) (addrs-ws A))]
           [vn (vector-ref vel d)] [nm (fx+ d 1)]
           [s (case d [(0) 1] [(1) n] [else (fx* n n)])] [s5 (fx* 5 s)]
           [dt1 (vector-ref (consts-dt1 cs) d)] [t2 (consts-t2 cs)]
           [con2 (consts-con2 cs)] [con2n (fl* (consts-con2 cs) (consts-con43 cs))]
           [con3 (consts-con3 cs)] [con4 (consts-con4 cs)] [con5 (consts-con5 cs)]
           [c1 (consts-c1 cs)] [c2 (consts-c2 cs)] [dssp (consts-dssp cs)])
      (do ([k klo (fx+ k 1)]) ((fx= k khi))
        (do ([j 1 (fx+ j 1)]) ((fx= j (fx- n 1)))
          (do ([i 1 (fx+ i 1)]) ((fx= i (fx- n 1)))
            (let* ([pt (fx+ i (fx* n (fx+ j (fx* n k))))] [pp (fx+ pt s)] [pm (fx- pt s)]
                   [o (fx* 5 pt)] [op (fx+ o s5)] [om (fx- o s5)]
                   [p (case d [(0) i] [(1) j] [else k])]
                   [vnp (fref vn pp)] [vn0 (fref vn pt)] [vnm (fref vn pm)])
              (fref+ r o (fl- (fl* dt1 (second-difference u o s5))
                              (fl* t2 (fl- (fref u (fx+ op nm)) (fref u (fx+ om nm))))))
              (do ([m 1 (fx+ m 1)]) ((fx= m 4))
                (let ([up (fref u (fx+ op m))] [um (fref u (fx+ om m))])
                  (fref+ r (fx+ o m)
                         (fl- (fl+ (fl* dt1 (second-difference u (fx+ o m) s5))
                                   (fl* (if (fx= m nm) con2n con2)
                                        (second-difference (vector-ref vel (fx- m 1)) pt s)))
                              (fl* t2 (if (fx= m nm)
                                          (fl+ (fl- (fl* up vnp) (fl* um vnm))
                                               (fl* (fl+ (fl- (fl- (fref u (fx+ op 4)) (fref sq pp))
                                                              (fref u (fx+ om 4)))
                                                         (fref sq pm))
                                                    c2))
                                          (fl- (fl* up vnp) (fl* um vnm))))))))
              (let ([u4p (fref u (fx+ op 4))] [u4m (fref u (fx+ om 4))])
                (fref+ r (fx+ o 4)
                       (fl- (fl+ (fl+ (fl+ (fl* dt1 (second-difference u (fx+ o 4) s5))
                                           (fl* con3 (second-difference qs pt s)))
                                      (fl* con4 (fl+ (fl- (fl* vnp vnp) (fl* (fl* 2.0 vn0) vn0))
                                                     (fl* vnm vnm))))
                                 (fl* con5 (fl+ (fl- (fl* u4p (fref rho pp))
                                                     (fl* (fl* 2.0 (fref u (fx+ o 4))) (fref rho pt)))
                                                (fl* u4m (fref rho pm)))))
                            (fl* t2 (fl- (fl* (fl- (fl* c1 u4p) (fl* c2 (fref sq pp))) vnp)
                                         (fl* (fl- (fl* c1 u4m) (fl* c2 (fref sq pm))) vnm))))))
              (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                (let ([om (fx+ o m)])
                  (define-syntax v
                    (syntax-rules () [(_ x) (fref u (fx+ om (fx* x s5)))]))
                  (fref+ r om (fl* (fl- 0.0 dssp) (dissipation p n v)))))))))))

  (define (rhs! cs A klo khi)
    (let* ([n (consts-n cs)] [r (addrs-rhs A)] [f (addrs-forcing A)] [dt (consts-dt cs)]
           [lo (fxmax klo 1)] [hi (fxmin khi (fx- n 1))])
      (define (interior proc)
        (do ([k lo (fx+ k 1)]) ((fx>= k hi))
          (do ([j 1 (fx+ j 1)]) ((fx= j (fx- n 1)))
            (do ([o (fx* 5 (fx+ 1 (fx* n (fx+ j (fx* n k)))))
                    (fx+ o 1)])
                ((fx= o (fx* 5 (fx+ (fx- n 1) (fx* n (fx+ j (fx* n k)))))))
              (proc o)))))
      (when (fx< lo hi)
        (interior (lambda (o) (fset! r o (fref f o))))
        (direction! cs A 0 lo hi)
        (direction! cs A 1 lo hi)
        (direction! cs A 2 lo hi)
        (interior (lambda (o) (fset! r o (fl* (fref r o) dt))))))))
