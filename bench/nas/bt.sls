#!chezscheme
;;; NAS BT: the block-tridiagonal pseudo-application (NPB 3.4).  Each time
;;; step of the ADI scheme computes the explicit right-hand side, solves
;;; the block tridiagonal systems along x, then y, then z lines, and adds
;;; the result to u.  Verified by the RMS norms of the residual and of the
;;; error against the exact solution (bt-verify).
;;;
;;; One kernel (steps) serves every mode: member id of np owns a block of
;;; the interior z-planes (and of the y-planes for the z solves).  Per time
;;; step, with a barrier after each phase that reads another member's data:
;;;   prepare its planes | rhs, x and y solves of its planes | z solves of
;;;   its y-planes | add on its planes (then the next step's prepare).
;;; rhs reads the prepared quantities of the neighbouring planes and the z
;;; solves read every plane, hence the three barriers; the add and the
;;; next prepare touch only the member's own planes (the boundary planes,
;;; prepared by the first and last members, never change).
;;; Modes: serial (np 1, no barrier), threads (threads-spmd, one address
;;; space), places (fork-join over the same shared flvectors).  Futures
;;; are not offered: the steps are barrier-separated phases, not tasks.
(library (nas bt)
  (export bt-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (only (spindle) fork-join CG-id CG-np CGBarrier lift-places)
          (nas common) (nas member-usage) (nas nursery) (nas bt-grid) (nas bt-exact) (nas bt-rhs) (nas bt-solve)
          (nas bt-verify))

  (define bt-modes '(serial places threads))

  ;; measured: 5% less CPU than nas nursery's default 1 MiB at class W
  (define bt-nursery-bytes (expt 2 21))

  ;; Runs niter time steps as member id of np; barrier: a procedure of no
  ;; arguments.  Returns a pair of the seconds between the first and the
  ;; last barrier (what the reference times) and the member's usage in
  ;; them (nas member-usage).
  (define (steps cs fields id np barrier niter)
    (let*-values ([(n) (consts-n cs)] [(A) (bt-fields-address fields)]
                  [(work) (make-workspace n)]
                  [(lo hi) (block-range 1 (fx- n 1) id np)]
                  [(plo) (if (fx= lo 1) 0 lo)]
                  [(phi) (if (and (fx= hi (fx- n 1)) (fx< lo hi)) n hi)])
      (barrier)
      (let-values ([(v seconds usage)
                    (member-timed
                      (lambda ()
                        (do ([step 0 (fx+ step 1)]) ((fx= step niter))
                          (prepare! cs A plo phi)
                          (barrier)
                          (rhs! cs A lo hi)
                          (solve! cs A work 0 lo hi)
                          (solve! cs A work 1 lo hi)
                          (barrier)
                          (solve! cs A work 2 lo hi)
                          (barrier)
                          (add! cs A lo hi))
                        (barrier)))])
        (keep-mapped fields)
        (cons seconds usage))))

  (define (places-steps class fields np)
    (vector->list
      (fork-join np cg ([class class] [vs (bt-fields->list fields)])
        (with-nursery bt-nursery-bytes   ; in each place's process
          (lambda ()
            (let ([n (bt-class-size class)] [iters (bt-class-steps class)])
              (steps (make-constants n (bt-class-dt class)) (list->bt-fields vs)
                     (CG-id cg) (CG-np cg) (lambda () (CGBarrier cg)) iters)))))))

  (define (bt-run class mode np)
    (check-nas-arguments 'bt-run class bt-classes mode bt-modes np)
    (let* ([n (bt-class-size class)] [niter (bt-class-steps class)] [dt (bt-class-dt class)]
           [cs (make-constants n dt)] [fields (make-bt-fields n)]
           [A (bt-fields-address fields)])
      (initialize! cs (bt-fields-u fields))
      (exact-rhs! cs (bt-fields-forcing fields))
      (let* ([members
              (with-mode-nursery mode np bt-nursery-bytes
                (lambda ()
                  (case mode
                    [(serial) (list (steps cs fields 0 1 void niter))]
                    [(threads)
                     (vector->list (threads-spmd np (lambda (id barrier)
                                                      (steps cs fields id np barrier niter))))]
                    [else (places-steps class fields np)])))]
             [seconds (car (car members))])
        (let ([xce (error-norm cs A)])
          (prepare! cs A 0 n)
          (rhs! cs A 0 n)
          (let ([xcr (map (lambda (x) (fl/ x dt)) (rhs-norm cs A))]
                [navg (fixnum->flonum n)])
            (let-values ([(ok notes) (bt-verify class xcr xce)])
              (keep-mapped fields)
              (make-nas-result
                'bt class mode np seconds
                (if (> seconds 0)
                    (/ (* niter 1e-6 (+ (* 3478.8 navg navg navg) (* -17655.7 navg navg)
                                        (* 28023.7 navg)))
                       seconds)
                    0.0)
                ok (append notes (member-usage-notes (map cdr members))))))))))

  (lift-places (nas bt)))
