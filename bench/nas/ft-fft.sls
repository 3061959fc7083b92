#!chezscheme
;;; The 1-D complex FFT of NAS FT: many lines at once, each of n = 2^t
;;; points, by the Stockham autosort algorithm (Van Loan, Computational
;;; Frameworks for the FFT, 1.7) in radix-4 stages (one radix-2 stage first
;;; when t is odd), unnormalized, results in natural order.
;;;
;;; Complex numbers are interleaved doubles (re, im) in bytevectors.  The
;;; lines are strided: point p of line l is at byte offset
;;;   off + p*ps + l*ls
;;; so rows, columns and pencils of a plane are transformed where they lie.
;;; The innermost loop runs over the lines, so each stage loads its roots of
;;; unity once per group of lines (Chez 9.5.8 boxes every flonum).
(library (nas ft-fft)
  (export make-fft-plan fft-plan? fft-plan-n fft-plan-inverse? fft-lines!)
  (import (chezscheme))

  ;; roots: omega^p for p = 0 .. n-1, omega = exp(-2 pi i / n) forward and
  ;; its conjugate inverse, as n interleaved complex numbers.
  (define-record-type fft-plan
    (fields n inverse? roots)
    (protocol
      (lambda (new)
        (lambda (n inverse?)
          (unless (and (fixnum? n) (fx>= n 4) (fx= (fxlogand n (fx- n 1)) 0))
            (assertion-violation 'make-fft-plan "expected a power of two >= 4" n))
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
  ;; loops the transform took twice as long.
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
  ;; x, the last stage writes x, the stages between alternate w1 and w2
  ;; (there, point p of line l is at (p*m + l)*16).
  (define (fft-lines! plan m x xo xps xls w1 w2)
    (check-lines plan m x xo xps xls w1 w2)
    (let* ([n (fft-plan-n plan)]
           [t (fxlength (fx- n 1))]
           [stages (fx+ (fxsrl t 1) (fxand t 1))]
           [wps (fx* 16 m)])
      (let loop ([s 1] [span 1] [from x] [fo xo] [fps xps] [fls xls] [to w1] [other w2])
        (let* ([last? (fx= s stages)]
               [to (if last? x to)] [too (if last? xo 0)]
               [tps (if last? xps wps)] [tls (if last? xls 16)]
               [radix (if (and (fx= s 1) (fxodd? t)) 2 4)])
          (if (fx= radix 2)
              (radix-2-stage! plan m span from fo fps fls to too tps tls)
              (radix-4-stage! plan m span from fo fps fls to too tps tls))
          (unless last?
            (loop (fx+ s 1) (fx* span radix) to 0 wps 16 other to))))))

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
  ;; radix-point DFT into Y[j + s*L* + k*L], s < radix.

  ;; The radix-2 stage is only ever the first (span 1: every root is 1).
  (define (radix-2-stage! plan m span x xo xps xls y yo yps yls)
    (let* ([n (fft-plan-n plan)] [r (fxquotient n 2)] [xq (i* r xps)])
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

  ;; The radix-4 DFT of d0..d3: with s0 = d0+d2, s1 = d0-d2, s2 = d1+d3,
  ;; s3 = d1-d3: y0 = s0+s2, y2 = s0-s2, and y1, y3 are s1 -+ i s3 forward,
  ;; s1 +- i s3 inverse (omega_4 = -i forward): the inverse swaps y1 and y3.
  ;; j = 0 (all roots 1) runs without the products.
  (define (radix-4-stage! plan m span x xo xps xls y yo yps yls)
    (let* ([n (fft-plan-n plan)] [roots (fft-plan-roots plan)]
           [inverse? (fft-plan-inverse? plan)]
           [L (i* 4 span)] [r (fxquotient n L)]
           [xq (i* (fxquotient n 4) xps)] [ys (i* span yps)]
           [y1s (if inverse? (i* 3 ys) ys)] [y3s (if inverse? ys (i* 3 ys))])
      ;; (rotate? wr wi cr ci (dr di) body): body with d = w*c, or d = c
      (define-syntax twiddle
        (syntax-rules ()
          [(_ #f wr wi cr ci (dr di) body) (let ([dr cr] [di ci]) body)]
          [(_ #t wr wi cr ci (dr di) body)
           (let* ([ar cr] [ai ci]
                  [dr (f- (f* wr ar) (f* wi ai))] [di (f+ (f* wr ai) (f* wi ar))])
             body)]))
      (define-syntax lines
        (syntax-rules ()
          [(_ rotate? j w1r w1i w2r w2i w3r w3i)
           (do ([k 0 (i+ k 1)]) ((i= k r))
             (do ([l 0 (i+ l 1)]
                  [xa (i+ xo (i* (i+ j (i* k span)) xps)) (i+ xa xls)]
                  [ya (i+ yo (i* (i+ j (i* k L)) yps)) (i+ ya yls)])
                 ((i= l m))
               (let* ([x1 (i+ xa xq)] [x2 (i+ x1 xq)] [x3 (i+ x2 xq)])
                 (twiddle rotate? w1r w1i (ld x x1) (ld x (i+ x1 8)) (d1r d1i)
                  (twiddle rotate? w2r w2i (ld x x2) (ld x (i+ x2 8)) (d2r d2i)
                   (twiddle rotate? w3r w3i (ld x x3) (ld x (i+ x3 8)) (d3r d3i)
                    (let* ([d0r (ld x xa)] [d0i (ld x (i+ xa 8))]
                           [s0r (f+ d0r d2r)] [s0i (f+ d0i d2i)]
                           [s1r (f- d0r d2r)] [s1i (f- d0i d2i)]
                           [s2r (f+ d1r d3r)] [s2i (f+ d1i d3i)]
                           [s3r (f- d1r d3r)] [s3i (f- d1i d3i)]
                           [y1 (i+ ya y1s)] [y2 (i+ ya (i* 2 ys))] [y3 (i+ ya y3s)])
                      (st! y ya (f+ s0r s2r)) (st! y (i+ ya 8) (f+ s0i s2i))
                      (st! y y2 (f- s0r s2r)) (st! y (i+ y2 8) (f- s0i s2i))
                      (st! y y1 (f+ s1r s3i)) (st! y (i+ y1 8) (f- s1i s3r))
                      (st! y y3 (f- s1r s3i)) (st! y (i+ y3 8) (f+ s1i s3r)))))))))]))
      (lines #f 0 1.0 0.0 1.0 0.0 1.0 0.0)
      (do ([j 1 (i+ j 1)]) ((fx>= j span))
        (let* ([w1 (i* 16 (i* j r))] [w2 (i* 2 w1)] [w3 (i+ w1 w2)]
               [w1r (ld roots w1)] [w1i (ld roots (i+ w1 8))]
               [w2r (ld roots w2)] [w2i (ld roots (i+ w2 8))]
               [w3r (ld roots w3)] [w3i (ld roots (i+ w3 8))])
          (lines #t j w1r w1i w2r w2i w3r w3i))))))
