#!chezscheme
;;; MPI ranks, after Racket's rmpi: point-to-point messages, the receive
;;; evt, in-place byte messages, barrier, broadcast, reductions, allgather,
;;; all-to-all and communicator splits.  The manual: doc/reference.md,
;;; "(spindle mpi)".
;;;
;;; Under private/mpi/: world initialises MPI and ends the rank; progress,
;;; the engine, runs every operation as a non-blocking MPI request
;;; completed by a progress green thread, so a waiting thread parks and the
;;; rank's other threads run; point-to-point sends and receives messages,
;;; bytes in-place byte messages; collectives and reduce move typed data
;;; (shared vectors in place, fixnums, flonums, bytevectors, fxvectors)
;;; without serialisation and any other place message in spindle's
;;; place-message encoding (data).  This library also hands fork-join its
;;; groups over ranks (private/groups/cg-backend).
(library (spindle mpi)
  (export rmpi-world rmpi-comm? rmpi-available? rmpi-id rmpi-cnt
          rmpi-send rmpi-recv rmpi-recv-evt rmpi-send-bytes rmpi-recv-bytes! rmpi-recv-bytes!-evt rmpi-barrier rmpi-broadcast
          rmpi-reduce rmpi-allreduce rmpi-allgather rmpi-alltoall rmpi-alltoallv
          rmpi-comm-split rmpi-partition rmpi-finish)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (only (spindle private core sim-hooks) check-deterministic)
          (rename (spindle private mpi world) (rmpi-world world) (rmpi-finish finish))
          (only (spindle private mpi progress) set-progress-spawner! wake-after-finish!)
          (spindle private mpi point-to-point)
          (spindle private mpi collectives)
          (spindle private mpi reduce)
          (spindle private mpi bytes)
          (spindle private groups cg-ranks)
          (only (spindle private groups cg-backend) set-mpi-groups!)
          (only (spindle thread) thread thread-dead? current-thread-pool)
          (only (spindle custodian) make-custodian current-custodian)
          (only (spindle blocking) call-blocking)
          (only (spindle parameter) parameterize))

  ;; The engine's progress thread is a spindle thread; every program calls
  ;; rmpi-world first, which invokes this library and so installs it.  It
  ;; serves every thread of the rank, so it belongs to a custodian of its
  ;; own (made as this library is invoked), not to the custodian of the
  ;; thread whose wait starts it: shutting that one down (as a task scope
  ;; does as it ends) would kill it under the other threads' waits.
  (define progress-custodian (make-custodian))
  (define installed
    (set-progress-spawner!
      (lambda (loop) (parameterize ([current-custodian progress-custodian]) (thread loop)))
      thread-dead?))
  ;; The helper thread of a collective of several MPI operations, on the
  ;; caller's pool (its OS thread for a parallel thread), of that custodian;
  ;; and call-blocking for MPI_Comm_split.
  (define collective-spawner
    (set-collective-spawner!
      (lambda (thunk) (parameterize ([current-custodian progress-custodian]) (thread thunk (current-thread-pool))))
      call-blocking))
  ;; fork-join's groups over ranks (private/groups/cg-backend.sls): fork-join
  ;; loads no MPI library, so this one hands it the operations.
  (define groups-registered
    (set-mpi-groups! rmpi-comm? (lambda () (rmpi-world)) rmpi-id rmpi-cnt rmpi-available?
                     make-ranks ranks-send! ranks-recv ranks-barrier ranks-broadcast ranks-allreduce
                     ranks-alltoall ranks-alltoallv ranks-pipeline ranks-gather))
  (define (rmpi-world) (check-deterministic 'rmpi-world) (world))
  ;; MPI_Finalize, then the parked receives learn it.
  (define (rmpi-finish comm) (finish comm) (wake-after-finish!)))
