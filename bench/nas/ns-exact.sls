#!chezscheme
;;; The exact solution of the Navier-Stokes test problem that SP and BT
;;; solve (NPB 3.4's exact_solution): per component m, a quartic in each of
;;; the three coordinates, with the reference's coefficients.
(library (nas ns-exact)
  (export exact-solution)
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
                                (poly zeta 3)))))))
