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

  (define-syntax ld
    (syntax-rules () [(_ bv off) (bytevector-ieee-double-native-ref bv off)]))
  (define-syntax st!
    (syntax-rules () [(_ bv off x) (bytevector-ieee-double-native-set! bv off x)]))

  ;; Transforms m lines of (fft-plan-n plan) points at x (offset xo, point
  ;; stride xps, line stride xls, in bytes) in place.  w1 and w2 are work
  ;; bytevectors of at least 16*n*m bytes, distinct from x.  Stage 1 reads
  ;; x, the last stage writes x, the stages between alternate w1 and w2
  ;; (there, point p of line l is at (p*m + l)*16).
  (define (fft-lines! plan m x xo xps xls w1 w2)
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

  ;; One stage: span = L* (the length of the transforms done so far), L =
  ;; radix*L*, r = n/L.  For j < L*, k < r and each line, the inputs
  ;; c_q = X[j + k*L* + q*n/radix] times omega_L^(j*q) are combined by a
  ;; radix-point DFT into Y[j + s*L* + k*L], s < radix.

  ;; The radix-2 stage is only ever the first (span 1: every root is 1).
  (define (radix-2-stage! plan m span x xo xps xls y yo yps yls)
    (let* ([n (fft-plan-n plan)] [r (fxquotient n 2)] [xq (fx* r xps)])
      (do ([k 0 (fx+ k 1)]) ((fx= k r))
        (do ([l 0 (fx+ l 1)]
             [xa (fx+ xo (fx* k xps)) (fx+ xa xls)]
             [ya (fx+ yo (fx* (fx* 2 k) yps)) (fx+ ya yls)])
            ((fx= l m))
          (let* ([xb (fx+ xa xq)] [yb (fx+ ya yps)]
                 [ar (ld x xa)] [ai (ld x (fx+ xa 8))]
                 [br (ld x xb)] [bi (ld x (fx+ xb 8))])
            (st! y ya (fl+ ar br)) (st! y (fx+ ya 8) (fl+ ai bi))
            (st! y yb (fl- ar br)) (st! y (fx+ yb 8) (fl- ai bi)))))))

  ;; The radix-4 DFT of d0..d3: with s0 = d0+d2, s1 = d0-d2, s2 = d1+d3,
  ;; s3 = d1-d3: y0 = s0+s2, y2 = s0-s2, and y1, y3 are s1 -+ i s3 forward,
  ;; s1 +- i s3 inverse (omega_4 = -i forward): the inverse swaps y1 and y3.
  ;; j = 0 (all roots 1) runs without the products.
  (define (radix-4-stage! plan m span x xo xps xls y yo yps yls)
    (let* ([n (fft-plan-n plan)] [roots (fft-plan-roots plan)]
           [inverse? (fft-plan-inverse? plan)]
           [L (fx* 4 span)] [r (fxquotient n L)]
           [xq (fx* (fxquotient n 4) xps)] [ys (fx* span yps)]
           [y1s (if inverse? (fx* 3 ys) ys)] [y3s (if inverse? ys (fx* 3 ys))])
      ;; (rotate? wr wi cr ci (dr di) body): body with d = w*c, or d = c
      (define-syntax twiddle
        (syntax-rules ()
          [(_ #f wr wi cr ci (dr di) body) (let ([dr cr] [di ci]) body)]
          [(_ #t wr wi cr ci (dr di) body)
           (let* ([ar cr] [ai ci]
                  [dr (fl- (fl* wr ar) (fl* wi ai))] [di (fl+ (fl* wr ai) (fl* wi ar))])
             body)]))
      (define-syntax lines
        (syntax-rules ()
          [(_ rotate? j w1r w1i w2r w2i w3r w3i)
           (do ([k 0 (fx+ k 1)]) ((fx= k r))
             (do ([l 0 (fx+ l 1)]
                  [xa (fx+ xo (fx* (fx+ j (fx* k span)) xps)) (fx+ xa xls)]
                  [ya (fx+ yo (fx* (fx+ j (fx* k L)) yps)) (fx+ ya yls)])
                 ((fx= l m))
               (let* ([x1 (fx+ xa xq)] [x2 (fx+ x1 xq)] [x3 (fx+ x2 xq)])
                 (twiddle rotate? w1r w1i (ld x x1) (ld x (fx+ x1 8)) (d1r d1i)
                  (twiddle rotate? w2r w2i (ld x x2) (ld x (fx+ x2 8)) (d2r d2i)
                   (twiddle rotate? w3r w3i (ld x x3) (ld x (fx+ x3 8)) (d3r d3i)
                    (let* ([d0r (ld x xa)] [d0i (ld x (fx+ xa 8))]
                           [s0r (fl+ d0r d2r)] [s0i (fl+ d0i d2i)]
                           [s1r (fl- d0r d2r)] [s1i (fl- d0i d2i)]
                           [s2r (fl+ d1r d3r)] [s2i (fl+ d1i d3i)]
                           [s3r (fl- d1r d3r)] [s3i (fl- d1i d3i)]
                           [y1 (fx+ ya y1s)] [y2 (fx+ ya (fx* 2 ys))] [y3 (fx+ ya y3s)])
                      (st! y ya (fl+ s0r s2r)) (st! y (fx+ ya 8) (fl+ s0i s2i))
                      (st! y y2 (fl- s0r s2r)) (st! y (fx+ y2 8) (fl- s0i s2i))
                      (st! y y1 (fl+ s1r s3i)) (st! y (fx+ y1 8) (fl- s1i s3r))
                      (st! y y3 (fl- s1r s3i)) (st! y (fx+ y3 8) (fl+ s1i s3r)))))))))]))
      (lines #f 0 1.0 0.0 1.0 0.0 1.0 0.0)
      (do ([j 1 (fx+ j 1)]) ((fx>= j span))
        (let* ([w1 (fx* 16 (fx* j r))] [w2 (fx* 2 w1)] [w3 (fx+ w1 w2)]
               [w1r (ld roots w1)] [w1i (ld roots (fx+ w1 8))]
               [w2r (ld roots w2)] [w2i (ld roots (fx+ w2 8))]
               [w3r (ld roots w3)] [w3i (ld roots (fx+ w3 8))])
          (lines #t j w1r w1i w2r w2i w3r w3i))))))
