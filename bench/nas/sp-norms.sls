#!chezscheme
;;; SP's verification (NPB 3.4 verify): the RMS norms of the solution error
;;; against the exact solution (error_norm, over the whole grid) and of
;;; the residual (rhs_norm, over the interior, divided by dt), each
;;; checked against the official values with relative tolerance 1e-8.
(library (nas sp-norms)
  (export sp-error-norms sp-residual-norms sp-reference-norms sp-epsilon)
  (import (chezscheme) (only (spindle) shared-flvector-ref) (nas sp-constants))

  (define sp-epsilon 1e-8)

  ;; (xcr xce): the residual and error norms, five each, for the class.
  (define (sp-reference-norms class)
    (case class
      [(S) '(#(2.7470315451339479e-02 1.0360746705285417e-02 1.6235745065095532e-02
               1.5840557224455615e-02 3.4849040609362460e-02)
             #(2.7289258557377227e-05 1.0364446640837285e-05 1.6154798287166471e-05
               1.5750704994480102e-05 3.4177666183390531e-05))]
      [(W) '(#(0.1893253733584e-02 0.1717075447775e-03 0.2778153350936e-03
               0.2887475409984e-03 0.3143611161242e-02)
             #(0.7542088599534e-04 0.6512852253086e-05 0.1049092285688e-04
               0.1128838671535e-04 0.1212845639773e-03))]
      [(A) '(#(2.4799822399300195 1.1276337964368832 1.5028977888770491
               1.4217816211695179 2.1292113035138280)
             #(1.0900140297820550e-04 3.7343951769282091e-05 5.0092785406541633e-05
               4.7671093939528255e-05 1.3621613399213001e-04))]))

  ;; sums[m] / (n-2)^3 divided one dimension at a time, then the roots
  (define (finish! sums n)
    (vector-map (lambda (s) (sqrt (/ (/ (/ s (- n 2)) (- n 2)) (- n 2)))) sums))

  (define (sp-error-norms c u)
    (let* ([n (c-n c)] [h (c-dnm1 c)] [sums (make-vector 5 0.0)] [exact (make-vector 5)])
      (do ([k 0 (+ k 1)]) ((= k n))
        (do ([j 0 (+ j 1)]) ((= j n))
          (do ([i 0 (+ i 1)]) ((= i n))
            (exact-solution (* i h) (* j h) (* k h) exact)
            (do ([m 0 (+ m 1)]) ((= m 5))
              (let ([add (- (shared-flvector-ref u (+ (* 5 (+ (* (+ (* k n) j) n) i)) m))
                            (vector-ref exact m))])
                (vector-set! sums m (+ (vector-ref sums m) (* add add))))))))
      (finish! sums n)))

  ;; the residual of rhs (computed without txinvr) over dt
  (define (sp-residual-norms c rhs)
    (let* ([n (c-n c)] [sums (make-vector 5 0.0)])
      (do ([k 1 (+ k 1)]) ((= k (- n 1)))
        (do ([j 1 (+ j 1)]) ((= j (- n 1)))
          (do ([i 1 (+ i 1)]) ((= i (- n 1)))
            (do ([m 0 (+ m 1)]) ((= m 5))
              (let ([add (shared-flvector-ref rhs (+ (* 5 (+ (* (+ (* k n) j) n) i)) m))])
                (vector-set! sums m (+ (vector-ref sums m) (* add add))))))))
      (vector-map (lambda (x) (/ x (c-dt c))) (finish! sums n)))))
