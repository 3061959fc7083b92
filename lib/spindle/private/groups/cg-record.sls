#!chezscheme
;;; The communication group (CG) of a fork-join member: its id and np, and
;;; what its operations go through, over places (channels, the barrier,
;;; member 0's view of the group: (spindle fork-join)) or over MPI ranks
;;; (private/groups/cg-ranks.sls).
(library (spindle private groups cg-record)
  (export make-cg CG? cg-id cg-np cg-hub cg-p2p cg-coll cg-queue cg-queue-set!
          cg-barriers cg-barriers-set! cg-bar cg-group cg-ranks check-cg)
  (import (chezscheme))

  ;; group: member 0's view of the others (fork-join's group record), #f
  ;; in members >= 1.
  ;; ranks: a ranks record (cg-ranks) when the members are MPI ranks; then
  ;; hub, p2p, coll, bar and group are #f.
  (define-record-type (cg make-cg CG?)
    (fields (immutable id cg-id) (immutable np cg-np)
            (immutable hub cg-hub)         ; member >= 1: its channel to member 0
            (immutable p2p cg-p2p)         ; vector by member: (out . in) channels, #f for me
            (immutable coll cg-coll)       ; the same, for collectives
            (mutable queue cg-queue cg-queue-set!) ; CGsends to myself, oldest first
            (mutable barriers cg-barriers cg-barriers-set!)
            (immutable bar cg-bar)         ; its cg-barrier, or #f (np = 1)
            (immutable group cg-group)
            (immutable ranks cg-ranks))
    (sealed #t) (opaque #t))

  (define (check-cg who v)
    (unless (CG? v) (assertion-violation who "expected a communication group (CG?)" v))))
