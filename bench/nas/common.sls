#!chezscheme
;;; What every NAS benchmark shares: its result, the timer, verification
;;; against the official values, the modes, and the SPMD runner of the
;;; threads mode.
;;;
;;; The contract of a benchmark library (nas BENCH), file bench/nas/BENCH.sls:
;;; it exports (BENCH-run class mode np) -> nas-result, where class is one of
;;; the symbols S W A (B C where supported), mode one of nas-modes, np the
;;; worker count (1 in serial mode).  It times only what the reference times
;;; (the benchmark proper, not the set-up), checks the result against the
;;; NPB 3.4 verification values, and raises only for bad arguments; a
;;; result that does not verify is a nas-result with verified? #f.
(library (nas common)
  (export make-nas-result nas-result? nas-result-bench nas-result-class
          nas-result-mode nas-result-np nas-result-seconds nas-result-mops
          nas-result-verified? nas-result-notes nas-result-configuration
          nas-modes check-nas-arguments nas-mpi-members
          nas-seconds relative-error within-epsilon?
          threads-spmd)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (only (spindle fork-join) fork-join-members)
          (only (spindle mpi) rmpi-comm? rmpi-cnt)
          (only (spindle) thread thread-wait make-parallel-thread-pool
                parallel-thread-pool-close make-semaphore semaphore-post
                semaphore-wait))

  ;; notes: a list of strings, one per verified quantity (what was computed,
  ;; the reference, the error), printed under the result.
  (define-record-type nas-result
    (fields bench class mode np seconds mops verified? notes)
    (sealed #t))

  ;; (bench class mode np): which run r reports on.
  (define (nas-result-configuration r)
    (list (nas-result-bench r) (nas-result-class r) (nas-result-mode r) (nas-result-np r)))

  ;; serial: the kernel with no spindle machinery.  places: fork-join over
  ;; shared vectors.  threads: parallel threads of one pool over the same
  ;; arrays.  futures: futures over the same arrays, where natural.  mpi:
  ;; the MPI decomposition (message passing only, over fork-join's CG
  ;; operations), one member per rank of a job started by mpirun.
  (define nas-modes '(serial places threads futures mpi))

  ;; Raises an &assertion naming who for a class not in classes, a mode not
  ;; in modes, or np not an exact positive integer (np must be 1 in serial).
  (define (check-nas-arguments who class classes mode modes np)
    (unless (memq class classes)
      (assertion-violation who (format "expected a class among ~s" classes) class))
    (unless (memq mode modes)
      (assertion-violation who (format "expected a mode among ~s" modes) mode))
    (unless (and (fixnum? np) (fx> np 0))
      (assertion-violation who "expected an exact positive worker count" np))
    (when (and (eq? mode 'serial) (not (fx= np 1)))
      (assertion-violation who "serial mode runs one worker" np)))

  ;; The members of an mpi-mode run: the world communicator, whose size
  ;; must be np.  Raises an &assertion naming who outside an MPI rank.
  (define (nas-mpi-members who np)
    (let ([m (fork-join-members #f)])
      (unless (rmpi-comm? m)
        (assertion-violation who "mode mpi runs in the ranks of `spindle mpirun` (spindle bench nas --mode mpi)" 'mpi))
      (unless (fx= (rmpi-cnt m) np)
        (assertion-violation who (format "mode mpi: ~a ranks, not ~a" (rmpi-cnt m) np) np))
      m))

  ;; Calls thunk; returns its value and the elapsed wall-clock seconds.
  (define (nas-seconds thunk)
    (let* ([t0 (current-time 'time-monotonic)]
           [v (thunk)]
           [d (time-difference (current-time 'time-monotonic) t0)])
      (values v (+ (time-second d) (/ (time-nanosecond d) 1e9)))))

  (define (relative-error computed reference)
    (if (= reference 0)
        (abs computed)
        (abs (/ (- computed reference) reference))))

  (define (within-epsilon? computed reference epsilon)
    (<= (relative-error computed reference) epsilon))

  ;; Runs (proc id barrier) for id = 0 .. np-1, each in a parallel thread of
  ;; a pool of np workers; barrier is a procedure of no arguments that
  ;; returns once all np members have called it (the k-th calls match).
  ;; Returns the vector of the members' values.  Two semaphores alternate
  ;; between phases, so a member already in phase k+1 cannot take a release
  ;; meant for a member still leaving phase k.
  (define (threads-spmd np proc)
    (let* ([pool (make-parallel-thread-pool np)]
           [lock (make-semaphore 1)]
           [release (vector (make-semaphore 0) (make-semaphore 0))]
           [arrived 0]
           [phase 0])
      (define (barrier)
        (semaphore-wait lock)
        (let ([p phase])
          (set! arrived (fx+ arrived 1))
          (cond
            [(fx= arrived np)
             (set! arrived 0)
             (set! phase (fx- 1 phase))
             (semaphore-post lock)
             (do ([i 1 (fx+ i 1)]) ((fx= i np)) (semaphore-post (vector-ref release p)))]
            [else
             (semaphore-post lock)
             (semaphore-wait (vector-ref release p))])))
      (let ([threads (let loop ([id 0] [acc '()])
                       (if (fx= id np)
                           (reverse acc)
                           (loop (fx+ id 1)
                                 (cons (thread (lambda () (proc id barrier)) pool 'results) acc))))])
        (parallel-thread-pool-close pool)
        (list->vector (map thread-wait threads))))))
