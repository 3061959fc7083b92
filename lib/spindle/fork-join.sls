#!chezscheme
;;; Over 450 lines: member 0's supervisor drives places, a public library's, so it moves to private/groups/ once places have an internal tier.
;;; Fork-join and communication groups (CGs): the SPMD layer of the Places
;;; paper (Tew et al., DLS 2011; racketNAS).  The manual: doc/reference.md, "Fork-join".
;;;
;;; A group has np members with ids 0 .. np-1.  Member 0 is the caller of
;;; fork-join; members 1 .. np-1 are places started with the place form (so
;;; fork-join, like place, needs (lift-places (lib ...)) as the last form of
;;; the library that uses it).
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
;;;
;;; Over MPI: `np` may be an rmpi communicator, whose ranks are then the
;;; members (each rank calls fork-join; the body runs in the rank itself,
;;; and the operations go over MPI: private/groups/cg-ranks.sls, which
;;; (spindle mpi) registers as it loads: private/groups/cg-backend.sls; so
;;; this library loads no MPI library).  A rank that fails ends the whole
;;; job (spindle mpi's rule), which stands for "group aborted".
;;;
;;; In private/places/ beside: a member's CG record (cg-record), the typed
;;; blocks of CGalltoallv (cg-blocks), CGfor and CGfor/stride (cg-loops).
;;; The group over places stays here: places are (spindle place)'s, a
;;; public library, which the private layers do not import.
(library (spindle fork-join)
  (export fork-join lift-places CG? CG-id CG-np CGfor CGfor/stride CGBarrier
          CGpipeline CG-n0-only CGsend CGrecv CGbroadcast CGallreduce CGalltoall CGalltoallv
          fork-join-members fork-join-leader?
          (rename (CGBarrier CG-B) (CG-id CGid) (CG-np CGnp)))
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle place)
          (spindle private groups cg-barrier)
          (spindle private groups cg-record)
          (spindle private groups cg-blocks)
          (spindle private groups cg-loops)
          (spindle private groups cg-backend)
          (only (spindle private diagnostics trace) tracing? trace-now trace-span!)
          (only (spindle event) sync wrap-evt))

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

  (define (CG-id c) (check-cg 'CG-id c) (cg-id c))
  (define (CG-np c) (check-cg 'CG-np c) (cg-np c))

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
  (define (check-np np)
    (cond
      [(or (not np) (eqv? np 0)) 1]
      [(mpi-comm? np) np]
      [(and (integer? np) (exact? np) (> np 0)) np]
      [else (assertion-violation 'fork-join "expected an exact positive integer or #f" np)]))

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

  ;; n members: under mpirun (in a rank process), the world's ranks instead.
  (define (fork-join-members n)
    (if (rank-process?) (mpi-world) n))

  ;; #f in an MPI rank other than rank 0 (where a program that runs
  ;; fork-join over ranks should stay quiet), #t elsewhere.
  (define (fork-join-leader?)
    (or (not (rank-process?)) (fx= 0 (mpi-comm-id (mpi-world)))))

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

  ;; ---------------------------------------------------------------- operations
  (define (CGBarrier c)
    (check-cg 'CGBarrier c)
    (barrier c 'CGBarrier))

  (define (barrier c who)
    (cond
      [(fx= (cg-np c) 1) (void)]
      [tracing?
       (let ([t0 (trace-now)])
         (barrier/any c who)
         (trace-span! 'cg-barrier t0 (cg-id c) (cg-np c)))]
      [else (barrier/any c who)]))

  (define (barrier/any c who)
    (cond
      [(cg-ranks c) (ranks-barrier (cg-ranks c))]
      [(cg-group c) (barrier-0 c who)]
      [else (barrier-member c who)]))

  (define (cg-pipeline c init proc)
    (check-cg 'CGpipeline c)
    (let ([check (lambda (v)
                   (unless (place-message-allowed? v)
                     (assertion-violation 'CGpipeline "expected a place-message-allowed? value" v)))])
      (if (cg-ranks c)
          (ranks-pipeline (cg-ranks c) init (lambda (prev) (let ([v (proc prev)]) (check v) v)))
          (let* ([me (cg-id c)]
                 [v (proc (if (fx= me 0) init (channel-get c 'CGpipeline (cg-coll c) (fx- me 1))))])
            (when (fx< me (fx- (cg-np c) 1))
              (check v)
              (place-channel-put (car (vector-ref (cg-coll c) (fx+ me 1))) v))
            v))))

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
            (place-channel-get ch)))))

  (define (check-member who c m)
    (unless (and (fixnum? m) (fx<= 0 m) (fx< m (cg-np c)))
      (assertion-violation who (format "expected a member id in [0, ~a)" (cg-np c)) m)))

  (define (check-message who v)
    (unless (place-message-allowed? v)
      (assertion-violation who "expected a place-message-allowed? value" v)))

  ;; Sends v (a place message, copied now) to member dest; never blocks.
  (define (CGsend c dest v)
    (check-cg 'CGsend c) (check-member 'CGsend c dest) (check-message 'CGsend v)
    (cond
      [(cg-ranks c) (ranks-send! (cg-ranks c) dest v)]
      [(fx= dest (cg-id c))
       (cg-queue-set! c (append (cg-queue c) (list (place-message-copy v))))]
      [else (place-channel-put (car (vector-ref (cg-p2p c) dest)) v)]))

  ;; A copy made as a place message would be, so that a send to oneself
  ;; gives what a send to another member gives.
  (define (place-message-copy v)
    (let-values ([(out in) (place-channel)])
      (place-channel-put out v)
      (place-channel-get in)))

  ;; The next value member src sent me with CGsend.
  (define (CGrecv c src)
    (check-cg 'CGrecv c) (check-member 'CGrecv c src)
    (cond
      [(cg-ranks c) (ranks-recv (cg-ranks c) src)]
      [(fx= src (cg-id c))
       (let ([q (cg-queue c)])
         (when (null? q) (error 'CGrecv "nothing sent to oneself: the receive would never end" src))
         (cg-queue-set! c (cdr q))
         (car q))]
      [else (channel-get c 'CGrecv (cg-p2p c) src)]))

  (define (coll-put c dest v) (place-channel-put (car (vector-ref (cg-coll c) dest)) v))

  ;; root's v, at every member.
  (define (CGbroadcast c root v)
    (check-cg 'CGbroadcast c) (check-member 'CGbroadcast c root) (check-message 'CGbroadcast v)
    (cond
      [(cg-ranks c) (ranks-broadcast (cg-ranks c) root v)]
      [(fx= root (cg-id c))
       (do ([m 0 (fx+ m 1)]) ((fx= m (cg-np c)) v)
         (unless (fx= m root) (coll-put c m v)))]
      [else (channel-get c 'CGbroadcast (cg-coll c) root)]))

  ;; The members' vs combined with op, at every member, as rmpi-allreduce
  ;; does: with + * min max (or sum prod min max) a flonum, fixnum, vector
  ;; of flonums or fxvector is combined element-wise; any other op is
  ;; folded over the values in id order.
  (define (CGallreduce c op v)
    (check-cg 'CGallreduce c)
    (unless (or (procedure? op) (memq op '(sum prod min max)))
      (assertion-violation 'CGallreduce "expected a procedure or one of sum, prod, min, max" op))
    (if (cg-ranks c)
        (ranks-allreduce (cg-ranks c) op v)
        ;; an fxvector is no place message: it travels as a vector
        (let ([fx? (fxvector? v)])
          (let ([v (if fx? (list->vector (fxvector->list v)) v)])
            (check-message 'CGallreduce v)
            (let ([r (if (fx= (cg-id c) 0)
                         (let loop ([m 1] [acc v])
                           (if (fx= m (cg-np c))
                               (CGbroadcast c 0 acc)
                               (loop (fx+ m 1) (combine op acc (channel-get c 'CGallreduce (cg-coll c) m)))))
                         (begin (coll-put c 0 v) (CGbroadcast c 0 #f)))])
              (if fx? (list->fxvector (vector->list r)) r))))))

  (define (combine op a b)
    (let ([p (case op [(sum) +] [(prod) *] [(min) min] [(max) max] [else op])])
      (cond
        [(not (memq p (list + * min max))) (op a b)]
        [(and (vector? a) (vector? b) (fx= (vector-length a) (vector-length b)))
         (vector-map p a b)]
        [else (p a b)])))

  ;; vs: a vector of np values, element m for member m; -> the vector of
  ;; what each member sent me, by member.
  (define (CGalltoall c vs)
    (check-cg 'CGalltoall c)
    (unless (and (vector? vs) (fx= (vector-length vs) (cg-np c)))
      (assertion-violation 'CGalltoall (format "expected a vector of ~a values" (cg-np c)) vs))
    (vector-for-each (lambda (v) (check-message 'CGalltoall v)) vs)
    (if (cg-ranks c)
        (ranks-alltoall (cg-ranks c) vs)
        (let ([me (cg-id c)] [np (cg-np c)] [out (make-vector (cg-np c))])
          (do ([m 0 (fx+ m 1)]) ((fx= m np))
            (unless (fx= m me) (coll-put c m (vector-ref vs m))))
          (do ([m 0 (fx+ m 1)]) ((fx= m np) out)
            (vector-set! out m (if (fx= m me) (vector-ref vs me) (channel-get c 'CGalltoall (cg-coll c) m)))))))

  ;; Typed blocks: send-count[m] elements of out from send-displ[m] go to
  ;; member m; recv-count[m] elements from member m land in `in` at
  ;; recv-displ[m].  out and in: bytevectors, fxvectors or shared vectors,
  ;; of one element kind.  Over ranks, rmpi-alltoallv (shared vectors in
  ;; place); over places each block travels as a bytevector of its bytes.
  (define (CGalltoallv c out send-count send-displ in recv-count recv-displ)
    (define who 'CGalltoallv)
    (check-cg who c)
    (let* ([np (cg-np c)] [kind (block-kind who out)]
           [sc (index-vector who send-count np)] [sd (index-vector who send-displ np)]
           [rc (index-vector who recv-count np)] [rd (index-vector who recv-displ np)])
      (unless (eq? (block-kind who in) kind)
        (assertion-violation who "expected out and in of one element kind" out in))
      (check-blocks who out sc sd) (check-blocks who in rc rd)
      (if (cg-ranks c)
          (ranks-alltoallv (cg-ranks c) out sc sd in rc rd)
          (let ([me (cg-id c)] [size (if (eq? kind 'bytes) 1 8)])
            (define (take! m bv)
              (unless (fx= (bytevector-length bv) (fx* size (fxvector-ref rc m)))
                (error who (format "member ~a sent ~a elements; recv-count expects ~a"
                                   m (fxquotient (bytevector-length bv) size) (fxvector-ref rc m))))
              (bytes->block! bv in (fx* size (fxvector-ref rd m))))
            (do ([m 0 (fx+ m 1)]) ((fx= m np))
              (unless (fx= m me)
                (coll-put c m (block->bytes out (fx* size (fxvector-ref sd m)) (fx* size (fxvector-ref sc m))))))
            (take! me (block->bytes out (fx* size (fxvector-ref sd me)) (fx* size (fxvector-ref sc me))))
            (do ([m 0 (fx+ m 1)]) ((fx= m np) in)
              (unless (fx= m me) (take! m (channel-get c who (cg-coll c) m))))))))

  (define (cg-n0-only c thunk)
    (check-cg 'CG-n0-only c)
    (barrier c 'CG-n0-only)
    (let ([v (if (fx= (cg-id c) 0) (thunk) (void))])
      (barrier c 'CG-n0-only)
      v))

  ;; ---------------------------------------------------------------- syntax
  ;; (fork-join np cg ([param arg] ...) body ...+)
  (define-syntax fork-join
    (lambda (x)
      (syntax-case x ()
        [(_ np cg ([param arg] ...) body0 body ...)
         (and (identifier? #'cg) (for-all identifier? #'(param ...)))
         (with-syntax ([(t ...) (generate-temporaries #'(arg ...))])
           ;; cg comes from the caller's code: the place form takes the
           ;; library it lifts the body to from it
           #'(let* ([n (check-np np)] [t arg] ...)
               (run-fork-join n (list t ...)
                              (lambda (cg param ...) body0 body ...)
                              (lambda ()
                                (place cg (member-main cg (lambda (cg param ...) body0 body ...)))))))]
        [_ (syntax-violation 'fork-join "expected (fork-join np cg ([param arg] ...) body ...+)" x)])))

  (define-syntax CGpipeline
    (lambda (x)
      (syntax-case x ()
        [(_ c prev init body0 body ...)
         (identifier? #'prev)
         #'(cg-pipeline c init (lambda (prev) body0 body ...))]
        [_ (syntax-violation 'CGpipeline "expected (CGpipeline cg prev-id init body ...+)" x)])))

  (define-syntax CG-n0-only
    (lambda (x)
      (syntax-case x ()
        [(_ c body0 body ...) #'(cg-n0-only c (lambda () body0 body ...))]
        [_ (syntax-violation 'CG-n0-only "expected (CG-n0-only cg body ...+)" x)]))))
