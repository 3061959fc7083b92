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
    (fields n inverse? roots radices)
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
            (new n inverse? roots (stage-radices n))))))
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
    (let ([wps (fx* 16 m)])
      (let loop ([span 1] [radices (fft-plan-radices plan)]
                 [from x] [fo xo] [fps xps] [fls xls] [to w1] [other w2])
        (let* ([radix (car radices)]
               [last? (null? (cdr radices))]
               [to (if last? x to)] [too (if last? xo 0)]
               [tps (if last? xps wps)] [tls (if last? xls 16)])
          (case radix
            [(2) (radix-2-stage! plan m from fo fps fls to too tps tls)]
            [(4) (radix-4-stage! plan m from fo fps fls to too tps tls)]
            [(8) (radix-8-stage! plan m span from fo fps fls to too tps tls)]
            [else (radix-16-stage! plan m span from fo fps fls to too tps tls)])
          (unless last?
            (loop (fx* span radix) (cdr radices) to 0 wps 16 other to))))))

  ;; The radices of the stages for n = 2^t: radix 16 but for the first
  ;; stage, which takes t mod 4 (radix 2, 4 or 8 only ever come first:
  ;; span 1, no roots but 1), and n = 16, which takes two stages (2 8) so
  ;; that the first reads x and the last writes it.
  (define (stage-radices n)
    (let ([t (fx- (fxlength n) 1)])
      (if (fx= t 4)
          '(2 8)
          (let loop ([left (fxquotient t 4)]
                     [acc (case (fxmodulo t 4) [(0) '()] [(1) '(2)] [(2) '(4)] [else '(8)])])
            (if (fx= left 0) (reverse acc) (loop (fx- left 1) (cons 16 acc)))))))

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

  ;; The radix-2, radix-4 and radix-8 stages are only ever the first (span 1: every
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

  ;; (twiddles rotate? x ((wr wi xo dr di) ...) body): body with each d the
  ;; point at byte offset xo of x, times w when rotate?.
  (define-syntax twiddles
    (syntax-rules ()
      [(_ rotate? x () body) body]
      [(_ rotate? x ((wr wi xo dr di) more ...) body)
       (twiddle rotate? wr wi (ld x xo) (ld x (i+ xo 8)) (dr di) (twiddles rotate? x (more ...) body))]))

  ;; (dft4 a b c d (y0 y1 y2 y3) body): body with y the forward 4-point DFT
  ;; of a, b, c, d (complex: (re im) pairs of variables); dft4/-i the same
  ;; with c taken times -i.
  (define-syntax dft4
    (syntax-rules ()
      [(_ (ar ai) (br bi) (cr ci) (dr di) ((y0r y0i) (y1r y1i) (y2r y2i) (y3r y3i)) body)
       (let* ([s0r (f+ ar cr)] [s0i (f+ ai ci)] [s1r (f- ar cr)] [s1i (f- ai ci)]
              [s2r (f+ br dr)] [s2i (f+ bi di)] [s3r (f- br dr)] [s3i (f- bi di)]
              [y0r (f+ s0r s2r)] [y0i (f+ s0i s2i)] [y2r (f- s0r s2r)] [y2i (f- s0i s2i)]
              [y1r (f+ s1r s3i)] [y1i (f- s1i s3r)] [y3r (f- s1r s3i)] [y3i (f+ s1i s3r)])
         body)]))
  (define-syntax dft4/-i
    (syntax-rules ()
      [(_ (ar ai) (br bi) (cr ci) (dr di) ((y0r y0i) (y1r y1i) (y2r y2i) (y3r y3i)) body)
       (let* ([s0r (f+ ar ci)] [s0i (f- ai cr)] [s1r (f- ar ci)] [s1i (f+ ai cr)]
              [s2r (f+ br dr)] [s2i (f+ bi di)] [s3r (f- br dr)] [s3i (f- bi di)]
              [y0r (f+ s0r s2r)] [y0i (f+ s0i s2i)] [y2r (f- s0r s2r)] [y2i (f- s0i s2i)]
              [y1r (f+ s1r s3i)] [y1i (f- s1i s3r)] [y3r (f- s1r s3i)] [y3i (f+ s1i s3r)])
         body)]))

  (define cos-pi/8 (cos (fl/ (fl* 4.0 (atan 1.0)) 8.0)))
  (define sin-pi/8 (sin (fl/ (fl* 4.0 (atan 1.0)) 8.0)))

  ;; The radix-16 DFT of d0..d15 as 4 x 4: F_b = the 4-point DFTs of
  ;; (d_b d_(4+b) d_(8+b) d_(12+b)), b < 4; G_b(c) = omega_16^(b c) F_b(c);
  ;; y_(c+4e) = the 4-point DFT of G_0(c) .. G_3(c), output e.  With
  ;; omega_16 = C - iS (C = cos pi/8, S = sin pi/8): omega^2 = c(1 - i),
  ;; omega^3 = S - iC, omega^4 = -i (folded into dft4/-i), omega^6 =
  ;; -c(1 + i), omega^9 = -C + iS.  168 operations: 144 sums, 24 products.
  ;; Per point of n = 256 two radix-16 stages take 30.5 loads and operations
  ;; against 33 in radix 8 (4, 8, 8), and of n = 128 (8, 16) 26.4 against
  ;; 29.5 (2, 8, 8).
  (define (radix-16-stage! plan m span x xo xps xls y yo yps yls)
    (let* ([n (fft-plan-n plan)] [roots (fft-plan-roots plan)]
           [L (i* 16 span)] [r (fxquotient n L)]
           [xq (i* (fxquotient n 16) xps)] [ys (i* span yps)]
           [o1 (output-offset plan 16 1 ys)] [o2 (output-offset plan 16 2 ys)]
           [o3 (output-offset plan 16 3 ys)] [o4 (output-offset plan 16 4 ys)]
           [o5 (output-offset plan 16 5 ys)] [o6 (output-offset plan 16 6 ys)]
           [o7 (output-offset plan 16 7 ys)] [o8 (i* 8 ys)]
           [o9 (output-offset plan 16 9 ys)] [o10 (output-offset plan 16 10 ys)]
           [o11 (output-offset plan 16 11 ys)] [o12 (output-offset plan 16 12 ys)]
           [o13 (output-offset plan 16 13 ys)] [o14 (output-offset plan 16 14 ys)]
           [o15 (output-offset plan 16 15 ys)]
           [c half-sqrt2] [-c (fl- half-sqrt2)]
           [C cos-pi/8] [S sin-pi/8] [-C (fl- cos-pi/8)])
      (define-syntax lines
        (syntax-rules ()
          [(_ rotate? j (w1r w1i) (w2r w2i) (w3r w3i) (w4r w4i) (w5r w5i) (w6r w6i) (w7r w7i)
              (w8r w8i) (w9r w9i) (w10r w10i) (w11r w11i) (w12r w12i) (w13r w13i) (w14r w14i)
              (w15r w15i))
           (do ([k 0 (i+ k 1)]) ((i= k r))
             (do ([l 0 (i+ l 1)]
                  [xa (i+ xo (i* (i+ j (i* k span)) xps)) (i+ xa xls)]
                  [ya (i+ yo (i* (i+ j (i* k L)) yps)) (i+ ya yls)])
                 ((i= l m))
               (let* ([x1 (i+ xa xq)] [x2 (i+ x1 xq)] [x3 (i+ x2 xq)] [x4 (i+ x3 xq)]
                      [x5 (i+ x4 xq)] [x6 (i+ x5 xq)] [x7 (i+ x6 xq)] [x8 (i+ x7 xq)]
                      [x9 (i+ x8 xq)] [x10 (i+ x9 xq)] [x11 (i+ x10 xq)] [x12 (i+ x11 xq)]
                      [x13 (i+ x12 xq)] [x14 (i+ x13 xq)] [x15 (i+ x14 xq)])
                 (twiddles rotate? x
                   ((w1r w1i x1 d1r d1i) (w2r w2i x2 d2r d2i) (w3r w3i x3 d3r d3i)
                    (w4r w4i x4 d4r d4i) (w5r w5i x5 d5r d5i) (w6r w6i x6 d6r d6i)
                    (w7r w7i x7 d7r d7i) (w8r w8i x8 d8r d8i) (w9r w9i x9 d9r d9i)
                    (w10r w10i x10 d10r d10i) (w11r w11i x11 d11r d11i) (w12r w12i x12 d12r d12i)
                    (w13r w13i x13 d13r d13i) (w14r w14i x14 d14r d14i) (w15r w15i x15 d15r d15i))
                   (let ([d0r (ld x xa)] [d0i (ld x (i+ xa 8))])
                     (dft4 (d0r d0i) (d4r d4i) (d8r d8i) (d12r d12i) ((f00r f00i) (f01r f01i) (f02r f02i) (f03r f03i))
                     (dft4 (d1r d1i) (d5r d5i) (d9r d9i) (d13r d13i) ((f10r f10i) (f11r f11i) (f12r f12i) (f13r f13i))
                     (dft4 (d2r d2i) (d6r d6i) (d10r d10i) (d14r d14i) ((f20r f20i) (f21r f21i) (f22r f22i) (f23r f23i))
                     (dft4 (d3r d3i) (d7r d7i) (d11r d11i) (d15r d15i) ((f30r f30i) (f31r f31i) (f32r f32i) (f33r f33i))
                     (let* (;; omega^1 F11, omega^2 F12, omega^3 F13
                            [g11r (f+ (f* C f11r) (f* S f11i))] [g11i (f- (f* C f11i) (f* S f11r))]
                            [g12r (f* c (f+ f12r f12i))] [g12i (f* c (f- f12i f12r))]
                            [g13r (f+ (f* S f13r) (f* C f13i))] [g13i (f- (f* S f13i) (f* C f13r))]
                            ;; omega^2 F21, omega^6 F23 (omega^4 F22: dft4/-i)
                            [g21r (f* c (f+ f21r f21i))] [g21i (f* c (f- f21i f21r))]
                            [g23r (f* c (f- f23i f23r))] [g23i (f* -c (f+ f23r f23i))]
                            ;; omega^3 F31, omega^6 F32, omega^9 F33
                            [g31r (f+ (f* S f31r) (f* C f31i))] [g31i (f- (f* S f31i) (f* C f31r))]
                            [g32r (f* c (f- f32i f32r))] [g32i (f* -c (f+ f32r f32i))]
                            [g33r (f- (f* -C f33r) (f* S f33i))] [g33i (f- (f* S f33r) (f* C f33i))])
                       (dft4 (f00r f00i) (f10r f10i) (f20r f20i) (f30r f30i) ((y0r y0i) (y4r y4i) (y8r y8i) (y12r y12i))
                       (dft4 (f01r f01i) (g11r g11i) (g21r g21i) (g31r g31i) ((y1r y1i) (y5r y5i) (y9r y9i) (y13r y13i))
                       (dft4/-i (f02r f02i) (g12r g12i) (f22r f22i) (g32r g32i) ((y2r y2i) (y6r y6i) (y10r y10i) (y14r y14i))
                       (dft4 (f03r f03i) (g13r g13i) (g23r g23i) (g33r g33i) ((y3r y3i) (y7r y7i) (y11r y11i) (y15r y15i))
                         (let-syntax ([out (syntax-rules ()
                                             [(_ o yr yi) (let ([p (i+ ya o)]) (st! y p yr) (st! y (i+ p 8) yi))])])
                           (st! y ya y0r) (st! y (i+ ya 8) y0i)
                           (out o1 y1r y1i) (out o2 y2r y2i) (out o3 y3r y3i) (out o4 y4r y4i)
                           (out o5 y5r y5i) (out o6 y6r y6i) (out o7 y7r y7i) (out o8 y8r y8i)
                           (out o9 y9r y9i) (out o10 y10r y10i) (out o11 y11r y11i) (out o12 y12r y12i)
                           (out o13 y13r y13i) (out o14 y14r y14i) (out o15 y15r y15i))))))))))))))))]))
      (define-syntax root
        (syntax-rules ()
          [(_ q j (re im) body)
           (let* ([o (i* 16 (i* q (i* j r)))] [re (ld roots o)] [im (ld roots (i+ o 8))]) body)]))
      (lines #f 0 (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0)
             (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0) (1.0 0.0))
      (do ([j 1 (i+ j 1)]) ((fx>= j span))
        (root 1 j (w1r w1i) (root 2 j (w2r w2i) (root 3 j (w3r w3i) (root 4 j (w4r w4i)
        (root 5 j (w5r w5i) (root 6 j (w6r w6i) (root 7 j (w7r w7i) (root 8 j (w8r w8i)
        (root 9 j (w9r w9i) (root 10 j (w10r w10i) (root 11 j (w11r w11i) (root 12 j (w12r w12i)
        (root 13 j (w13r w13i) (root 14 j (w14r w14i) (root 15 j (w15r w15i)
          (lines #t j (w1r w1i) (w2r w2i) (w3r w3i) (w4r w4i) (w5r w5i) (w6r w6i) (w7r w7i)
                 (w8r w8i) (w9r w9i) (w10r w10i) (w11r w11i) (w12r w12i) (w13r w13i) (w14r w14i)
                 (w15r w15i))))))))))))))))))))
)
