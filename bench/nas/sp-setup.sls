#!chezscheme
;;; SP's starting state (not timed): the forcing term that makes the exact
;;; solution a steady state of the discrete system (NPB exact_rhs), the
;;; initial field u (transfinite interpolation of the exact boundary
;;; values, NPB initialize), and the auxiliary quantities of u at every
;;; point (the first loop of NPB compute_rhs), which aux-point! also
;;; refreshes in the time steps.
(library (nas sp-setup)
  (export sp-forcing! sp-initialize! sp-aux-all! aux-point!)
  (import (except (chezscheme) fl+ fl- fl* fl/ flsqrt fl< fl> fx+ fx- fx* fx< fx<= fx= fx>= fx>)
          (only (spindle) shared-flvector-set!)
          (nas sp-memory) (nas sp-constants)
          (only (nas ns-exact) make-faces face-solutions! interpolated))

  ;; The auxiliary slots of the point whose u starts at byte uo, stored at
  ;; byte ao of the auxiliary array.
  (define-syntax aux-point!
    (syntax-rules ()
      [(_ u aux uo ao c1c2 c1 c2)
       (let* ([u0 (fref u uo)] [u1 (fref u (fx+ uo 8))] [u2 (fref u (fx+ uo 16))]
              [u3 (fref u (fx+ uo 24))] [u4 (fref u (fx+ uo 32))]
              [ri (fl/ 1.0 u0)]
              [sq (fl* (fl* 0.5 (fl+ (fl+ (fl* u1 u1) (fl* u2 u2)) (fl* u3 u3))) ri)])
         (fset! aux (fx+ ao aux-rho) ri)
         (fset! aux (fx+ ao aux-us) (fl* u1 ri))
         (fset! aux (fx+ ao aux-vs) (fl* u2 ri))
         (fset! aux (fx+ ao aux-ws) (fl* u3 ri))
         (fset! aux (fx+ ao aux-square) sq)
         (fset! aux (fx+ ao aux-qs) (fl* sq ri))
         (fset! aux (fx+ ao aux-speed) (flsqrt (fl* (fl* c1c2 ri) (fl- u4 sq))))
         (fset! aux (fx+ ao aux-e) (fl* u4 ri))
         (fset! aux (fx+ ao aux-f) (fl- (fl* c1 u4) (fl* c2 sq))))]))

  (define (sp-aux-all! c u aux)
    (let ([points (let ([n (c-n c)]) (fx* n (fx* n n)))] [c1c2 (c-c1c2 c)] [c1 (c-c1 c)]
          [c2 (c-c2 c)])
      (do ([p 0 (fx+ p 1)]) ((fx= p points))
        (aux-point! u aux (fx* p 40) (fx* p aux-width) c1c2 c1 c2))))

  ;; component m of point (i, j, k) of a five-component shared flvector
  (define (put! v n i j k m x)
    (shared-flvector-set! v (+ (* 5 (+ (* (+ (* k n) j) n) i)) m) x))

  (define (sp-initialize! c uv)
    (let* ([n (c-n c)] [h (c-dnm1 c)] [coord (lambda (i) (fl* (fixnum->flonum i) h))]
           [face (make-faces)] [tmp (make-vector 5)])
      (do ([k 0 (+ k 1)]) ((= k n))
        (do ([j 0 (+ j 1)]) ((= j n))
          (do ([i 0 (+ i 1)]) ((= i n))
            (let ([xi (coord i)] [eta (coord j)] [zeta (coord k)])
              (face-solutions! xi eta zeta face)
              (do ([m 0 (+ m 1)]) ((= m 5))
                (put! uv n i j k m (interpolated face m xi eta zeta)))))))
      ;; the exact values on the six faces, written as the reference does:
      ;; face by face (west, east, south, north, bottom, top), the face's
      ;; own coordinate exactly 0.0 or 1.0, so an edge takes the values of
      ;; the last face through it
      (do ([k 0 (+ k 1)]) ((= k n))
        (do ([j 0 (+ j 1)]) ((= j n))
          (do ([i 0 (+ i 1)]) ((= i n))
            (let ([last (- n 1)] [xi (coord i)] [eta (coord j)] [zeta (coord k)])
              (when (cond
                      [(= k last) (exact-solution xi eta 1.0 tmp)]
                      [(= k 0) (exact-solution xi eta 0.0 tmp)]
                      [(= j last) (exact-solution xi 1.0 zeta tmp)]
                      [(= j 0) (exact-solution xi 0.0 zeta tmp)]
                      [(= i last) (exact-solution 1.0 eta zeta tmp)]
                      [(= i 0) (exact-solution 0.0 eta zeta tmp)]
                      [else #f])
                (do ([m 0 (+ m 1)]) ((= m 5))
                  (put! uv n i j k m (vector-ref tmp m))))))))))

  ;; The fourth-difference dissipation at g of the values (get g) along a
  ;; line of n points, one-sided near the ends as in the reference.
  (define (dissipation get g n)
    (cond
      [(= g 1) (+ (- (* 5.0 (get g)) (* 4.0 (get (+ g 1)))) (get (+ g 2)))]
      [(= g 2) (+ (- (+ (* -4.0 (get (- g 1))) (* 6.0 (get g))) (* 4.0 (get (+ g 1)))) (get (+ g 2)))]
      [(= g (- n 3)) (- (+ (- (get (- g 2)) (* 4.0 (get (- g 1)))) (* 6.0 (get g))) (* 4.0 (get (+ g 1))))]
      [(= g (- n 2)) (+ (- (get (- g 2)) (* 4.0 (get (- g 1)))) (* 5.0 (get g)))]
      [else (+ (- (+ (- (get (- g 2)) (* 4.0 (get (- g 1)))) (* 6.0 (get g))) (* 4.0 (get (+ g 1))))
               (get (+ g 2)))]))

  (define (second-diff get g) (+ (- (get (+ g 1)) (* 2.0 (get g))) (get (- g 1))))

  ;; The forcing: minus the discrete operator of compute_rhs applied to the
  ;; exact solution, accumulated line by line in the xi, eta, then zeta
  ;; direction; zero on the boundary.
  (define (sp-forcing! c forcing)
    (let* ([n (c-n c)] [h (c-dnm1 c)]
           [f (make-vector (* 5 n n n) 0.0)]
           [ue (make-vector (* 5 n))] [buf (make-vector (* 5 n))]
           [cuf (make-vector n)] [q (make-vector n)] [dtemp (make-vector 5)]
           [c1 (c-c1 c)] [c2 (c-c2 c)] [t2 (c-t2 c)] [dssp (c-dssp c)]
           [con1 (c-con1 c)] [con2 (c-con2 c)] [con3 (c-con3 c)]
           [con4 (c-con4 c)] [con5 (c-con5 c)])
      (define (U m) (lambda (g) (vector-ref ue (+ (* 5 g) m))))
      (define (B m) (lambda (g) (vector-ref buf (+ (* 5 g) m))))
      (define (C g) (vector-ref cuf g))
      (define (Q g) (vector-ref q g))
      ;; the grid indices (i j k) of point g of the line of direction dir
      ;; through a and b, the other two indices in order
      (define (ijk dir g a b)
        (case dir [(0) (values g a b)] [(1) (values a g b)] [else (values a b g)]))
      (define (line! dir a b)
        (let ([nm (+ dir 1)] [others (remv (+ dir 1) '(1 2 3))]
              [dt1 (vector-ref (c-ddt1 c) dir)])
          (do ([g 0 (+ g 1)]) ((= g n))
            (let-values ([(i j k) (ijk dir g a b)])
              (exact-solution (* i h) (* j h) (* k h) dtemp))
            (do ([m 0 (+ m 1)]) ((= m 5)) (vector-set! ue (+ (* 5 g) m) (vector-ref dtemp m)))
            (let ([dtpp (/ 1.0 (vector-ref dtemp 0))])
              (do ([m 1 (+ m 1)]) ((= m 5))
                (vector-set! buf (+ (* 5 g) m) (* dtpp (vector-ref dtemp m)))))
            (vector-set! cuf g (* ((B nm) g) ((B nm) g)))
            (vector-set! buf (* 5 g)
              (+ (+ (C g) (* ((B (car others)) g) ((B (car others)) g)))
                 (* ((B (cadr others)) g) ((B (cadr others)) g))))
            (vector-set! q g (* 0.5 (+ (+ (* ((B 1) g) ((U 1) g)) (* ((B 2) g) ((U 2) g)))
                                       (* ((B 3) g) ((U 3) g))))))
          (do ([g 1 (+ g 1)]) ((= g (- n 1)))
            (let*-values ([(gp gm) (values (+ g 1) (- g 1))]
                          [(i j k) (ijk dir g a b)])
              (let ([at (+ (* 5 (+ (* (+ (* k n) j) n) i)))]
                    [Unm (U nm)] [Bnm (B nm)] [U4 (U 4)])
                (define (add! m x) (vector-set! f (+ at m) (+ (vector-ref f (+ at m)) x)))
                (define (sub! m x) (vector-set! f (+ at m) (- (vector-ref f (+ at m)) x)))
                (sub! 0 (* t2 (- (Unm gp) (Unm gm))))
                (add! 0 (* dt1 (second-diff (U 0) g)))
                (sub! nm (* t2 (- (+ (* (Unm gp) (Bnm gp)) (* c2 (- (U4 gp) (Q gp))))
                                  (+ (* (Unm gm) (Bnm gm)) (* c2 (- (U4 gm) (Q gm)))))))
                (add! nm (* con1 (second-diff Bnm g)))
                (add! nm (* dt1 (second-diff Unm g)))
                (for-each
                  (lambda (m)
                    (sub! m (* t2 (- (* ((U m) gp) (Bnm gp)) (* ((U m) gm) (Bnm gm)))))
                    (add! m (* con2 (second-diff (B m) g)))
                    (add! m (* dt1 (second-diff (U m) g))))
                  others)
                (sub! 4 (* t2 (- (* (Bnm gp) (- (* c1 (U4 gp)) (* c2 (Q gp))))
                                 (* (Bnm gm) (- (* c1 (U4 gm)) (* c2 (Q gm)))))))
                (add! 4 (* (* 0.5 con3) (second-diff (B 0) g)))
                (add! 4 (* con4 (second-diff C g)))
                (add! 4 (* con5 (second-diff (B 4) g)))
                (add! 4 (* dt1 (second-diff U4 g))))))
          (do ([g 1 (+ g 1)]) ((= g (- n 1)))
            (let-values ([(i j k) (ijk dir g a b)])
              (let ([at (* 5 (+ (* (+ (* k n) j) n) i))])
                (do ([m 0 (+ m 1)]) ((= m 5))
                  (vector-set! f (+ at m)
                    (- (vector-ref f (+ at m)) (* dssp (dissipation (U m) g n))))))))))
      (do ([dir 0 (+ dir 1)]) ((= dir 3))
        (do ([b 1 (+ b 1)]) ((= b (- n 1)))
          (do ([a 1 (+ a 1)]) ((= a (- n 1)))
            (line! dir a b))))
      (do ([idx 0 (+ idx 1)]) ((= idx (vector-length f)))
        (shared-flvector-set! forcing idx (* -1.0 (vector-ref f idx)))))))
