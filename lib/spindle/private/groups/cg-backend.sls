#!chezscheme
;;; The slot through which fork-join reaches its groups over MPI ranks,
;;; filled by (spindle mpi) as it loads (set-mpi-groups!), so that
;;; (spindle fork-join), and (spindle) with it, loads no MPI library.  The
;;; operations are cg-ranks's; fork-join calls them through the names below.
;;;
;;; A program that never imports (spindle mpi) has no rmpi communicator to
;;; give fork-join, so the slot stays empty unless it runs as an MPI rank:
;;; there fork-join-members (rank-process?) loads (spindle mpi) by name,
;;; which fills it.
(library (spindle private groups cg-backend)
  (export set-mpi-groups! rank-process?
          mpi-comm? mpi-world mpi-comm-id mpi-comm-count
          make-ranks ranks-send! ranks-recv ranks-barrier ranks-broadcast ranks-allreduce
          ranks-alltoall ranks-alltoallv ranks-pipeline ranks-gather)
  (import (chezscheme) (only (spindle private os processes) mark-mpi-rank! mpi-rank-process?))

  (define-record-type (mpi-groups make-mpi-groups mpi-groups?)
    (fields comm? world id count available?
            make send! recv barrier broadcast allreduce alltoall alltoallv pipeline gather)
    (sealed #t))

  (define ops #f)
  (define (set-mpi-groups! . procs) (set! ops (apply make-mpi-groups procs)))

  ;; Marks the rank's environment as private/mpi/world does (see mark-mpi-rank!):
  ;; a program that runs fork-join in a rank may load MPI only later.
  (define rank-marked (mark-mpi-rank!))

  ;; (spindle mpi), loaded by name: its invocation fills the slot.
  (define (load-mpi!)
    (unless ops (eval 'rmpi-world (environment '(spindle mpi))))
    ops)

  ;; #t in a process started by mpirun as a rank (not in a place of one).
  (define (rank-process?)
    (and (mpi-rank-process?) ((mpi-groups-available? (load-mpi!)))))

  (define (mpi-comm? x) (and ops ((mpi-groups-comm? ops) x)))
  (define (mpi-world) ((mpi-groups-world (load-mpi!))))
  (define (mpi-comm-id c) ((mpi-groups-id ops) c))
  (define (mpi-comm-count c) ((mpi-groups-count ops) c))
  (define (make-ranks comm) ((mpi-groups-make ops) comm))
  (define (ranks-send! r dest v) ((mpi-groups-send! ops) r dest v))
  (define (ranks-recv r src) ((mpi-groups-recv ops) r src))
  (define (ranks-barrier r) ((mpi-groups-barrier ops) r))
  (define (ranks-broadcast r root v) ((mpi-groups-broadcast ops) r root v))
  (define (ranks-allreduce r op v) ((mpi-groups-allreduce ops) r op v))
  (define (ranks-alltoall r vs) ((mpi-groups-alltoall ops) r vs))
  (define (ranks-alltoallv r out sc sd in rc rd) ((mpi-groups-alltoallv ops) r out sc sd in rc rd))
  (define (ranks-pipeline r init proc) ((mpi-groups-pipeline ops) r init proc))
  (define (ranks-gather r v) ((mpi-groups-gather ops) r v)))
