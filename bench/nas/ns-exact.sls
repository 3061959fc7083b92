#!chezscheme
;;; The exact solution of the Navier-Stokes test problem that SP and BT
;;; solve (NPB 3.4's exact_solution): per component m, a quartic in each of
;;; the three coordinates, with the reference's coefficients; and the
;;; initial field inside the cube, interpolated between the six faces.
(library (nas ns-exact)
  (export exact-solution make-faces face-solutions! interpolated)
  (import (chezscheme))

  ;; ce[m][0..12]: the exact solution of component m is
  ;; ce0 + sum over x=xi,eta,zeta (index e = 1, 2, 3) of
  ;; x (ce_e + x (ce_e+3 + x (ce_e+6 + x ce_e+9))).
  (define ce
    '#(#(2.0 0.0 0.0 4.0 5.0 3.0 0.5 0.02 0.01 0.03 0.5 0.4 0.3)
       #(1.0 0.0 0.0 0.0 1.0 2.0 3.0 0.01 0.03 0.02 0.4 0.3 0.5)
       #(2.0 2.0 0.0 0.0 0.0 2.0 3.0 0.04 0.03 0.05 0.3 0.5 0.4)
       #(2.0 2.0 0.0 0.0 0.0 2.0 3.0 0.03 0.05 0.04 0.2 0.1 0.3)
       #(5.0 4.0 3.0 2.0 0.1 0.4 0.3 0.05 0.04 0.03 0.1 0.3 0.2)))

  ;; Writes the five components at (xi, eta, zeta) into the vector out.
  ;; Coordinates may be exact (SP passes (* i h) with i = 0).
  (define (exact-solution xi eta zeta out)
    (let ([xi (inexact xi)] [eta (inexact eta)] [zeta (inexact zeta)])
      (solution xi eta zeta out)))

  (define (solution xi eta zeta out)
    (do ([m 0 (fx+ m 1)]) ((fx= m 5) out)
      (let ([c (vector-ref ce m)])
        (define (poly x e)
          (fl* x (fl+ (vector-ref c e)
                      (fl* x (fl+ (vector-ref c (fx+ e 3))
                                  (fl* x (fl+ (vector-ref c (fx+ e 6))
                                              (fl* x (vector-ref c (fx+ e 9))))))))))
        (vector-set! out m (fl+ (fl+ (fl+ (vector-ref c 0) (poly xi 1)) (poly eta 2))
                                (poly zeta 3))))))

  ;; Six vectors of five components: the exact solution on the faces
  ;; xi = 0, xi = 1, eta = 0, eta = 1, zeta = 0, zeta = 1.
  (define (make-faces)
    (let ([faces (make-vector 6)])
      (do ([f 0 (fx+ f 1)]) ((fx= f 6) faces) (vector-set! faces f (make-vector 5)))))

  ;; Fills faces with the exact solution at the six points where the lines
  ;; through (xi, eta, zeta) meet the faces.
  (define (face-solutions! xi eta zeta faces)
    (exact-solution 0.0 eta zeta (vector-ref faces 0))
    (exact-solution 1.0 eta zeta (vector-ref faces 1))
    (exact-solution xi 0.0 zeta (vector-ref faces 2))
    (exact-solution xi 1.0 zeta (vector-ref faces 3))
    (exact-solution xi eta 0.0 (vector-ref faces 4))
    (exact-solution xi eta 1.0 (vector-ref faces 5)))

  ;; Component m of the reference's transfinite interpolation between the
  ;; faces at (xi, eta, zeta), flonums.
  (define (interpolated faces m xi eta zeta)
    (let* ([face (lambda (f x)
                   (fl+ (fl* x (vector-ref (vector-ref faces (fx+ f 1)) m))
                        (fl* (fl- 1.0 x) (vector-ref (vector-ref faces f) m))))]
           [px (face 0 xi)] [py (face 2 eta)] [pz (face 4 zeta)])
      (fl+ (fl- (fl- (fl- (fl+ (fl+ px py) pz) (fl* px py)) (fl* px pz)) (fl* py pz))
           (fl* (fl* px py) pz)))))
