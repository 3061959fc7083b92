#!chezscheme
;;; Member 0's supervisor of a fork-join group over places, and the
;;; members' side: (spindle fork-join)'s groups, in the Places paper's
;;; SPMD layer (Tew et al., DLS 2011).  fork-join checks the arguments and
;;; runs the CG operations; it calls run-fork-join (which also runs a
;;; group over MPI ranks, through cg-backend), member-main in each member's
;;; place, barrier-0 and barrier-member for CGBarrier, and channel-get for
;;; a member's next message.
;;;
;;; Wiring, made by member 0:
;;;   hub    each place's initial channel.  Member 0 sends the setup message
;;;          and result acknowledgements on it; the member sends its result
;;;          or its failure (or, entering a barrier member 0 has returned
;;;          without, an arrival).
;;;   p2p    a place channel from every member to every other, for CGsend
;;;          and CGrecv (a member's sends to itself wait in its own queue).
;;;   coll   another such set, for the collectives (broadcast, reductions,
;;;          all-to-all, pipeline).  Every member makes the same collective
;;;          calls in the same order, so each channel's FIFO order pairs a
;;;          collective's messages with their call; CGsend traffic, which
;;;          follows no such order, never shares a channel with them.
;;;   barrier  a shared fxvector and wake channels: the dissemination
;;;          barrier of private/groups/cg-barrier.sls, log2 np rounds of
;;;          point-to-point signals (nothing goes through member 0).
;;; Member 0 blocks only in sync over its hub channels and the places'
;;; place-dead-evts (in a barrier, its wake channel too), so a member that
;;; raises, is killed or exits early is seen at once: the group is aborted
;;; (surviving places killed), the CG operation member 0 is blocked in
;;; raises "group aborted", and fork-join raises member 0's condition, or an
;;; &error whose irritants are the failed ids.  Members >= 1 blocked in a
;;; barrier are released by being killed.  The barrier counts in shared
;;; memory tell member 0 which barrier each member has entered, so a member
;;; that returned before a barrier the others wait in fails the group.  A
;;; member waits for an acknowledgement of its result before it ends (see
;;; send-acks!), so nothing it sent is lost in its output queue, and a
;;; place that ended without one has failed.
(library (spindle private groups supervisor)
  (export run-fork-join member-main barrier-0 barrier-member channel-get)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (only (spindle private impl place) place-channel-put place-channel-get place-channel
                place-kill place-dead-evt place-wait place-message-allowed? make-shared-fxvector)
          (only (spindle private core sync) sync wrap-evt)
          (spindle private groups cg-barrier)
          (spindle private groups cg-record)
          (only (spindle private groups cg-backend) mpi-comm? mpi-comm-id mpi-comm-count make-ranks ranks-gather))

  ;; ---------------------------------------------------------------- groups
  ;; Member 0's state.  status: running, done (result received) or failed.
  (define-record-type group
    (fields places                     ; vector, element 0 unused
            chan-evts dead-evts        ; vectors of evts, result (m . message)
            status results             ; vectors
            acked                      ; vector: result acknowledged
            (mutable failed)           ; failed ids, in the order found
            (mutable stopped?))   ; aborted: places killed
    (sealed #t))

  ;; "group aborted", raised in member 0 by CG operations; tagged with its group
  ;; so that fork-join can tell it from member 0's own failures.
  (define-condition-type &group-aborted &error make-group-aborted group-aborted? (group aborted-group))

  (define (raise-aborted who g)
    (raise (condition (make-group-aborted g) (make-who-condition who)
                      (make-message-condition "group aborted")
                      (make-irritants-condition (list-sort < (group-failed g))))))

  (define (peer-ended? c)
    (and (error? c) (message-condition? c) (equal? (condition-message c) "peer place ended")))

  ;; ---------------------------------------------------------------- member 0
  (define (check-args args)
    (for-each
      (lambda (a)
        (unless (place-message-allowed? a)
          (assertion-violation 'fork-join "expected place-message-allowed? arguments" a)))
      args))

  ;; spawn: a thunk that starts one place running member-main.
  (define (run-fork-join np args proc spawn)
    (check-args args)
    (cond
      [(mpi-comm? np) (run-ranks np args proc)]
      [(= np 1) (vector (apply proc (make-cg 0 1 #f (vector #f) (vector #f) '() 0 #f #f #f) args))]
      [else
        (let ([g (start-group np spawn)])
          (dynamic-wind
            void
            (lambda ()
              (let ([c0 (wire! g np args)])
                (let ([v0 (guard (c [#t (abort! g)
                                        (raise (if (and (group-aborted? c) (eq? (aborted-group c) g))
                                                   (failure g)
                                                   c))])
                            (apply proc c0 args))])
                  (join! g c0 v0))))
            ;; leaving in any other way (an escape) ends the places too
            (lambda () (unless (or (group-stopped? g) (all-ended? g)) (abort! g)))))]))

  ;; Every rank of comm runs proc as the member of its rank id; all get
  ;; the vector of the members' values.
  (define (run-ranks comm args proc)
    (let* ([r (make-ranks comm)]
           [c (make-cg (mpi-comm-id comm) (mpi-comm-count comm) #f #f #f '() 0 #f #f r)]
           [v (apply proc c args)])
      (unless (place-message-allowed? v)
        (assertion-violation 'fork-join "member result is not place-message-allowed?" (mpi-comm-id comm) v))
      (ranks-gather r v)))

  (define (start-group np spawn)
    (let ([places (make-vector np #f)])
      (guard (c [#t (do ([m 1 (fx+ m 1)]) ((fx= m np)) (let ([p (vector-ref places m)]) (when p (place-kill p))))
                    (raise c)])
        (do ([m 1 (fx+ m 1)]) ((fx= m np)) (vector-set! places m (spawn))))
      (let ([chan-evts (make-vector np #f)] [dead-evts (make-vector np #f)])
        (do ([m 1 (fx+ m 1)]) ((fx= m np))
          (let ([p (vector-ref places m)])
            (vector-set! chan-evts m (wrap-evt p (lambda (msg) (cons m msg))))
            (vector-set! dead-evts m (wrap-evt (place-dead-evt p) (lambda (e) (cons m 'dead))))))
        (make-group places chan-evts dead-evts (make-vector np 'running) (make-vector np #f)
                    (make-vector np #f) '() #f))))

  (define (new-channel) (call-with-values place-channel cons))

  ;; np by np: element [m][k] is member m's (out . in) pair with member k,
  ;; #f for m = k.
  (define (channel-matrix np)
    (let ([mx (make-vector np)])
      (do ([m 0 (fx+ m 1)]) ((fx= m np)) (vector-set! mx m (make-vector np #f)))
      (do ([m 0 (fx+ m 1)]) ((fx= m np) mx)
        (do ([k (fx+ m 1) (fx+ k 1)]) ((fx= k np))
          (let ([m->k (new-channel)] [k->m (new-channel)])
            (vector-set! (vector-ref mx m) k (cons (car m->k) (cdr k->m)))
            (vector-set! (vector-ref mx k) m (cons (car k->m) (cdr m->k))))))))

  ;; Sends every place its setup message; returns member 0's CG.
  (define (wire! g np args)
    (let ([p2p (channel-matrix np)] [coll (channel-matrix np)]
          [words (make-shared-fxvector (cg-barrier-words np) 0)]
          [rounds (cg-barrier-rounds np)])
      ;; wake-in[m][r] is read by m; its other end is wake-out[s][r] of
      ;; m's signaller s in round r
      (let ([wake-in (make-vector np)] [wake-out (make-vector np)])
        (do ([m 0 (fx+ m 1)]) ((fx= m np))
          (vector-set! wake-in m (make-vector rounds))
          (vector-set! wake-out m (make-vector rounds)))
        (do ([m 0 (fx+ m 1)]) ((fx= m np))
          (do ([r 0 (fx+ r 1)]) ((fx= r rounds))
            (let ([ch (new-channel)] [s (fxmodulo (fx- m (fxsll 1 r)) np)])
              (vector-set! (vector-ref wake-in m) r (car ch))
              (vector-set! (vector-ref wake-out s) r (cdr ch)))))
        (do ([m 1 (fx+ m 1)]) ((fx= m np))
          (place-channel-put (vector-ref (group-places g) m)
                             (vector 'setup m np args (vector-ref p2p m) (vector-ref coll m)
                                     words (vector-ref wake-in m) (vector-ref wake-out m))))
        (make-cg 0 np #f (vector-ref p2p 0) (vector-ref coll 0) '() 0
                 (make-cg-barrier words 0 np (vector-ref wake-in 0) (vector-ref wake-out 0) place-channel-put)
                 g #f))))

  (define (member-ids g) (cdr (iota (vector-length (group-places g)))))

  (define (running? g m) (eq? (vector-ref (group-status g) m) 'running))

  (define (fail! g m)
    (when (running? g m) (vector-set! (group-status g) m 'failed))
    (unless (memv m (group-failed g))
      (group-failed-set! g (cons m (group-failed g)))))

  ;; Waits for one report from a running member, or one of the extra evts
  ;; (whose results are (-1 . message), ignored), and records it.
  (define (step! g extra)
    (let* ([ids (filter (lambda (m) (running? g m)) (member-ids g))]
           [ev (guard (c [(peer-ended? c) #f])
                 (apply sync (append extra
                                     (map (lambda (m) (vector-ref (group-chan-evts g) m)) ids)
                                     (map (lambda (m) (vector-ref (group-dead-evts g) m)) ids))))])
      (if ev
          (record! g (car ev) (cdr ev))
          ;; a member's channel closed before its place-dead-evt was seen:
          ;; that place has ended, so one of these is (or will be) ready
          (let ([ev (apply sync (map (lambda (m) (vector-ref (group-dead-evts g) m)) ids))])
            (record! g (car ev) 'dead)))))

  (define (record! g m msg)
    (cond
      [(fx= m -1) (void)]
      [(eq? msg 'dead) (when (running? g m) (fail! g m))]
      [(and (vector? msg) (fx= (vector-length msg) 2))
       (case (vector-ref msg 0)
         [(arrive) (void)]              ; only wakes member 0: the count is in shared memory
         [(result)
          (vector-set! (group-results g) m (vector-ref msg 1))
          (vector-set! (group-status g) m 'done)
          (send-acks! g)]
         [(failed) (fail! g m)]
         [else (fail! g m)])]
      [else (fail! g m)]))

  ;; A place drops what it has queued on its channels when it ends, so a
  ;; member may end only when what it sent can no longer matter: member 0
  ;; has its result (hence every earlier hub message), and so has every
  ;; other member (none reads anything more from it).
  (define (send-acks! g)
    (when (for-all (lambda (m) (eq? (vector-ref (group-status g) m) 'done)) (member-ids g))
      (for-each (lambda (m)
                  (unless (vector-ref (group-acked g) m)
                    (vector-set! (group-acked g) m #t)
                    (place-channel-put (vector-ref (group-places g) m) 'ack)))
                (member-ids g))))

  ;; Kills the places still alive; the group stays aborted.
  (define (abort! g)
    (group-stopped?-set! g #t)
    (for-each (lambda (m) (place-kill (vector-ref (group-places g) m))) (member-ids g)))

  (define (all-ended? g)
    (for-all (lambda (m) (not (running? g m))) (member-ids g)))

  (define (check-group! g who)
    (cond
      [(pair? (group-failed g)) (unless (group-stopped? g) (abort! g)) (raise-aborted who g)]
      [(group-stopped? g) (raise-aborted who g)]))

  (define (failure g)
    (let ([ids (list-sort < (group-failed g))])
      (condition (make-error) (make-who-condition 'fork-join)
                 (make-message-condition
                   (if (and (pair? ids) (null? (cdr ids))) "group aborted: member failed" "group aborted: members failed"))
                 (make-irritants-condition ids))))

  (define (barrier-0 c who)
    (let ([g (cg-group c)] [b (cg-bar c)] [k (fx+ (cg-barriers c) 1)])
      (define (check!)
        ;; a member that ended before entering barrier k never will
        (for-each (lambda (m)
                    (when (and (not (running? g m)) (fx< (cg-barrier-count b m) k))
                      (fail! g m)))
                  (member-ids g))
        (check-group! g who))
      (check-group! g who)
      (cg-barriers-set! c k)
      (cg-barrier-enter! b k)
      ;; the members' states are looked at only when member 0 is about to
      ;; block, so a barrier costs member 0 no work per member
      (cg-barrier-wait! b k
        (lambda (ch ready?)
          ;; if ch's writer has ended, step! watches the places' deaths
          (let ([wake (list (wrap-evt ch (lambda (msg) (cons -1 msg))))])
            (let loop ()
              (check!)
              (unless (ready?)
                (step! g wake)
                (loop))))))))

  ;; Member 0 returned v0: collect the others' results, then their exits.
  (define (join! g c0 v0)
    (vector-set! (group-results g) 0 v0)
    (cg-barrier-finish! (cg-bar c0) (cg-barriers c0))
    (let loop ()
      ;; a member waiting in a barrier member 0 never reached cannot finish
      (for-each (lambda (m)
                  (when (and (running? g m) (fx> (cg-barrier-count (cg-bar c0) m) (cg-barriers c0)))
                    (fail! g m)))
                (member-ids g))
      (when (pair? (group-failed g)) (abort! g) (raise (failure g)))
      (unless (all-ended? g) (step! g '()) (loop)))
    (for-each (lambda (m) (place-wait (vector-ref (group-places g) m))) (member-ids g))
    (group-results g))

  ;; ---------------------------------------------------------------- members >= 1
  ;; The start procedure of a member's place: ep is its channel to member 0.
  (define (member-main ep proc)
    (let ([setup (place-channel-get ep)])
      (let ([id (vector-ref setup 1)] [np (vector-ref setup 2)])
        (guard (e [#t (member-failed ep id np e)])
          (let ([v (apply proc (make-cg id np ep (vector-ref setup 4) (vector-ref setup 5) '() 0
                                        (make-cg-barrier (vector-ref setup 6) id np (vector-ref setup 7)
                                                         (vector-ref setup 8) place-channel-put)
                                        #f #f)
                          (vector-ref setup 3))])
            (unless (place-message-allowed? v)
              (assertion-violation 'fork-join "member result is not place-message-allowed?" id v))
            (place-channel-put ep (vector 'result v))))
        ;; ending before member 0 has the result could lose it
        (place-channel-get ep)
        (void))))

  (define (member-failed ep id np e)
    (let ([err (console-error-port)])
      (fprintf err "fork-join member ~a of ~a: " id np)
      (if (condition? e) (display-condition e err) (fprintf err "non-condition raised: ~s" e))
      (newline err)
      (flush-output-port err))
    (guard (e2 [#t (void)]) (place-channel-put ep (vector 'failed id)))
    (exit 1))

  ;; Blocked in a barrier, a member is released by the group's end: member
  ;; 0 kills it.
  (define (barrier-member c who)
    (let ([k (fx+ (cg-barriers c) 1)] [b (cg-bar c)] [hub (cg-hub c)])
      (define (wait-for-abort) (error who "group aborted" (place-channel-get hub)))
      (cg-barriers-set! c k)
      (when (cg-barrier-enter! b k)
        ;; member 0 has returned without this barrier: wake it to see that
        (place-channel-put hub (vector 'arrive k))
        (wait-for-abort))
      (cg-barrier-wait! b k
        (lambda (ch ready?)
          (let loop ()
            (unless (guard (c [(peer-ended? c) #f]) (place-channel-get ch) #t)
              ;; the signaller ended: it signalled (ready?) or failed
              (unless (ready?) (wait-for-abort)))
            (unless (ready?) (loop)))))))

  ;; ---------------------------------------------------------------- messages
  ;; The next message from member src on channels (p2p or coll).  Member 0
  ;; watches the group while it waits (a failed member aborts it); another
  ;; member whose peer has ended waits for member 0 to end it.
  (define (channel-get c who channels src)
    (let ([ch (cdr (vector-ref channels src))] [g (cg-group c)])
      (if g
          (let loop ()
            (check-group! g who)
            (let ([got #f])
              (step! g (list (wrap-evt ch (lambda (m) (set! got (list m)) (cons -1 m)))))
              (if got (car got) (loop))))
          (guard (e [(peer-ended? e) (error who "group aborted" (place-channel-get (cg-hub c)))])
            (place-channel-get ch))))))
