#!chezscheme
;;; SP's problem: the classes (grid size, time steps, dt), the constants of
;;; the discretised Navier-Stokes system (NPB 3.4 set_constants) and the
;;; exact solution the forcing and the error norm are built from: each of
;;; the five components is a sum of quartic polynomials in xi, eta, zeta.
;;;
;;; Grid layout shared by every SP library: n points a side; point
;;; p = (k n + j) n + i.  The five-component arrays (u, rhs, forcing) hold
;;; component m of point p at byte 40p + 8m; the auxiliary array holds
;;; nine slots per point at byte 72p + 8s (aux-* below).
(library (nas sp-constants)
  (export sp-classes sp-class-size sp-class-steps sp-class-dt
          make-sp-constants sp-constants?
          c-n c-dt c-bt c-dnm1 c-c1 c-c2 c-c1c2 c-c1c5 c-c3c4 c-con43 c-c2iv
          c-dssp c-t1 c-t2 c-t3 c-dd c-ddt1 c-con1 c-con2 c-con3 c-con4 c-con5
          c-dtt1 c-dtt2 c-c2dtt1 c-comz1 c-comz4 c-comz5 c-comz6
          aux-rho aux-us aux-vs aux-ws aux-qs aux-square aux-speed aux-e aux-f aux-width
          exact-solution)
  (import (chezscheme) (nas ns-exact))

  (define sp-classes '(S W A))
  (define (sp-class-size class) (case class [(S) 12] [(W) 36] [(A) 64]))
  (define (sp-class-steps class) (case class [(S) 100] [(W) 400] [(A) 400]))
  (define (sp-class-dt class) (case class [(S) 0.015] [(W) 0.0015] [(A) 0.0015]))

  ;; byte offsets of the auxiliary slots within a point's 72 bytes: NPB's
  ;; rho_i, us, vs, ws, qs, square, speed, and two products the flux
  ;; differences use at every neighbour, e = u[4] rho_i and
  ;; f = c1 u[4] - c2 square
  (define aux-rho 0) (define aux-us 8) (define aux-vs 16) (define aux-ws 24)
  (define aux-qs 32) (define aux-square 40) (define aux-speed 48)
  (define aux-e 56) (define aux-f 64)
  (define aux-width 72)

  ;; The grid is a cube, so the three directions share tN and the con
  ;; terms.  The reference's five dissipation coefficients of a direction
  ;; (dx1..dx5, dy1..dy5, dz1..dz5) are all equal, 0.75 for xi and eta and
  ;; 1.0 for zeta, and so are its dxmax etc.: dd holds that one value per
  ;; direction (0 xi, 1 eta, 2 zeta) and ddt1 the products dd * t1.
  (define-record-type (sp-constants make-sp-constants* sp-constants?)
    (fields (immutable n c-n) (immutable dt c-dt) (immutable bt c-bt)
            (immutable dnm1 c-dnm1) (immutable c1 c-c1) (immutable c2 c-c2)
            (immutable c1c2 c-c1c2) (immutable c1c5 c-c1c5) (immutable c3c4 c-c3c4)
            (immutable con43 c-con43) (immutable c2iv c-c2iv) (immutable dssp c-dssp)
            (immutable t1 c-t1) (immutable t2 c-t2) (immutable t3 c-t3)
            (immutable dd c-dd) (immutable ddt1 c-ddt1)
            (immutable con1 c-con1) (immutable con2 c-con2) (immutable con3 c-con3)
            (immutable con4 c-con4) (immutable con5 c-con5)
            (immutable dtt1 c-dtt1) (immutable dtt2 c-dtt2) (immutable c2dtt1 c-c2dtt1)
            (immutable comz1 c-comz1) (immutable comz4 c-comz4)
            (immutable comz5 c-comz5) (immutable comz6 c-comz6))
    (sealed #t))

  (define (make-sp-constants n dt)
    (let* ([c1 1.4] [c2 0.4] [c3 0.1] [c4 1.0] [c5 1.4]
           [dnm1 (/ 1.0 (fixnum->flonum (- n 1)))]
           [t1 (/ 1.0 (* dnm1 dnm1))] [t2 (/ 1.0 (* 2.0 dnm1))] [t3 (/ 1.0 dnm1)]
           [dd (vector 0.75 0.75 1.0)]
           [dssp (* 0.25 (max 0.75 (max 0.75 1.0)))]
           [c1c2 (* c1 c2)] [c1c5 (* c1 c5)] [c3c4 (* c3 c4)]
           [conz1 (- 1.0 c1c5)] [con43 (/ 4.0 3.0)] [con16 (/ 1.0 6.0)]
           [c3c4t3 (* c3c4 t3)]
           [dtt1 (* dt t1)] [dtt2 (* dt t2)] [dtdssp (* dt dssp)])
      (make-sp-constants*
        n dt (sqrt 0.5) dnm1 c1 c2 c1c2 c1c5 c3c4 con43 2.5 dssp t1 t2 t3
        dd (vector-map (lambda (d) (* d t1)) dd)
        (* (* c3c4t3 con43) t3) (* c3c4t3 t3) (* (* c3c4t3 conz1) t3)
        (* (* c3c4t3 con16) t3) (* (* c3c4t3 c1c5) t3)
        dtt1 dtt2 (* 2.0 dtt1) dtdssp (* 4.0 dtdssp) (* 5.0 dtdssp) (* 6.0 dtdssp)))))
