#!chezscheme
;;; BT's constants, its exact solution (a polynomial in the three
;;; coordinates whose coefficients are the specification's), the initial
;;; field (transfinite interpolation of the exact boundary values) and the
;;; forcing term that makes the exact solution a steady state of the
;;; discrete operator.  None of this is timed.
;;;
;;; The grid is a cube, so the x, y and z metric constants are equal; only
;;; the second-order dissipation coefficient differs by direction (0.75 in
;;; x and y, 1.0 in z; the five per-component values of the reference are
;;; all equal).
(library (nas bt-exact)
  (export make-constants consts-n consts-dt consts-dnm1 consts-t1 consts-t2
          consts-dd consts-dt1 consts-con2 consts-con3 consts-con4
          consts-con5 consts-dssp consts-c1 consts-c2 consts-c3c4 consts-c1345
          consts-con43
          exact-solution initialize! exact-rhs!)
  (import (chezscheme) (nas ns-exact) (nas bt-grid))

  (define-record-type consts
    (fields n dt dnm1 t1 t2 dd dt1 con1 con2 con3 con4 con5 dssp
            c1 c2 c3c4 c1345 con43)
    (sealed #t))

  ;; dd, dt1: vectors indexed by direction 0 (x), 1 (y), 2 (z).
  (define (make-constants n dt)
    (let* ([c1 1.4] [c2 0.4] [c3 0.1] [c4 1.0] [c5 1.4]
           [dnm1 (fl/ 1.0 (fixnum->flonum (fx- n 1)))]
           [t1 (fl/ 1.0 (fl* dnm1 dnm1))]
           [t2 (fl/ 1.0 (fl* 2.0 dnm1))]
           [t3 (fl/ 1.0 dnm1)]
           [dd (vector 0.75 0.75 1.0)]
           [c1c5 (fl* c1 c5)] [c3c4 (fl* c3 c4)] [c1345 (fl* c1c5 c3c4)]
           [conz1 (fl- 1.0 c1c5)] [con43 (fl/ 4.0 3.0)] [con16 (fl/ 1.0 6.0)]
           [c3c4t3 (fl* c3c4 t3)])
      (make-consts n dt dnm1 t1 t2 dd
                   (vector-map (lambda (d) (fl* d t1)) dd)
                   (fl* (fl* c3c4t3 con43) t3) (fl* c3c4t3 t3)
                   (fl* (fl* c3c4t3 conz1) t3) (fl* (fl* c3c4t3 con16) t3)
                   (fl* (fl* c3c4t3 c1c5) t3)
                   (fl* 0.25 (flmax 0.75 (flmax 0.75 1.0)))
                   c1 c2 c3c4 c1345 con43)))

  (define (coord k dnm1) (fl* (fixnum->flonum k) dnm1))

  ;; u <- the interpolated initial field, exact on the six faces.
  (define (initialize! cs u)
    (let* ([n (consts-n cs)] [dnm1 (consts-dnm1 cs)] [a (field-address u)]
           [p (make-faces)] [t (make-vector 5)])
      (do ([k 0 (fx+ k 1)]) ((fx= k n))
        (do ([j 0 (fx+ j 1)]) ((fx= j n))
          (do ([i 0 (fx+ i 1)]) ((fx= i n))
            (let ([xi (coord i dnm1)] [eta (coord j dnm1)] [zeta (coord k dnm1)]
                  [o (fx* 5 (fx+ i (fx* n (fx+ j (fx* n k)))))])
              (face-solutions! xi eta zeta p)
              (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                (fset! a (fx+ o m) (interpolated p m xi eta zeta)))
              ;; the faces carry the exact solution
              (when (or (fx= i 0) (fx= i (fx- n 1)) (fx= j 0) (fx= j (fx- n 1))
                        (fx= k 0) (fx= k (fx- n 1)))
                (exact-solution xi eta zeta t)
                (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                  (fset! a (fx+ o m) (vector-ref t m)))))))))
    u)

  ;; forcing <- minus the discrete operator applied to the exact solution,
  ;; at the interior points (zero on the boundary).
  (define (exact-rhs! cs forcing)
    (let* ([n (consts-n cs)] [dnm1 (consts-dnm1 cs)] [f (field-address forcing)]
           [ue (make-vector (fx* 5 n))] [buf (make-vector (fx* 5 n))]
           [cuf (make-vector n)] [q (make-vector n)] [tmp (make-vector 5)]
           [t2 (consts-t2 cs)] [c1 (consts-c1 cs)] [c2 (consts-c2 cs)]
           [con1 (consts-con1 cs)] [con2 (consts-con2 cs)] [con3 (consts-con3 cs)]
           [con4 (consts-con4 cs)] [con5 (consts-con5 cs)] [dssp (consts-dssp cs)])
      (define (UE p m) (vector-ref ue (fx+ (fx* 5 p) m)))
      (define (BUF p m) (vector-ref buf (fx+ (fx* 5 p) m)))
      (define (second-diff v p) (fl+ (fl- (v (fx+ p 1)) (fl* 2.0 (v p))) (v (fx- p 1))))
      (do ([i 0 (fx+ i 1)]) ((fx= i (fx* 5 (fx* n (fx* n n))))) (fset! f i 0.0))
      ;; direction d, normal momentum component nm = d+1; lines along d
      ;; through the interior points of the other two directions
      (do ([d 0 (fx+ d 1)]) ((fx= d 3))
        (let ([nm (fx+ d 1)] [dt1 (vector-ref (consts-dt1 cs) d)])
          (do ([b 1 (fx+ b 1)]) ((fx= b (fx- n 1)))
            (do ([a 1 (fx+ a 1)]) ((fx= a (fx- n 1)))
             (let ()
              ;; the line's point at position p, as (i j k)
              (define (point p)
                (case d [(0) (values p a b)] [(1) (values a p b)] [else (values a b p)]))
              (do ([p 0 (fx+ p 1)]) ((fx= p n))
                (let-values ([(i j k) (point p)])
                  (exact-solution (coord i dnm1) (coord j dnm1) (coord k dnm1) tmp)
                  (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                    (vector-set! ue (fx+ (fx* 5 p) m) (vector-ref tmp m)))
                  (let ([rho-inv (fl/ 1.0 (vector-ref tmp 0))])
                    (do ([m 1 (fx+ m 1)]) ((fx= m 5))
                      (vector-set! buf (fx+ (fx* 5 p) m) (fl* rho-inv (vector-ref tmp m)))))
                  (vector-set! cuf p (fl* (BUF p nm) (BUF p nm)))
                  ;; squared speed: the normal component first, as the reference
                  (vector-set! buf (fx* 5 p)
                               (let loop ([m 1] [s (vector-ref cuf p)])
                                 (cond [(fx= m 4) s]
                                       [(fx= m nm) (loop (fx+ m 1) s)]
                                       [else (loop (fx+ m 1) (fl+ s (fl* (BUF p m) (BUF p m))))])))
                  (vector-set! q p (fl* 0.5 (fl+ (fl+ (fl* (BUF p 1) (UE p 1)) (fl* (BUF p 2) (UE p 2)))
                                                 (fl* (BUF p 3) (UE p 3)))))))
              (do ([p 1 (fx+ p 1)]) ((fx= p (fx- n 1)))
                (let-values ([(i j k) (point p)])
                  (let ([o (fx* 5 (fx+ i (fx* n (fx+ j (fx* n k)))))]
                        [pp (fx+ p 1)] [pm (fx- p 1)])
                    ;; g(p+1) - g(p-1), and the second difference of g at p
                    (define (delta g) (fl- (g pp) (g pm)))
                    (define (d2 g) (second-diff g p))
                    (define (ue m) (lambda (x) (UE x m)))
                    (define (bf m) (lambda (x) (BUF x m)))
                    (define (add! m x) (fref+ f (fx+ o m) x))
                    (add! 0 (fl+ (fl- 0.0 (fl* t2 (delta (ue nm)))) (fl* dt1 (d2 (ue 0)))))
                    (do ([m 1 (fx+ m 1)]) ((fx= m 4))
                      (add! m (if (fx= m nm)
                                  (fl+ (fl+ (fl- 0.0 (fl* t2 (delta (lambda (x)
                                                                      (fl+ (fl* (UE x m) (BUF x m))
                                                                           (fl* c2 (fl- (UE x 4) (vector-ref q x))))))))
                                            (fl* con1 (d2 (bf m))))
                                       (fl* dt1 (d2 (ue m))))
                                  (fl+ (fl+ (fl- 0.0 (fl* t2 (delta (lambda (x) (fl* (UE x m) (BUF x nm))))))
                                            (fl* con2 (d2 (bf m))))
                                       (fl* dt1 (d2 (ue m)))))))
                    (add! 4 (fl+ (fl+ (fl+ (fl+ (fl- 0.0 (fl* t2 (delta (lambda (x)
                                                                          (fl* (BUF x nm)
                                                                               (fl- (fl* c1 (UE x 4))
                                                                                    (fl* c2 (vector-ref q x))))))))
                                                (fl* 0.5 (fl* con3 (d2 (bf 0)))))
                                           (fl* con4 (d2 (lambda (x) (vector-ref cuf x)))))
                                      (fl* con5 (d2 (bf 4))))
                                 (fl* dt1 (d2 (ue 4)))))
                    ;; fourth-order dissipation, one-sided near the ends
                    (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                      (let ([v (lambda (dx) (UE (fx+ p dx) m))])
                        (add! m (fl- 0.0
                                     (fl* dssp
                                          (cond
                                            [(fx= p 1) (fl+ (fl- (fl* 5.0 (v 0)) (fl* 4.0 (v 1))) (v 2))]
                                            [(fx= p 2) (fl+ (fl- (fl+ (fl* -4.0 (v -1)) (fl* 6.0 (v 0)))
                                                                 (fl* 4.0 (v 1)))
                                                            (v 2))]
                                            [(fx= p (fx- n 3)) (fl- (fl+ (fl- (v -2) (fl* 4.0 (v -1)))
                                                                         (fl* 6.0 (v 0)))
                                                                    (fl* 4.0 (v 1)))]
                                            [(fx= p (fx- n 2)) (fl+ (fl- (v -2) (fl* 4.0 (v -1)))
                                                                    (fl* 5.0 (v 0)))]
                                            [else (fl+ (fl- (fl+ (fl- (v -2) (fl* 4.0 (v -1)))
                                                                 (fl* 6.0 (v 0)))
                                                            (fl* 4.0 (v 1)))
                                                       (v 2))]))))))))))))))
      ;; the forcing is minus the operator
      (do ([i 0 (fx+ i 1)]) ((fx= i (fx* 5 (fx* n (fx* n n)))))
        (fset! f i (fl- 0.0 (fref f i)))))
    forcing))
