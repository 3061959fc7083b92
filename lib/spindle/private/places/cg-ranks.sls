#!chezscheme
;;; fork-join's communication-group operations over MPI ranks: the members
;;; of the group are the ranks of an rmpi communicator, and each operation
;;; is one of (spindle mpi).  (spindle fork-join) checks the arguments and
;;; chooses between these and its place channels.
;;;
;;; rmpi-send copies its message and returns at once, as a place channel's
;;; put does, and MPI keeps the order of one sender's messages to one
;;; receiver with one tag.  Each kind of traffic has its own tag (above any
;;; tag a program is likely to use with rmpi directly, below rmpi's own),
;;; so a pipeline value is never taken for a point-to-point message.  The
;;; collectives are rmpi's; typed data (bytevectors, fxvectors, flonums,
;;; shared vectors) goes through their typed paths, shared vectors in place.
(library (spindle private places cg-ranks)
  (export rank-process? make-ranks ranks? ranks-id ranks-cnt
          ranks-send! ranks-recv ranks-barrier ranks-broadcast ranks-allreduce
          ranks-alltoall ranks-alltoallv ranks-pipeline ranks-gather)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle mpi)
          (only (spindle private os processes) own-pid)
          (only (spindle private os threads) os-yield!)
          (only (spindle private core scheduler) yield!)
          (only (spindle event) sync sync/timeout wrap-evt))

  (define tag-p2p 32700)
  (define tag-pipeline 32701)

  ;; #t in a process started by mpirun as a rank (not in a place of one:
  ;; (spindle mpi) marks the rank's environment with its pid when it loads).
  (define (rank-process?)
    (and (getenv "OMPI_COMM_WORLD_RANK")
         (rmpi-available?)               ; (spindle mpi) is loaded, so the mark is made
         (let ([owner (getenv "SPINDLE_MPI_RANK_PID")])
           (and owner (string=? owner (number->string (own-pid)))))))

  (define-record-type ranks (fields comm) (sealed #t))

  (define (ranks-id r) (rmpi-id (ranks-comm r)))
  (define (ranks-cnt r) (rmpi-cnt (ranks-comm r)))

  (define (ranks-send! r dest v) (rmpi-send (ranks-comm r) dest v tag-p2p))

  ;; A member's exchanges come in lockstep (a row reduction, a dot
  ;; product): the partner's message is usually microseconds to a
  ;; millisecond away.  rmpi-recv looks for 30 us, then parks, and a parked
  ;; receive is completed by the engine's progress thread, which probes at
  ;; most once per 2 ms once it has waited 1 ms: on a loaded machine, where
  ;; the partner rank is often descheduled for a while, that adds up to 2 ms
  ;; to an exchange.  So a CGrecv first polls for up to recv-poll-ms,
  ;; giving the core away (sched_yield) between looks, so that a partner
  ;; waiting for this core runs at once; only then does it park.
  (define recv-poll-ms 4.0)

  (define (ranks-recv r src)
    (let ([e (rmpi-recv-evt (ranks-comm r) src tag-p2p)])
      (let ([end (+ (real-time-ms) recv-poll-ms)])
        (let loop ([k 0])
          (let ([got (sync/timeout 0 (wrap e))])
            (cond
              [got (car got)]
              [(fx= 0 (fxand k 15))
               ;; the clock and the rank's other green threads, now and then
               (if (> (real-time-ms) end) (car (sync (wrap e))) (begin (yield!) (loop (fx+ k 1))))]
              [else (os-yield!) (loop (fx+ k 1))]))))))

  ;; The value in a list, so that a received #f is told from a timeout.
  (define (wrap e) (wrap-evt e list))

  (define (real-time-ms)
    (let ([t (current-time 'time-monotonic)])
      (+ (* 1000. (time-second t)) (/ (time-nanosecond t) 1e6))))

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

  ;; Every member's value, by id, at every member.
  (define (ranks-gather r v) (rmpi-allgather (ranks-comm r) v)))
