#!chezscheme
;;; NPB LU: the SSOR solution of the 3-D compressible Navier-Stokes
;;; equations (NPB 3.4's pseudo-application LU), classes S, W and A.
;;;
;;; (lu-run class mode np) sets up the problem (boundary values, initial
;;; field, forcing term), runs the SSOR iterations in the chosen mode (the
;;; reference times only these), then computes the error norms against
;;; the exact solution and the surface integral, and verifies the
;;; residual norms, error norms and surface integral against NPB 3.4's
;;; values with relative tolerance 1e-8.  Left out of the reference: its
;;; untimed warm-up iteration (it leaves no trace in the results) and its
;;; early stop once every residual norm is below 1e-8 (those of S, W and A
;;; stay orders of magnitude above it).
;;;
;;; Modes: serial; places (fork-join over shared flvectors); threads
;;; (parallel threads of one pool over bytevectors).  futures is not
;;; offered: the sweeps are a pipeline between long-lived members, which
;;; futures do not express.
(library (nas lu)
  (export lu-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (nas common) (nas member-usage) (nas nursery) (nas lu-grid) (nas lu-rhs) (nas lu-ssor)
          (only (spindle) fork-join CG-id CG-np CGBarrier lift-places
                make-shared-fxvector))

  (define lu-classes '(S W A))
  (define lu-modes '(serial places threads))

  ;; NPB 3.4's verification values: residual norms, error norms, surface
  ;; integral.
  (define (reference class)
    (case class
      [(S) (values '#(1.6196343210976702e-02 2.1976745164821318e-03 1.5179927653399185e-03
                      1.5029584435994323e-03 3.4264073155896461e-02)
                   '#(6.4223319957960924e-04 8.4144342047347926e-05 5.8588269616485186e-05
                      5.8474222595157350e-05 1.3103347914111294e-03)
                   7.8418928865937083e+00)]
      [(W) (values '#(0.1236511638192e+02 0.1317228477799e+01 0.2550120713095e+01
                      0.2326187750252e+01 0.2826799444189e+02)
                   '#(0.4867877144216e+00 0.5064652880982e-01 0.9281818101960e-01
                      0.8570126542733e-01 0.1084277417792e+01)
                   0.1161399311023e+02)]
      [(A) (values '#(7.7902107606689367e+02 6.3402765259692870e+01 1.9499249727292479e+02
                      1.7845301160418537e+02 1.8384760349464247e+03)
                   '#(2.9964085685471943e+01 2.8194576365003349e+00 7.3473412698774742e+00
                      6.7139225687777051e+00 7.0715315688392578e+01)
                   2.6030925604886277e+01)]))

  (define epsilon 1e-8)

  ;; Runs the members in the mode; returns the list of their values.
  (define (run-members mode np class u rsd frct rho qs flags partials)
    (with-mode-nursery mode np
      (lambda ()
        (case mode
          [(serial) (list (lu-member 0 1 void class u rsd frct rho qs flags partials))]
          [(threads)
           (vector->list (threads-spmd np (lambda (id barrier)
                                            (lu-member id np barrier class u rsd frct rho qs
                                                       flags partials))))]
          [(places)
           (vector->list (fork-join np cg ([class class] [u u] [rsd rsd] [frct frct] [rho rho]
                                           [qs qs] [flags flags] [partials partials])
                           (with-nursery        ; in each place's process
                             (lambda ()
                               (lu-member (CG-id cg) (CG-np cg) (lambda () (CGBarrier cg))
                                          class u rsd frct rho qs flags partials)))))]))))

  ;; NPB's operation count of LU for an n^3 grid and itmax iterations.
  (define (mops n itmax seconds)
    (let ([n (inexact n)])
      (/ (* 1e-6 itmax (+ (* 1984.77 n n n) (* -10923.3 n n) (* 27770.9 n) -144010.0))
         seconds)))

  (define (lu-run class mode np)
    (check-nas-arguments 'lu-run class lu-classes mode lu-modes np)
    (let* ([cfg (make-lu-config class)] [n (lu-config-n cfg)]
           [shared? (eq? mode 'places)]
           [u (make-field n shared?)] [rsd (make-field n shared?)] [frct (make-field n shared?)]
           [rho (make-scalars n shared?)] [qs (make-scalars n shared?)]
           [flags (make-shared-fxvector (fx* 2 np) 0)]
           [partials (make-flonums (fx* 5 np) shared?)])
      (set-boundary! (array-view u) cfg)
      (set-initial! (array-view u) cfg)
      (compute-forcing! (array-view frct) (array-view rsd) (array-view rho) (array-view qs) cfg)
      (let* ([members (run-members mode np class u rsd frct rho qs flags partials)]
             [out (car (car members))]
             [seconds (vector-ref out 0)]
             [residuals (vector-map (lambda (m) (vector-ref out (fx+ m 1))) '#(0 1 2 3 4))]
             [errors (error-norms (array-view u) cfg)]
             [integral (surface-integral (array-view u) cfg)])
        (keep-until-here u rsd frct rho qs)
        (let-values ([(xcr xce xci) (reference class)])
          (define (note what computed ref)
            (format "~a ~a reference ~a error ~a" what computed ref (relative-error computed ref)))
          (define (check computed ref) (within-epsilon? computed ref epsilon))
          (let ([notes (append
                         (map (lambda (m)
                                (note (format "residual norm ~a" (+ m 1))
                                      (vector-ref residuals m) (vector-ref xcr m)))
                              '(0 1 2 3 4))
                         (map (lambda (m)
                                (note (format "error norm ~a" (+ m 1))
                                      (vector-ref errors m) (vector-ref xce m)))
                              '(0 1 2 3 4))
                         (list (note "surface integral" integral xci))
                         (member-usage-notes (map cdr members)))]
                [verified? (and (for-all check (vector->list residuals) (vector->list xcr))
                                (for-all check (vector->list errors) (vector->list xce))
                                (check integral xci))])
            (make-nas-result 'lu class mode np seconds
                             (mops n (lu-config-itmax cfg) seconds) verified? notes))))))

  (lift-places (nas lu)))
