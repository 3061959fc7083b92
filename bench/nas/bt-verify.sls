#!chezscheme
;;; BT's verification: the RMS norms of the solution error (against the
;;; exact solution, every point) and of the residual (rhs / dt, interior
;;; points), compared with the NPB 3.4 reference values within 1e-8.
(library (nas bt-verify)
  (export error-norm rhs-norm bt-verify)
  (import (chezscheme) (nas bt-grid) (nas bt-exact) (nas common))

  (define epsilon 1e-8)

  ;; class -> (residual norms, error norms)
  (define (reference class)
    (case class
      [(S) '((1.7034283709541311e-01 1.2975252070034097e-02 3.2527926989486055e-02
              2.6436421275166801e-02 1.9211784131744430e-01)
             (4.9976913345811579e-04 4.5195666782961927e-05 7.3973765172921357e-05
              7.3821238632439731e-05 8.9269630987491446e-04))]
      [(W) '((0.1125590409344e+03 0.1180007595731e+02 0.2710329767846e+02
              0.2469174937669e+02 0.2638427874317e+03)
             (0.4419655736008e+01 0.4638531260002e+00 0.1011551749967e+01
              0.9235878729944e+00 0.1018045837718e+02))]
      [(A) '((1.0806346714637264e+02 1.1319730901220813e+01 2.5974354511582465e+01
              2.3665622544678910e+01 2.5278963211748344e+02)
             (4.2348416040525025e+00 4.4390282496995698e-01 9.6692480136345650e-01
              8.8302063039765474e-01 9.7379901770829278e+00))]
      [else #f]))

  ;; The five sums of squares over (i, j, k) in [lo, hi)^3 of (term o pt m),
  ;; o the point's first element, each divided by (n-2)^3 and square-rooted.
  (define (rms n lo hi term)
    (let ([sums (make-vector 5 0.0)] [scale (fixnum->flonum (fx- n 2))])
      (do ([k lo (fx+ k 1)]) ((fx= k hi))
        (do ([j lo (fx+ j 1)]) ((fx= j hi))
          (do ([i lo (fx+ i 1)]) ((fx= i hi))
            (let ([pt (fx+ i (fx* n (fx+ j (fx* n k))))])
              (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                (let ([x (term i j k (fx* 5 pt) m)])
                  (vector-set! sums m (fl+ (vector-ref sums m) (fl* x x)))))))))
      (vector->list
        (vector-map (lambda (s) (flsqrt (fl/ (fl/ (fl/ s scale) scale) scale))) sums))))

  (define (error-norm cs A)
    (let ([n (consts-n cs)] [u (addrs-u A)] [dnm1 (consts-dnm1 cs)] [e (make-vector 5)]
          [at -1])
      (rms n 0 n
           (lambda (i j k o m)
             ;; one exact-solution call per point, at its first component
             (unless (fx= at o)
               (set! at o)
               (exact-solution (fl* (fixnum->flonum i) dnm1) (fl* (fixnum->flonum j) dnm1)
                               (fl* (fixnum->flonum k) dnm1) e))
             (fl- (fref u (fx+ o m)) (vector-ref e m))))))

  (define (rhs-norm cs A)
    (let ([n (consts-n cs)] [r (addrs-rhs A)])
      (rms n 1 (fx- n 1) (lambda (i j k o m) (fref r (fx+ o m))))))

  ;; xcr: residual norms already divided by dt; xce: error norms.
  ;; Returns (values verified? notes).
  (define (bt-verify class xcr xce)
    (let ([ref (reference class)])
      (define (compare what computed refs)
        (map (lambda (m x r)
               (let ([ok (within-epsilon? x r epsilon)])
                 (cons ok (format "~a ~a: ~,13e reference ~,13e error ~,2e~a" what m x r
                                  (relative-error x r) (if ok "" " FAILED")))))
             '(1 2 3 4 5) computed refs))
      (if ref
          (let ([all (append (compare "residual" xcr (car ref)) (compare "error" xce (cadr ref)))])
            (values (for-all car all) (map cdr all)))
          (values #f (list "no reference values for this class"))))))
