#!chezscheme
;;; SP, the scalar pentadiagonal pseudo-application (NPB 3.4): niter ADI
;;; steps of the 3-D compressible Navier-Stokes system on an n^3 grid,
;;; each step the right-hand side, T^-1 rhs, the xi, eta and zeta line
;;; solves with their block-diagonal products, and the update of u; then
;;; the residual and error norms checked against the official values.
;;; Timed: the niter steps, as in the reference.
;;;
;;; Work split (the same kernel for every mode; serial is member 0 of 1
;;; with a barrier that does nothing).  A step has two phases:
;;;   1. for each k plane of the member's block: rhs and txinvr, the xi
;;;      lines and ninvr, the eta lines and pinvr (all inside plane k);
;;;   2. for each j plane of the member's block: the zeta lines, tzetar,
;;;      add and the refreshed auxiliary quantities (all inside plane j).
;;; A barrier ends each phase: phase 1 reads u and aux in planes k +- 2
;;; that phase 2 wrote, phase 2 reads the rhs of every k plane.  Blocks
;;; are contiguous, the first (count mod np) members taking one more.
;;; u, rhs, forcing and aux are shared flvectors (see sp-constants for the
;;; layout); each member has its own work line.  Modes: serial, places and
;;; threads; no futures mode, as each phase ends in a barrier of all the
;;; members.
(library (nas sp)
  (export sp-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (nas common) (nas member-usage) (nas nursery) (only (nas sp-memory) shared-flvector-address) (nas sp-constants)
          (nas sp-setup) (nas sp-rhs) (nas sp-solve) (nas sp-norms))

  (define sp-modes '(serial places threads))

  ;; member id's block of the planes lo .. hi-1, as (values start end)
  (define (block id np lo hi)
    (let* ([count (- hi lo)] [q (quotient count np)] [r (remainder count np)]
           [start (+ lo (* id q) (min id r))])
      (values start (+ start q (if (< id r) 1 0)))))

  ;; Runs the niter steps as member id of np; returns a pair of the seconds
  ;; they took (from a barrier that all members reach before the first
  ;; step) and the member's usage (nas member-usage).
  (define (sp-kernel c id np barrier u rhs forcing aux niter)
    (let ([ua (shared-flvector-address u)] [ra (shared-flvector-address rhs)]
          [fa (shared-flvector-address forcing)] [aa (shared-flvector-address aux)]
          [wb (sp-work-line (c-n c))] [n (c-n c)])
      (let-values ([(k0 k1) (block id np 1 (- n 1))]
                   [(j0 j1) (block id np 1 (- n 1))])
        (barrier)
        (let-values ([(ignored seconds usage)
                      (member-timed
                        (lambda ()
                          (do ([step 0 (+ step 1)]) ((= step niter))
                            (do ([k k0 (+ k 1)]) ((= k k1))
                              (sp-rhs-plane! c ua aa fa ra k #t)
                              (sp-x-solve! c ua ra aa wb k)
                              (sp-y-solve! c ua ra aa wb k))
                            (barrier)
                            (do ([j j0 (+ j 1)]) ((= j j1))
                              (sp-z-solve! c ua ra aa wb j))
                            (barrier))))])
          ;; the mappings stay in use until here
          (for-each shared-flvector-length (list u rhs forcing aux))
          (cons seconds usage)))))

  (define (run-places np c u rhs forcing aux niter)
    (vector->list
      (fork-join np cg ([u u] [rhs rhs] [forcing forcing] [aux aux] [n (c-n c)] [dt (c-dt c)]
                        [niter niter])
        (with-nursery                   ; in each place's process
          (lambda ()
            (sp-kernel (make-sp-constants n dt) (CG-id cg) (CG-np cg) (lambda () (CGBarrier cg))
                       u rhs forcing aux niter))))))

  (define (sp-run class mode np)
    (check-nas-arguments 'sp-run class sp-classes mode sp-modes np)
    (let* ([n (sp-class-size class)] [niter (sp-class-steps class)] [dt (sp-class-dt class)]
           [c (make-sp-constants n dt)] [points (* n n n)]
           [u (make-shared-flvector (* 5 points) 0.0)]
           [rhs (make-shared-flvector (* 5 points) 0.0)]
           [forcing (make-shared-flvector (* 5 points) 0.0)]
           [aux (make-shared-flvector (* (/ aux-width 8) points) 0.0)])
      (sp-forcing! c forcing)
      (sp-initialize! c u)
      (let ([ua (shared-flvector-address u)] [aa (shared-flvector-address aux)])
        (sp-aux-all! c ua aa))
      (let* ([members
              (with-mode-nursery mode np
                (lambda ()
                  (case mode
                    [(serial) (list (sp-kernel c 0 1 void u rhs forcing aux niter))]
                    [(places) (run-places np c u rhs forcing aux niter)]
                    [(threads) (vector->list
                                 (threads-spmd np (lambda (id barrier)
                                                    (sp-kernel c id np barrier u rhs forcing aux
                                                               niter))))])))]
             [seconds (car (car members))])
        ;; verification: the residual of the final u (without txinvr)
        (let ([ua (shared-flvector-address u)] [ra (shared-flvector-address rhs)]
              [fa (shared-flvector-address forcing)] [aa (shared-flvector-address aux)])
          (do ([k 1 (+ k 1)]) ((= k (- n 1)))
            (sp-rhs-plane! c ua aa fa ra k #f)))
        (let* ([xce (sp-error-norms c u)]
               [xcr (sp-residual-norms c rhs)]
               [refs (sp-reference-norms class)]
               [check (lambda (what computed reference)
                        (let loop ([m 0] [ok #t] [notes '()])
                          (if (= m 5)
                              (values ok (reverse notes))
                              (let* ([x (vector-ref computed m)] [r (vector-ref reference m)]
                                     [good (within-epsilon? x r sp-epsilon)])
                                (loop (+ m 1) (and ok good)
                                      (cons (format "~a ~a: ~a (reference ~a, error ~,2e)~a"
                                                    what (+ m 1) x r (relative-error x r)
                                                    (if good "" " FAILED"))
                                            notes))))))])
          (let-values ([(ok-r notes-r) (check "residual norm" xcr (car refs))]
                       [(ok-e notes-e) (check "error norm" xce (cadr refs))])
            (let ([t (fixnum->flonum n)])
              (make-nas-result 'sp class mode np seconds
                               (/ (* (+ (- (* 881.174 points) (* 4683.91 t t)) (* 11484.5 t) -19272.4)
                                     niter)
                                  (* seconds 1e6))
                               (and ok-r ok-e)
                               (append notes-r notes-e
                                       (member-usage-notes (map cdr members))))))))))

  (lift-places (nas sp)))
