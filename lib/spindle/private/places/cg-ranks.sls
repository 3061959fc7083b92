#!chezscheme
;;; The communication-group operations of fork-join over MPI ranks: a group
;;; whose members are the ranks of an rmpi communicator (member id = rank).
;;;
;;; Sends are buffered, as a place channel's are: the value is encoded at
;;; once (so the caller may change it afterwards) and handed to a green
;;; thread that makes the MPI send and may block in it (a large message
;;; waits for its receiver; a member that sends to everyone before
;;; receiving, as an all-to-all does, must not).  Each destination's sender
;;; threads form a chain, every one waiting for its predecessor before it
;;; sends, so messages to one member arrive in the order sent.  A send that
;;; failed is raised by the next flush (rank-flush!, at the group's end).
;;;
;;; Each kind of traffic has its own tag (above any tag a program is likely
;;; to use with rmpi directly, below rmpi's own), so a pipeline value is
;;; never taken for a point-to-point message.  The collectives are rmpi's.
(library (spindle private places cg-ranks)
  (export rank-process? make-ranks ranks? ranks-comm
          ranks-send! ranks-recv ranks-barrier ranks-broadcast ranks-allreduce
          ranks-alltoall ranks-pipeline ranks-flush! ranks-gather)
  (import (chezscheme)
          (spindle mpi)
          (only (spindle private places mpi-data) pack unpack)
          (only (spindle private os processes) own-pid)
          (only (spindle thread) thread thread-wait))

  (define tag-p2p 32700)
  (define tag-pipeline 32701)

  ;; #t in a process started by mpirun as a rank (not in a place of one:
  ;; (spindle mpi) marks the rank's environment with its pid when it loads).
  (define (rank-process?)
    (and (getenv "OMPI_COMM_WORLD_RANK")
         (rmpi-available?)               ; (spindle mpi) is loaded, so the mark is made
         (let ([owner (getenv "SPINDLE_MPI_RANK_PID")])
           (and owner (string=? owner (number->string (own-pid)))))))

  ;; last: per destination, its newest sender thread, or #f.
  (define-record-type ranks
    (fields comm last)
    (protocol (lambda (new) (lambda (comm) (new comm (make-vector (rmpi-cnt comm) #f)))))
    (sealed #t))

  (define (send-tagged! r dest v tag)
    (let ([bv (pack 'CGsend v)] [prev (vector-ref (ranks-last r) dest)] [comm (ranks-comm r)])
      (vector-set! (ranks-last r) dest
        (thread (lambda ()
                  (or (and prev (thread-wait prev))
                      (guard (c [#t c]) (rmpi-send comm dest bv tag) #f)))
                #f 'results))))

  (define (recv-tagged r src tag) (unpack (rmpi-recv (ranks-comm r) src tag)))

  (define (ranks-send! r dest v) (send-tagged! r dest v tag-p2p))
  (define (ranks-recv r src) (recv-tagged r src tag-p2p))

  ;; Waits until every send has left; raises the first failure.
  (define (ranks-flush! r)
    (let ([last (ranks-last r)])
      (do ([d 0 (fx+ d 1)]) ((fx= d (vector-length last)))
        (let ([t (vector-ref last d)])
          (when t
            (vector-set! last d #f)
            (let ([failure (thread-wait t)])
              (when failure (raise failure))))))))

  (define (ranks-barrier r) (rmpi-barrier (ranks-comm r)))

  (define (ranks-broadcast r root v) (rmpi-broadcast (ranks-comm r) root v))

  (define (ranks-allreduce r op v) (rmpi-allreduce (ranks-comm r) op v))

  ;; vs: one value per member; -> the values sent to me, by source.
  (define (ranks-alltoall r vs) (rmpi-alltoall (ranks-comm r) vs))

  ;; The pipeline step: the previous member's value (or init at member 0),
  ;; through proc, to the next member.
  (define (ranks-pipeline r init proc)
    (let* ([comm (ranks-comm r)] [me (rmpi-id comm)]
           [v (proc (if (fx= me 0) init (recv-tagged r (fx- me 1) tag-pipeline)))])
      (when (fx< me (fx- (rmpi-cnt comm) 1)) (send-tagged! r (fx+ me 1) v tag-pipeline))
      v))

  ;; Every member's value, by id, at every member.
  (define (ranks-gather r v) (rmpi-allgather (ranks-comm r) v)))
