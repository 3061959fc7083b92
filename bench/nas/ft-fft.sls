#!chezscheme
;;; The 1-D complex FFT of NAS FT: many lines at once, each of n = 2^t
;;; points, by the Stockham autosort algorithm (Van Loan, Computational
;;; Frameworks for the FFT, 1.7): a first stage of radix 8, 2 or 4 (t mod 3
;;; = 0, 1, 2), then radix-8 stages; unnormalized, results in natural order.
;;; Radix 8 because Chez 9.5.8 boxes every flonum an operation returns, so
;;; the cost is the number of loads and operations: per point of n = 256,
;;; 33 in radix 8 against 36 in radix 4.
;;;
;;; Complex numbers are interleaved doubles (re, im) in bytevectors.  The
;;; lines are strided: point p of line l is at byte offset
;;;   off + p*ps + l*ls
;;; so rows, columns and pencils of a plane are transformed where they lie.
;;; The innermost loop runs over the lines, so each stage loads its roots of
;;; unity once per group of lines.
(library (nas ft-fft)
  (export make-fft-plan fft-plan? fft-plan-n fft-plan-inverse? fft-lines!)
  (import (chezscheme))

  ;; roots: omega^p for p = 0 .. n-1, omega = exp(-2 pi i / n) forward and
  ;; its conjugate inverse, as n interleaved complex numbers.  (FT's
  ;; checksums do not depend on which sign is called forward: its
  ;; evolution factors are even in every frequency.)
  (define-record-type fft-plan
    (fields n inverse? roots)
    (protocol
      (lambda (new)
        (lambda (n inverse?)
          (unless (and (fixnum? n) (fx>= n 16) (fx= (fxlogand n (fx- n 1)) 0))
            (assertion-violation 'make-fft-plan "expected a power of two >= 16" n))
          (let ([roots (make-bytevector (fx* 16 n))]
                [sign (if inverse? 1.0 -1.0)]
                [step (fl/ (fl* 2.0 (fl* 4.0 (atan 1.0))) (fixnum->flonum n))])
            (do ([p 0 (fx+ p 1)]) ((fx= p n))
              (let ([angle (fl* step (fixnum->flonum p))])
                (bytevector-ieee-double-native-set! roots (fx* 16 p) (cos angle))
                (bytevector-ieee-double-native-set! roots (fx+ (fx* 16 p) 8) (fl* sign (sin angle)))))
            (new n inverse? roots)))))
    (sealed #t))

  ;; The stages use Chez's unchecked primitives (#3%): fft-lines! checks
  ;; once that every offset the stages compute lies inside its bytevector,
  ;; and whatever a double load returns is a flonum.  With the checks in the
  ;; loops the transform took 1.7 times as long.
  (define-syntax ld (identifier-syntax #3%bytevector-ieee-double-native-ref))
  (define-syntax st! (identifier-syntax #3%bytevector-ieee-double-native-set!))
  (define-syntax f+ (identifier-syntax #3%fl+))
  (define-syntax f- (identifier-syntax #3%fl-))
  (define-syntax f* (identifier-syntax #3%fl*))
  (define-syntax i+ (identifier-syntax #3%fx+))
  (define-syntax i* (identifier-syntax #3%fx*))
  (define-syntax i= (identifier-syntax #3%fx=))

  ;; Transforms m lines of (fft-plan-n plan) points at x (offset xo, point
  ;; stride xps, line stride xls, in bytes) in place.  w1 and w2 are work
  ;; bytevectors of at least 16*n*m bytes, distinct from x.  Stage 1 reads
  ;; x, the last stage writes x (n >= 16: at least two stages), the stages
  ;; between alternate w1 and w2 (there, point p of line l is at
  ;; (p*m + l)*16).
  (define (fft-lines! plan m x xo xps xls w1 w2)
    (check-lines plan m x xo xps xls w1 w2)
    (let* ([n (fft-plan-n plan)]
           [first (vector-ref '#(8 2 4) (fxmodulo (fxlength (fx- n 1)) 3))]
           [wps (fx* 16 m)])
      (let loop ([span 1] [from x] [fo xo] [fps xps] [fls xls] [to w1] [other w2])
        (let* ([radix (if (fx= span 1) first 8)]
               [last? (fx= (fx* span radix) n)]
               [to (if last? x to)] [too (if last? xo 0)]
               [tps (if last? xps wps)] [tls (if last? xls 16)])
          (case radix
            [(2) (radix-2-stage! plan m from fo fps fls to too tps tls)]
            [(4) (radix-4-stage! plan m from fo fps fls to too tps tls)]
            [else (radix-8-stage! plan m span from fo fps fls to too tps tls)])
          (unless last?
            (loop (fx* span radix) to 0 wps 16 other to))))))

  ;; What the unchecked stages rely on: every point of every line of x,
  ;; and n*m points of w1 and w2, inside their bytevectors; the three
  ;; distinct.  Generic arithmetic: no overflow goes unnoticed.
  (define (check-lines plan m x xo xps xls w1 w2)
    (define (bad what . irritants) (apply assertion-violation 'fft-lines! what irritants))
    (unless (fft-plan? plan) (bad "expected an fft plan" plan))
    (unless (and (fixnum? m) (fx> m 0)) (bad "expected a positive line count" m))
    (unless (for-all (lambda (v) (and (fixnum? v) (fx>= v 0))) (list xo xps xls))
      (bad "expected non-negative fixnum offsets and strides" xo xps xls))
    (for-each (lambda (v) (unless (bytevector? v) (bad "expected a bytevector" v))) (list x w1 w2))
    (when (or (eq? x w1) (eq? x w2) (eq? w1 w2)) (bad "expected three distinct bytevectors"))
    (let ([n (fft-plan-n plan)])
      (unless (<= (+ xo (* (- n 1) xps) (* (- m 1) xls) 16) (bytevector-length x))
        (bad "lines outside the bytevector" xo xps xls m))
      (unless (<= (* 16 n m) (min (bytevector-length w1) (bytevector-length w2)))
        (bad "work bytevectors too small" (* 16 n m)))))

  ;; One stage: span = L* (the length of the transforms done so far), L =
  ;; radix*L*, r = n/L.  For j < L*, k < r and each line, the inputs
  ;; c_q = X[j + k*L* + q*n/radix] times omega_L^(j*q) are combined by a
  ;; radix-point DFT into Y[j + s*L* + k*L], s < radix.  The inverse DFT's
  ;; output s is the forward DFT's output -s mod radix, so the inverse
  ;; stages are the forward ones with the outputs permuted (and conjugate
  ;; roots from the plan).

  ;; Output u of a radix-point forward DFT goes to position u, or -u mod
  ;; radix inversely: its byte offset from output 0.
  (define (output-offset plan radix u ys)
    (i* ys (if (fft-plan-inverse? plan) (fxmodulo (fx- radix u) radix) u)))

  ;; The radix-2 and radix-4 stages are only ever the first (span 1: every
  ;; root is 1, r = n/radix).
  (define (radix-2-stage! plan m x xo xps xls y yo yps yls)
    (let* ([r (fxquotient (fft-plan-n plan) 2)] [xq (i* r xps)])
      (do ([k 0 (i+ k 1)]) ((i= k r))
        (do ([l 0 (i+ l 1)]
             [xa (i+ xo (i* k xps)) (i+ xa xls)]
             [ya (i+ yo (i* (i* 2 k) yps)) (i+ ya yls)])
            ((i= l m))
          (let* ([xb (i+ xa xq)] [yb (i+ ya yps)]
                 [ar (ld x xa)] [ai (ld x (i+ xa 8))]
                 [br (ld x xb)] [bi (ld x (i+ xb 8))])
            (st! y ya (f+ ar br)) (st! y (i+ ya 8) (f+ ai bi))
            (st! y yb (f- ar br)) (st! y (i+ yb 8) (f- ai bi)))))))

  ;; With s0 = d0+d2, s1 = d0-d2, s2 = d1+d3, s3 = d1-d3: y0 = s0+s2,
  ;; y2 = s0-s2, y1 = s1 - i s3, y3 = s1 + i s3 (omega_4 = -i).
  (define (radix-4-stage! plan m x xo xps xls y yo yps yls)
    (let* ([r (fxquotient (fft-plan-n plan) 4)] [xq (i* r xps)]
           [o1 (output-offset plan 4 1 yps)] [o2 (i* 2 yps)] [o3 (output-offset plan 4 3 yps)])
      (do ([k 0 (i+ k 1)]) ((i= k r))
        (do ([l 0 (i+ l 1)]
             [xa (i+ xo (i* k xps)) (i+ xa xls)]
             [ya (i+ yo (i* (i* 4 k) yps)) (i+ ya yls)])
            ((i= l m))
          (let* ([x1 (i+ xa xq)] [x2 (i+ x1 xq)] [x3 (i+ x2 xq)]
                 [d0r (ld x xa)] [d0i (ld x (i+ xa 8))] [d1r (ld x x1)] [d1i (ld x (i+ x1 8))]
                 [d2r (ld x x2)] [d2i (ld x (i+ x2 8))] [d3r (ld x x3)] [d3i (ld x (i+ x3 8))]
                 [s0r (f+ d0r d2r)] [s0i (f+ d0i d2i)] [s1r (f- d0r d2r)] [s1i (f- d0i d2i)]
                 [s2r (f+ d1r d3r)] [s2i (f+ d1i d3i)] [s3r (f- d1r d3r)] [s3i (f- d1i d3i)]
                 [y1 (i+ ya o1)] [y2 (i+ ya o2)] [y3 (i+ ya o3)])
            (st! y ya (f+ s0r s2r)) (st! y (i+ ya 8) (f+ s0i s2i))
            (st! y y2 (f- s0r s2r)) (st! y (i+ y2 8) (f- s0i s2i))
            (st! y y1 (f+ s1r s3i)) (st! y (i+ y1 8) (f- s1i s3r))
            (st! y y3 (f- s1r s3i)) (st! y (i+ y3 8) (f+ s1i s3r)))))))

  ;; (twiddle rotate? wr wi cr ci (dr di) body): body with d = w*c, or d = c.
  (define-syntax twiddle
    (syntax-rules ()
      [(_ #f wr wi cr ci (dr di) body) (let ([dr cr] [di ci]) body)]
      [(_ #t wr wi cr ci (dr di) body)
       (let* ([ar cr] [ai ci]
              [dr (f- (f* wr ar) (f* wi ai))] [di (f+ (f* wr ai) (f* wi ar))])
         body)]))

  (define half-sqrt2 (sqrt 0.5))

  ;; The radix-8 DFT of d0..d7 from the radix-4 DFTs E of (d0 d2 d4 d6) and
  ;; O of (d1 d3 d5 d7): y_u = E_u + omega_8^u O_u, y_(u+4) = E_u -
  ;; omega_8^u O_u for u < 4, where omega_8 = c(1 - i), omega_8^2 = -i,
  ;; omega_8^3 = -c(1 + i), c = sqrt(1/2).  j = 0 (all roots 1) runs
  ;; without the products.
  (define (radix-8-stage! plan m span x xo xps xls y yo yps yls)
    (let* ([n (fft-plan-n plan)] [roots (fft-plan-roots plan)]
           [L (i* 8 span)] [r (fxquotient n L)]
           [xq (i* (fxquotient n 8) xps)] [ys (i* span yps)]
           [o1 (output-offset plan 8 1 ys)] [o2 (output-offset plan 8 2 ys)]
           [o3 (output-offset plan 8 3 ys)] [o4 (i* 4 ys)]
           [o5 (output-offset plan 8 5 ys)] [o6 (output-offset plan 8 6 ys)]
           [o7 (output-offset plan 8 7 ys)]
           [c half-sqrt2] [-c (fl- half-sqrt2)])
      (define-syntax lines
        (syntax-rules ()
          [(_ rotate? j (w1r w1i) (w2r w2i) (w3r w3i) (w4r w4i) (w5r w5i) (w6r w6i) (w7r w7i))
           (do ([k 0 (i+ k 1)]) ((i= k r))
             (do ([l 0 (i+ l 1)]
                  [xa (i+ xo (i* (i+ j (i* k span)) xps)) (i+ xa xls)]
                  [ya (i+ yo (i* (i+ j (i* k L)) yps)) (i+ ya yls)])
                 ((i= l m))
               (let* ([x1 (i+ xa xq)] [x2 (i+ x1 xq)] [x3 (i+ x2 xq)] [x4 (i+ x3 xq)]
                      [x5 (i+ x4 xq)] [x6 (i+ x5 xq)] [x7 (i+ x6 xq)])
                 (twiddle rotate? w1r w1i (ld x x1) (ld x (i+ x1 8)) (d1r d1i)
                 (twiddle rotate? w2r w2i (ld x x2) (ld x (i+ x2 8)) (d2r d2i)
                 (twiddle rotate? w3r w3i (ld x x3) (ld x (i+ x3 8)) (d3r d3i)
                 (twiddle rotate? w4r w4i (ld x x4) (ld x (i+ x4 8)) (d4r d4i)
                 (twiddle rotate? w5r w5i (ld x x5) (ld x (i+ x5 8)) (d5r d5i)
                 (twiddle rotate? w6r w6i (ld x x6) (ld x (i+ x6 8)) (d6r d6i)
                 (twiddle rotate? w7r w7i (ld x x7) (ld x (i+ x7 8)) (d7r d7i)
                   (let* ([d0r (ld x xa)] [d0i (ld x (i+ xa 8))]
                          [a0r (f+ d0r d4r)] [a0i (f+ d0i d4i)] [a1r (f- d0r d4r)] [a1i (f- d0i d4i)]
                          [a2r (f+ d2r d6r)] [a2i (f+ d2i d6i)] [a3r (f- d2r d6r)] [a3i (f- d2i d6i)]
                          [e0r (f+ a0r a2r)] [e0i (f+ a0i a2i)] [e2r (f- a0r a2r)] [e2i (f- a0i a2i)]
                          [e1r (f+ a1r a3i)] [e1i (f- a1i a3r)] [e3r (f- a1r a3i)] [e3i (f+ a1i a3r)]
                          [b0r (f+ d1r d5r)] [b0i (f+ d1i d5i)] [b1r (f- d1r d5r)] [b1i (f- d1i d5i)]
                          [b2r (f+ d3r d7r)] [b2i (f+ d3i d7i)] [b3r (f- d3r d7r)] [b3i (f- d3i d7i)]
                          [p0r (f+ b0r b2r)] [p0i (f+ b0i b2i)] [p2r (f- b0r b2r)] [p2i (f- b0i b2i)]
                          [p1r (f+ b1r b3i)] [p1i (f- b1i b3r)] [p3r (f- b1r b3i)] [p3i (f+ b1i b3r)]
                          ;; omega_8 O1, omega_8^3 O3 (omega_8^2 O2 = (p2i, -p2r))
                          [t1r (f* c (f+ p1r p1i))] [t1i (f* c (f- p1i p1r))]
                          [t3r (f* c (f- p3i p3r))] [t3i (f* -c (f+ p3r p3i))]
                          [y1 (i+ ya o1)] [y2 (i+ ya o2)] [y3 (i+ ya o3)] [y4 (i+ ya o4)]
                          [y5 (i+ ya o5)] [y6 (i+ ya o6)] [y7 (i+ ya o7)])
                     (st! y ya (f+ e0r p0r)) (st! y (i+ ya 8) (f+ e0i p0i))
                     (st! y y4 (f- e0r p0r)) (st! y (i+ y4 8) (f- e0i p0i))
                     (st! y y1 (f+ e1r t1r)) (st! y (i+ y1 8) (f+ e1i t1i))
                     (st! y y5 (f- e1r t1r)) (st! y (i+ y5 8) (f- e1i t1i))
                     (st! y y2 (f+ e2r p2i)) (st! y (i+ y2 8) (f- e2i p2r))
                     (st! y y6 (f- e2r p2i)) (st! y (i+ y6 8) (f+ e2i p2r))
                     (st! y y3 (f+ e3r t3r)) (st! y (i+ y3 8) (f+ e3i t3i))
                     (st! y y7 (f- e3r t3r)) (st! y (i+ y7 8) (f- e3i t3i)))))))))))))]))
      (define-syntax root
        (syntax-rules ()
          [(_ q j (re im) body)
           (let* ([o (i* 16 (i* q (i* j r)))] [re (ld roots o)] [im (ld roots (i+ o 8))]) body)]))
      (lines #f 0 (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0))
      (do ([j 1 (i+ j 1)]) ((fx>= j span))
        (root 1 j (w1r w1i) (root 2 j (w2r w2i) (root 3 j (w3r w3i) (root 4 j (w4r w4i)
        (root 5 j (w5r w5i) (root 6 j (w6r w6i) (root 7 j (w7r w7i)
          (lines #t j (w1r w1i) (w2r w2i) (w3r w3i) (w4r w4i) (w5r w5i) (w6r w6i) (w7r w7i))))))))))))
)
