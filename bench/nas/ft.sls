#!chezscheme
;;; FT, the 3-D FFT PDE kernel (NPB 3.4): u(x, 0) is a complex
;;; nx*ny*nz array of NPB deviates (element (i, j, k) takes deviates
;;; 2m+1 and 2m+2 after the seed, m = (k*ny + j)*nx + i); its forward 3-D
;;; FFT is evolved in Fourier space by exp(-4 alpha pi^2 |k|^2 t), and
;;; after each of niter steps the inverse 3-D FFT's checksum, the sum of
;;; 1024 elements (j mod nx, 3j mod ny, 5j mod nz) over ntotal, is checked
;;; against the official values to a relative 1e-12.
;;;
;;; Each 3-D transform is a plane pass (x and y lines, planes split among
;;; the members) and a slab pass (z lines, slabs split), with a barrier
;;; between them: (nas ft-passes).  The evolution is done in the slab pass,
;;; before the inverse z transform.  Each member sums the checksum elements
;;; of its own planes; the sums are added in member order, so a result
;;; depends on np but not on timing.
;;;
;;; The arrays are shared flvectors in every mode.  Modes: serial (one
;;; member, no barrier); places (fork-join, partial sums in a shared
;;; flvector); threads (threads-spmd); futures (each pass as np futures on
;;; a pool of np workers; touching them all is the barrier, and their sums
;;; are added in member order); mpi (the slab decomposition with
;;; all-to-all transposes of (nas ft-mpi), no shared memory).
(library (nas ft)
  (export ft-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (nas common) (nas timed) (nas ft-passes) (nas ft-mpi))

  (define ft-classes '(S W A))
  (define ft-modes '(serial places threads futures mpi))

  ;; class -> #(nx ny nz niter)
  (define (class-size class)
    (case class [(S) '#(64 64 64 6)] [(W) '#(128 128 32 6)] [(A) '#(256 256 128 6)]))

  ;; NPB 3.4's checksums, one (re . im) per step.
  (define (reference-checksums class)
    (case class
      [(S) '((554.6087004964 . 484.5363331978) (554.6385409189 . 486.5304269511)
             (554.6148406171 . 488.3910722336) (554.5423607415 . 490.1273169046)
             (554.4255039624 . 491.7475857993) (554.2683411902 . 493.2597244941))]
      [(W) '((567.3612178944 . 529.3246849175) (563.1436885271 . 528.2149986629)
             (559.4024089970 . 527.0996558037) (556.0698047020 . 526.0027904925)
             (553.0898991250 . 524.9400845633) (550.4159734538 . 523.9212247086))]
      [(A) '((504.6735008193 . 511.4047905510) (505.9412319734 . 509.8809666433)
             (506.9376896287 . 509.8144042213) (507.7892868474 . 510.1336130759)
             (508.5233095391 . 510.4914655194) (509.1487099959 . 510.7917842803))]))

  (define epsilon 1e-12)

  ;; The timed part runs with a young generation of 1 MB (Chez's default:
  ;; 8 MB): the transforms allocate a flonum per operation, and a young
  ;; generation that stays in the cache took a quarter less time (class W,
  ;; serial and threads at np 2).  ft-run restores the caller's setting.
  (define young-generation-bytes (expt 2 20))

  (define (size-niter size) (vector-ref size 3))
  (define (size-bytes size)
    (fx* 16 (fx* (vector-ref size 0) (fx* (vector-ref size 1) (vector-ref size 2)))))

  ;; The checksums #(re1 im1 ... re_niter im_niter) from the members' sums:
  ;; (sum t m) -> (values re im) of step t, member m.
  (define (checksums size np sum)
    (let ([out (make-vector (fx* 2 (size-niter size)))]
          [ntotal (fixnum->flonum (fxquotient (size-bytes size) 16))])
      (do ([t 0 (fx+ t 1)]) ((fx= t (size-niter size)) out)
        (let loop ([m 0] [re 0.0] [im 0.0])
          (if (fx= m np)
              (begin (vector-set! out (fx* 2 t) (fl/ re ntotal))
                     (vector-set! out (fx+ 1 (fx* 2 t)) (fl/ im ntotal)))
              (let-values ([(r i) (sum t m)])
                (loop (fx+ m 1) (fl+ re r) (fl+ im i))))))))

  ;; The SPMD body of member id: an untimed forward transform first, as in
  ;; the reference, then the timed run.  partials: a global array, (step,
  ;; member) -> sums.  Returns (cons seconds checksums) in member 0, #f
  ;; elsewhere.
  (define (ft-member id np barrier size u0 u1 partials)
    (let ([me (make-ft-member id np size u0 u1)])
      (define (forward! tables)
        (forward-planes! me tables) (barrier) (forward-slabs! me tables))
      (forward! (make-ft-tables size))
      (collect-trip-bytes young-generation-bytes)
      (barrier)
      (let-values ([(v seconds usage)
                    (timed
                      (lambda ()
                        (let ([tables (make-ft-tables size)])
                          (forward! tables)
                          (do ([t 0 (fx+ t 1)]) ((fx= t (size-niter size)))
                            (step-slabs! me tables)
                            (barrier)
                            (let-values ([(re im) (step-planes! me tables)])
                              (global-double-set! partials (fx* 2 (fx+ id (fx* np t))) re)
                              (global-double-set! partials (fx+ 1 (fx* 2 (fx+ id (fx* np t)))) im))
                            (barrier)))))])
        (and (fx= id 0)
             (list seconds
                   (checksums size np
                     (lambda (t m)
                       (let ([slot (fx* 2 (fx+ m (fx* np t)))])
                         (values (global-double-ref partials slot)
                                 (global-double-ref partials (fx+ slot 1))))))
                   usage)))))

  ;; ---------------------------------------------------------------- modes
  ;; (proc u0 u1 partials) with the arrays of a run of np members, mapped.
  (define (with-arrays size np proc)
    (let ([u0 (make-shared-flvector (fxquotient (size-bytes size) 8))]
          [u1 (make-shared-flvector (fxquotient (size-bytes size) 8))]
          [partials (make-shared-flvector (fx* 2 (fx* np (size-niter size))))])
      (proc u0 u1 partials)))

  (define (run-places np size)
    (with-arrays size np
      (lambda (u0 u1 partials)
        (vector-ref
          (fork-join np cg ([size size] [u0 u0] [u1 u1] [partials partials])
            (ft-member (CG-id cg) (CG-np cg) (lambda () (CGBarrier cg)) size u0 u1 partials))
          0))))

  (define (run-threads np size)
    (with-arrays size np
      (lambda (u0 u1 partials)
        (vector-ref (threads-spmd np (lambda (id barrier) (ft-member id np barrier size u0 u1 partials)))
                    0))))

  (define (run-serial size)
    (with-arrays size 1
      (lambda (u0 u1 partials)
        (ft-member 0 1 void size u0 u1 partials))))

  ;; A pass: one future per member, all touched; their values in member
  ;; order.
  (define (run-futures np size)
    (with-arrays size np
      (lambda (u0 u1 partials)
        (futures-run np size u0 u1))))

  (define (futures-run np size u0 u1)
    (let* ([members (map (lambda (id) (make-ft-member id np size u0 u1)) (iota np))]
           [pool (make-parallel-thread-pool np)]
           [caller-pool (current-future-pool)])
      (define (pass! proc tables)
        (map touch (map (lambda (me) (future (lambda () (proc me tables)))) members)))
      (define (forward! tables)
        (pass! forward-planes! tables) (pass! forward-slabs! tables))
      (dynamic-wind
        (lambda () (current-future-pool pool))
        (lambda ()
          (forward! (make-ft-tables size))
          (collect-trip-bytes young-generation-bytes)
          (let-values ([(sums seconds)
                        (nas-seconds
                          (lambda ()
                            (let ([tables (make-ft-tables size)])
                              (forward! tables)
                              (let loop ([t 0] [sums '()])
                                (if (fx= t (size-niter size))
                                    (list->vector (reverse sums))
                                    (begin
                                      (pass! step-slabs! tables)
                                      (loop (fx+ t 1)
                                            (cons (list->vector
                                                    (pass! (lambda (me tables)
                                                             (call-with-values
                                                               (lambda () (step-planes! me tables))
                                                               cons))
                                                           tables))
                                                  sums))))))))])
            (list seconds
                  (checksums size np
                    (lambda (t m)
                      (let ([s (vector-ref (vector-ref sums t) m)]) (values (car s) (cdr s)))))
                  #f)))
        (lambda () (current-future-pool caller-pool) (parallel-thread-pool-close pool)))))

  (define (run-mpi np size)
    (let ([r (ft-mpi-run (nas-mpi-members 'ft-run np) size young-generation-bytes)])
      (list (car r)
            (checksums size np
              (lambda (t m)
                (let ([slot (fx* 2 (fx+ m (fx* np t)))])
                  (values (vector-ref (cdr r) slot) (vector-ref (cdr r) (fx+ slot 1))))))
            #f)))

  ;; NPB's operation count of FT.
  (define (ft-mops size seconds)
    (let ([n (fixnum->flonum (fx* (vector-ref size 0) (fx* (vector-ref size 1) (vector-ref size 2))))])
      (/ (* 1e-6 n (+ 14.8157 (* 7.19641 (log n))
                      (* (+ 5.23518 (* 7.21113 (log n))) (vector-ref size 3))))
         seconds)))

  (define (ft-run class mode np)
    (check-nas-arguments 'ft-run class ft-classes mode ft-modes np)
    (let* ([size (class-size class)]
           [trip (collect-trip-bytes)]
           [out (dynamic-wind
                  void
                  (lambda ()
                    (case mode
                      [(serial) (run-serial size)]
                      [(places) (run-places np size)]
                      [(threads) (run-threads np size)]
                      [(futures) (run-futures np size)]
                      [(mpi) (run-mpi np size)]))
                  (lambda () (collect-trip-bytes trip)))]
           [seconds (car out)] [sums (cadr out)] [usage (caddr out)]
           [checks
            (let loop ([t 0] [refs (reference-checksums class)])
              (if (null? refs)
                  '()
                  (let* ([c (make-rectangular (vector-ref sums (fx* 2 t))
                                              (vector-ref sums (fx+ 1 (fx* 2 t))))]
                         [ref (make-rectangular (caar refs) (cdar refs))]
                         [err (/ (magnitude (- c ref)) (magnitude ref))])
                    (cons (cons (<= err epsilon)
                                (format "checksum ~a: ~,10f ~,10f (reference ~a ~a, error ~,2e)"
                                        (fx+ t 1) (real-part c) (imag-part c) (caar refs) (cdar refs) err))
                          (loop (fx+ t 1) (cdr refs))))))])
      (make-nas-result 'ft class mode np seconds (ft-mops size seconds)
                       (for-all car checks)
                       (append (map cdr checks)
                               ;; futures mode runs in the pool's threads: no member usage
                               (if usage (list (allocation-note usage mode)) '())))))

  (lift-places (nas ft)))
