#!chezscheme
;;; fork-join's communication-group operations over MPI ranks: the members
;;; of the group are the ranks of an rmpi communicator, and each operation
;;; is one of (spindle mpi) (whose progress thread (spindle mpi) starts).
;;; (spindle mpi) registers them as it loads (cg-backend's set-mpi-groups!);
;;; (spindle fork-join) checks the arguments and chooses between these and
;;; its operations over place channels.
;;;
;;; A group has a communicator of its own, a duplicate of the one
;;; fork-join was given (a split of one color, in rank order), freed when
;;; the group ends (ranks-gather): no message of the program's, nor one
;;; an earlier group left unreceived, matches the group's.
;;;
;;; rmpi-send copies its message and returns at once, as a place channel's
;;; put does, and MPI keeps the order of one sender's messages to one
;;; receiver with one tag.  Each kind of traffic has its own tag, so a
;;; pipeline value is never taken for a point-to-point message.  The
;;; collectives are rmpi's; typed data (bytevectors, fxvectors, flonums,
;;; shared vectors) goes through their typed paths, shared vectors in place.
(library (spindle private groups cg-ranks)
  (export make-ranks ranks?
          ranks-send! ranks-recv ranks-barrier ranks-broadcast ranks-allreduce
          ranks-alltoall ranks-alltoallv ranks-pipeline ranks-gather)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (only (spindle private mpi world) rmpi-id rmpi-cnt)
          (only (spindle private mpi point-to-point) rmpi-send rmpi-recv comm-free!)
          (only (spindle private mpi collectives) rmpi-barrier rmpi-broadcast
                rmpi-allgather rmpi-alltoall rmpi-alltoallv rmpi-comm-split)
          (only (spindle private mpi reduce) rmpi-allreduce))

  (define tag-p2p 0)
  (define tag-pipeline 1)

  (define-record-type (ranks new-ranks ranks?) (fields comm) (sealed #t))

  ;; Collective: every rank of comm calls it.
  (define (make-ranks comm) (new-ranks (rmpi-comm-split comm 0 (rmpi-id comm))))

  (define (ranks-send! r dest v) (rmpi-send (ranks-comm r) dest v tag-p2p))

  ;; rmpi-recv's own wait: it looks for the message for 30 us, then parks
  ;; (the engine's progress thread completes it).  Polling longer here
  ;; before parking (sched_yield between looks, for up to 4 ms; or a look
  ;; every 50 us, sleeping between, for up to 20 ms) made NAS CG no
  ;; faster on the shared 2-core machine, and slower at load 5.
  (define (ranks-recv r src) (rmpi-recv (ranks-comm r) src tag-p2p))

  (define (ranks-barrier r) (rmpi-barrier (ranks-comm r)))

  (define (ranks-broadcast r root v) (rmpi-broadcast (ranks-comm r) root v))

  (define (ranks-allreduce r op v) (rmpi-allreduce (ranks-comm r) op v))

  ;; vs: one value per member; -> the values sent to me, by source.
  (define (ranks-alltoall r vs) (rmpi-alltoall (ranks-comm r) vs))

  ;; Typed blocks, MPI_Ialltoallv (in place for shared vectors).
  (define (ranks-alltoallv r out sc sd in rc rd)
    (rmpi-alltoallv (ranks-comm r) out sc sd in rc rd))

  ;; The pipeline step: the previous member's value (or init at member 0),
  ;; through proc, to the next member.
  (define (ranks-pipeline r init proc)
    (let* ([comm (ranks-comm r)] [me (rmpi-id comm)]
           [v (proc (if (fx= me 0) init (rmpi-recv comm (fx- me 1) tag-pipeline)))])
      (when (fx< me (fx- (rmpi-cnt comm) 1)) (rmpi-send comm (fx+ me 1) v tag-pipeline))
      v))

  ;; Every member's value, by id, at every member: the group's last
  ;; operation, which frees its communicator.
  (define (ranks-gather r v)
    (let ([all (rmpi-allgather (ranks-comm r) v)])
      (comm-free! (ranks-comm r))
      all)))
