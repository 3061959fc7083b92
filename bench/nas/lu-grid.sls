#!chezscheme
;;; LU's grid: the problem of a class, its constants, the arrays, the exact
;;; solution and what is computed from it (boundary values, the initial
;;; field, the error norms) and the surface integral.
;;;
;;; The grid is n x n x n points (every NPB class of LU is a cube), indexed
;;; 0 .. n-1; point p = (k*n + j)*n + i.  A field of 5-component vectors
;;; keeps component m of point p at element 5p + m.  Arrays are bytevectors
;;; of doubles (serial and threads modes) or shared flvectors (places mode).
;;; The kernels see an array through its view: the bytevector itself, or
;;; the address of the shared flvector's memory; fl@ and fl@! read and
;;; write either, so one kernel serves every mode.  A shared flvector must
;;; stay reachable while its view is used (its memory is unmapped once it
;;; is not): keep-until-here marks the last use.
(library (nas lu-grid)
  (export lu-class-size lu-class-iterations lu-class-dt
          make-lu-config lu-config? lu-config-n lu-config-itmax lu-config-dt
          lu-config-t1 lu-config-t2 lu-config-t3 lu-config-h
          lu-config-d11 lu-config-dtm lu-config-dte lu-config-dtme
          c1 c2 c3 c4 c5 omega dissipation
          fl@ fl@! array-view keep-until-here make-flonums make-field make-scalars
          set-boundary! set-initial! fill-exact! error-norms surface-integral)
  (import (except (chezscheme) fl+ fl- fl* fl/ flsqrt fx+ fx- fx* fx= fx< fx> fx<= fx>= fxsll)
          (nas lu-ops)
          (only (spindle) make-shared-flvector shared-flvector-length)
          (rename (only (spindle unsafe) unsafe-shared-vector-address)
                  (unsafe-shared-vector-address shared-vector-address)))

  ;; Problem sizes, iteration counts and time steps of NPB 3.4.
  (define (lu-class-size class) (case class [(S) 12] [(W) 33] [(A) 64]))
  (define (lu-class-iterations class) (case class [(S) 50] [(W) 300] [(A) 250]))
  (define (lu-class-dt class) (case class [(S) 0.5] [(W) 1.5e-3] [(A) 2.0]))

  ;; The constants of the equations (NPB's c1 .. c5), the SSOR relaxation
  ;; factor and the fourth-order dissipation coefficient.
  (define c1 1.4) (define c2 0.4) (define c3 0.1) (define c4 1.0) (define c5 1.4)
  (define omega 1.2)
  (define dissipation 0.25)

  ;; h: the mesh width 1/(n-1); t1 = 1/h^2, t2 = 1/(2h), t3 = 1/h (the same
  ;; in the three directions on a cube).  The diagonal blocks of the SSOR
  ;; sweeps (see lu-sweep.sls) use d11 = 1 + 2 dt td, dtm = 2 dt tm,
  ;; dte = 2 dt te and dtme = 2 dt (tm - te), where summed over the three
  ;; directions td is t1 times the direction's dissipation coefficient, tm
  ;; t1 times a momentum component's viscous coefficient (4/3 c3 c4 along
  ;; its own direction, c3 c4 across) and te is t1 c1 c3 c4 c5.
  (define-record-type lu-config
    (fields n itmax dt h t1 t2 t3 d11 dtm dte dtme)
    (protocol
      (lambda (new)
        (lambda (class)
          (let* ([n (lu-class-size class)]
                 [dt (lu-class-dt class)]
                 [h (fl/ 1.0 (fixnum->flonum (fx- n 1)))]
                 [t1 (fl/ 1.0 (fl* h h))]
                 [td (fl+ (fl* t1 0.75) (fl* t1 0.75) (fl* t1 1.0))]
                 [tm (fl* (fl* c3 c4) (fl+ (fl* t1 (fl/ 4.0 3.0)) t1 t1))]
                 [te (fl* (fl* (fl* (fl* c1 c3) c4) c5) (fl+ t1 t1 t1))]
                 [dt2 (fl* 2.0 dt)])
            (new n (lu-class-iterations class) dt
                 h t1 (fl/ 1.0 (fl* 2.0 h)) (fl/ 1.0 h)
                 (fl+ 1.0 (fl* dt2 td)) (fl* dt2 tm) (fl* dt2 te) (fl* dt2 (fl- tm te)))))))
    (sealed #t))

  (define-syntax fl@
    (syntax-rules ()
      [(_ v e) (let ([a v] [i e])
                 (if (bytevector? a)
                     (fl-ref a (fxsll i 3))
                     (memory-ref 'double a (fxsll i 3))))]))

  (define-syntax fl@!
    (syntax-rules ()
      [(_ v e x) (let ([a v] [i e])
                   (if (bytevector? a)
                       (fl-set! a (fxsll i 3) x)
                       (memory-set! 'double a (fxsll i 3) x)))]))

  (define (array-view a) (if (bytevector? a) a (shared-vector-address a)))

  (define (keep-until-here . arrays)
    (for-each (lambda (a) (unless (bytevector? a) (shared-flvector-length a))) arrays))

  ;; Zeroed arrays: len flonums, a field of 5-vectors, a field of scalars.
  (define (make-flonums len shared?)
    (if shared? (make-shared-flvector len 0.0) (make-bytevector (fx* len 8) 0)))
  (define (make-field n shared?) (make-flonums (fx* 5 (fx* n (fx* n n))) shared?))
  (define (make-scalars n shared?) (make-flonums (fx* n (fx* n n)) shared?))

  ;; The exact solution is a quartic in each coordinate: component m is
  ;; e(m,0) + sum over the axes of p(x) with p(x) = x(a + x(b + x(c + d x))),
  ;; the axis' four coefficients in row m (x, y, z interleaved as in NPB).
  (define coefficients
    '#(#(2.0 0.0 0.0 4.0 5.0 3.0 0.5 0.02 0.01 0.03 0.5 0.4 0.3)
       #(1.0 0.0 0.0 0.0 1.0 2.0 3.0 0.01 0.03 0.02 0.4 0.3 0.5)
       #(2.0 2.0 0.0 0.0 0.0 2.0 3.0 0.04 0.03 0.05 0.3 0.5 0.4)
       #(2.0 2.0 0.0 0.0 0.0 2.0 3.0 0.03 0.05 0.04 0.2 0.1 0.3)
       #(5.0 4.0 3.0 2.0 0.1 0.4 0.3 0.05 0.04 0.03 0.1 0.3 0.2)))

  (define (exact-component m x y z)
    (let ([e (vector-ref coefficients m)])
      (define (axis a x)
        (fl* (fl+ (vector-ref e a)
                  (fl* (fl+ (vector-ref e (fx+ a 3))
                            (fl* (fl+ (vector-ref e (fx+ a 6))
                                      (fl* (vector-ref e (fx+ a 9)) x))
                                 x))
                       x))
             x))
      (fl+ (vector-ref e 0) (axis 1 x) (axis 2 y) (axis 3 z))))

  (define (coordinate cfg i)
    (fl/ (fixnum->flonum i) (fixnum->flonum (fx- (lu-config-n cfg) 1))))

  ;; Stores the exact solution at point (i, j, k) into field f.
  (define (exact! f cfg i j k)
    (let ([n (lu-config-n cfg)]
          [x (coordinate cfg i)] [y (coordinate cfg j)] [z (coordinate cfg k)])
      (let ([b (fx* 5 (fx+ i (fx* n (fx+ j (fx* n k)))))])
        (do ([m 0 (fx+ m 1)]) ((fx= m 5))
          (fl@! f (fx+ b m) (exact-component m x y z))))))

  (define (fill-exact! f cfg)
    (let ([n (lu-config-n cfg)])
      (do ([k 0 (fx+ k 1)]) ((fx= k n))
        (do ([j 0 (fx+ j 1)]) ((fx= j n))
          (do ([i 0 (fx+ i 1)]) ((fx= i n))
            (exact! f cfg i j k))))))

  ;; The six faces of u hold the exact solution.
  (define (set-boundary! u cfg)
    (let ([n (lu-config-n cfg)])
      (define (face? i) (or (fx= i 0) (fx= i (fx- n 1))))
      (do ([k 0 (fx+ k 1)]) ((fx= k n))
        (do ([j 0 (fx+ j 1)]) ((fx= j n))
          (do ([i 0 (fx+ i 1)]) ((fx= i n))
            (when (or (face? i) (face? j) (face? k))
              (exact! u cfg i j k)))))))

  ;; The interior starts as the transfinite interpolation of the faces:
  ;; with px, py, pz the linear blends between opposite faces,
  ;; u = px + py + pz - px py - py pz - pz px + px py pz.
  (define (set-initial! u cfg)
    (let* ([n (lu-config-n cfg)] [last (fx- n 1)] [f (fl- (fixnum->flonum n) 1.0)])
      (define (at i j k m)
        (exact-component m (coordinate cfg i) (coordinate cfg j) (coordinate cfg k)))
      (do ([k 1 (fx+ k 1)]) ((fx= k last))
        (do ([j 1 (fx+ j 1)]) ((fx= j last))
          (do ([i 1 (fx+ i 1)]) ((fx= i last))
            (let ([x (fl/ (fixnum->flonum i) f)]
                  [y (fl/ (fixnum->flonum j) f)]
                  [z (fl/ (fixnum->flonum k) f)]
                  [b (fx* 5 (fx+ i (fx* n (fx+ j (fx* n k)))))])
              (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                (let ([px (fl+ (fl* (fl- 1.0 x) (at 0 j k m)) (fl* x (at last j k m)))]
                      [py (fl+ (fl* (fl- 1.0 y) (at i 0 k m)) (fl* y (at i last k m)))]
                      [pz (fl+ (fl* (fl- 1.0 z) (at i j 0 m)) (fl* z (at i j last m)))])
                  (fl@! u (fx+ b m)
                        (fl+ (fl- (fl+ px py pz) (fl* px py) (fl* py pz) (fl* pz px))
                             (fl* px py pz)))))))))))

  ;; The RMS norms over the interior of u minus the exact solution: a
  ;; vector of 5 flonums.
  (define (error-norms u cfg)
    (let* ([n (lu-config-n cfg)] [last (fx- n 1)] [sums (make-vector 5 0.0)])
      (do ([k 1 (fx+ k 1)]) ((fx= k last))
        (do ([j 1 (fx+ j 1)]) ((fx= j last))
          (do ([i 1 (fx+ i 1)]) ((fx= i last))
            (let ([b (fx* 5 (fx+ i (fx* n (fx+ j (fx* n k)))))]
                  [x (coordinate cfg i)] [y (coordinate cfg j)] [z (coordinate cfg k)])
              (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                (let ([d (fl- (exact-component m x y z) (fl@ u (fx+ b m)))])
                  (vector-set! sums m (fl+ (vector-ref sums m) (fl* d d)))))))))
      (let ([points (fixnum->flonum (fx* (fx- n 2) (fx* (fx- n 2) (fx- n 2))))])
        (vector-map (lambda (s) (flsqrt (fl/ s points))) sums))))

  ;; NPB's surface integral of the pressure-like quantity
  ;; phi = c2 (u5 - (u2^2 + u3^2 + u4^2) / (2 u1)) over the faces of the box
  ;; i in [1, n-2], j in [1, n-3], k in [2, n-2], each face by the
  ;; trapezoid rule on its cells (the four corners of a cell summed).
  (define (surface-integral u cfg)
    (let* ([n (lu-config-n cfg)] [h (lu-config-h cfg)]
           [i0 1] [i1 (fx- n 2)] [j0 1] [j1 (fx- n 3)] [k0 2] [k1 (fx- n 2)])
      (define (phi i j k)
        (let ([b (fx* 5 (fx+ i (fx* n (fx+ j (fx* n k)))))])
          (let ([r (fl@ u b)] [a (fl@ u (fx+ b 1))] [c (fl@ u (fx+ b 2))]
                [d (fl@ u (fx+ b 3))] [e (fl@ u (fx+ b 4))])
            (fl* c2 (fl- e (fl/ (fl* 0.5 (fl+ (fl* a a) (fl* c c) (fl* d d))) r))))))
      ;; Sums over the cells of two opposite faces; (at s a b) is phi on
      ;; face s (0 or 1) at in-face coordinates (a, b).
      (define (faces a0 a1 b0 b1 at)
        (let loop-b ([b b0] [acc 0.0])
          (if (fx= b b1)
              acc
              (let loop-a ([a a0] [acc acc])
                (if (fx= a a1)
                    (loop-b (fx+ b 1) acc)
                    (loop-a (fx+ a 1)
                            (fl+ acc
                                 (fl+ (at 0 a b) (at 0 (fx+ a 1) b) (at 0 a (fx+ b 1))
                                      (at 0 (fx+ a 1) (fx+ b 1))
                                      (at 1 a b) (at 1 (fx+ a 1) b) (at 1 a (fx+ b 1))
                                      (at 1 (fx+ a 1) (fx+ b 1))))))))))
      (let ([xy (faces i0 i1 j0 j1 (lambda (s i j) (phi i j (if (fx= s 0) k0 k1))))]
            [xz (faces i0 i1 k0 k1 (lambda (s i k) (phi i (if (fx= s 0) j0 j1) k)))]
            [yz (faces j0 j1 k0 k1 (lambda (s j k) (phi (if (fx= s 0) i0 i1) j k)))])
        (fl* 0.25 (fl+ (fl* (fl* h h) xy) (fl* (fl* h h) xz) (fl* (fl* h h) yz)))))))
