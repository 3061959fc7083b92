#!chezscheme
;;; The MPI progress engine of (spindle mpi): non-blocking requests and the
;;; progress thread that completes them, the parked receivers it serves
;;; and the early messages, and the raw receive (probes, a posted first
;;; look, a large message's bytes).  Point-to-point messages and the
;;; receive evt are (spindle private mpi point-to-point)'s; the world,
;;; communicators and checks (spindle private mpi world)'s; the collectives
;;; (spindle private mpi collectives) start requests through run-request!.
;;;
;;; Every operation is a non-blocking MPI request (MPI_Isend, MPI_Ibarrier,
;;; MPI_Ibcast, MPI_Iallreduce, ...; a receive is a matched probe,
;;; MPI_Improbe, then MPI_Mrecv of exactly the probed size, after a first
;;; look that posts MPI_Irecv and cancels it unless it completes within
;;; ~2 us), so a green thread that must wait parks on an evt and the
;;; other threads of the rank keep running.  What completes them is the progress thread, a green
;;; thread started on the first wait: while requests or receivers are
;;; outstanding it probes and tests them, yielding between rounds for 100
;;; ms (1 ms where ranks share cores) and then sleeping on an alarm from 50
;;; us doubling to 2 ms (so a rank idle in a receive makes one probe per 2
;;; ms and does not spin a core for long); when nothing is outstanding it
;;; waits on a latch.  A
;;; receive evt looks first in its own attempt (a message that has already
;;; arrived commits at once, with no progress-thread hop), so a ping-pong
;;; whose peer answers quickly never sleeps.
;;;
;;; engine-lock (a Chez mutex, held with interrupts disabled) serialises
;;; the MPI calls of the progress thread, the evts and the large
;;; messages, and guards the receivers, the early messages and the
;;; requests; a small message's send and a receive's probes call MPI
;;; without it (with-mpi-call: MPI_THREAD_MULTIPLE allows that), in
;;; memory of their OS thread's own.  A message matched for a receiver
;;; whose sync another branch won goes to `early`, which every receive
;;; looks at before MPI, so no message is lost and the order per
;;; (source, tag) is MPI's.
(library (spindle private mpi progress)
  (export run-request! set-progress-spawner! wake-after-finish!
          handle->pending add-request! remove-request! cancel-pending! test! poke! add-prober! remove-prober!
          ;; for point-to-point
          small-message large-message header-kind ignore-completion reap! scratch-at own-memory area-of area send-buffer-of
          probe! probe-raw! post-raw! raw->message take-early! finalized-marker freed-marker
          requests-pending? early-pending? return-early! add-receiver! remove-receiver! drop-comm-receivers!)
  (import (except (chezscheme) sleep make-parameter parameterize)
          (spindle private os mpi)
          (only (spindle private host objects) bytevector-set-immutable!)
          (only (spindle private os memory) malloc free)
          (only (spindle private os libc) bytes-at)
          (only (spindle private places buffer-pool) buffer-free)
          (only (spindle private core atomic) with-atomic with-os-mutex)
          (only (spindle private core evt-core) make-latch latch-fire! commit-partner!)
          (spindle private mpi data)
          (spindle private mpi world)
          (only (spindle private core scheduler) yield!)
          (only (spindle private core processors) processor-count)
          (only (spindle private core sync) sync choice-evt wrap-evt alarm-evt current-inexact-monotonic-milliseconds))
  ;; ------------------------------------------------------------ the engine
  (define receivers '())          ; recv-waiter, oldest first
  (define early '())              ; (comm src tag . value), oldest first
  (define requests '())           ; pending requests
  (define progress-thread #f)
  (define progress-sleeping? #f)
  (define wake #f)                ; the latch poke! fires while the thread may sleep; a new one per sleep

  ;; Green threads are the public layer's: (spindle mpi) gives the
  ;; procedures that start the progress thread and say whether it died.
  (define spawn-progress #f)
  (define progress-dead? #f)
  (define (set-progress-spawner! spawn dead?)
    (set! spawn-progress spawn)
    (set! progress-dead? dead?))

  (define-record-type recv-waiter (fields comm src tag syncer branch) (sealed #t))
  ;; A request the progress thread completes.  owned: what MPI uses until
  ;; it completes (see release!); on-done: (lambda (rc status)), called
  ;; under engine-lock once it completes, before its memory is freed.
  (define-record-type pending (fields req status owned on-done (mutable done?)) (sealed #t))
  (define (ignore-completion rc st) (void))

  ;; A pending request of the MPI request handle h (new foreign memory for
  ;; it and its status).
  (define (handle->pending h owned on-done)
    (let ([p (make-pending (malloc 8) (malloc mpi-status-size) owned on-done #f)])
      (foreign-set! 'uptr (pending-req p) 0 h)
      p))

  ;; Under engine-lock: p joins the requests the progress thread tests
  ;; (poke?: wake it now; a caller that spins on p itself wakes it only
  ;; when it stops).
  (define (add-request! p poke?)
    (set! requests (cons p requests))
    (when poke? (poke!)))



  ;; Called under engine-lock: makes sure the progress thread will look
  ;; soon (it may be asleep on its latch or in its backoff).
  (define (poke!)
    (cond
      ;; (restarted if it died: killed with the custodian of the thread
      ;; that started it, say)
      [(or (not progress-thread) (progress-dead? progress-thread))
       (set! progress-sleeping? #f)
       (set! progress-thread (spawn-progress progress-loop))]
      [progress-sleeping? (set! progress-sleeping? #f) (latch-fire! wake)]))

  (define (matches? comm src tag c s t)
    (and (eq? comm c) (or (not src) (eqv? src s)) (eqv? tag t)))

  ;; Under engine-lock: the first early message for (comm src tag), removed; or #f.
  (define (take-early! comm src tag)
    (let loop ([l early] [prev #f])
      (cond
        [(null? l) #f]
        [(let ([m (car l)]) (matches? comm src tag (car m) (cadr m) (caddr m)))
         (if prev (set-cdr! prev (cdr l)) (set! early (cdr l)))
         (car l)]
        [else (loop (cdr l) l)])))

  (define (push-early! m) (set! early (append early (list m))))

  ;; Foreign memory used under engine-lock only: the flag, message handle
  ;; and status of probe! and test!, a request and status for a
  ;; send's first test, and a buffer for small messages, both ways.
  (define scratch #f)
  (define (scratch-at i)
    (unless scratch (set! scratch (malloc (+ 40 (* 2 mpi-status-size)))))
    (+ scratch i))
  (define small-message 4096)     ; below Open MPI's eager limits (vader 4 KiB, tcp 64 KiB)
  (define recv-buffer #f)
  (define (locked-rbuf) (or recv-buffer (begin (set! recv-buffer (malloc large-message)) recv-buffer)))

  ;; The fast paths of a small message (a send, a receive's probes) make
  ;; their MPI calls without engine-lock (with-mpi-call), in their OS
  ;; thread's own memory: the area (flag, message, status, request,
  ;; status at 0, 8, 24, 48, 56; a receive buffer of large-message bytes
  ;; at 128: any message on a communicator fits) and a send buffer (handed
  ;; to a send that did not complete at once).  Used with interrupts
  ;; disabled: no other green thread runs on that OS thread meanwhile.
  ;; thread-memory holds #(OS thread id, area, send buffer or #f), or #f.
  ;; A thread parameter's value is inherited by the OS threads fork-thread
  ;; makes (a parallel thread's, a pool's workers), so it is believed only
  ;; on the OS thread that made it: else two OS threads would share the
  ;; memory.  (One lookup per message: each costs ~10 ns.)
  (define thread-memory (make-thread-parameter #f))
  (define (own-memory)
    (let ([m (thread-memory)] [id (get-thread-id)])
      (if (and m (fx= (vector-ref m 0) id))
          m
          (let ([m (vector id (malloc (+ 128 large-message)) #f)]) (thread-memory m) m))))
  (define-syntax area-of (syntax-rules () [(_ m) (vector-ref m 1)]))
  (define (area) (area-of (own-memory)))
  (define (send-buffer-of m)
    (or (vector-ref m 2) (let ([b (malloc small-message)]) (vector-set! m 2 b) b)))

  ;; Under engine-lock, raising nothing: the next MPI message for (comm
  ;; src tag), received but not decoded, as (src form . body) (form as
  ;; data's, or 'large: body is the received bytevector itself); #f if none has
  ;; arrived; or MPI's error code.
  ;; sc: scratch memory (flag, message handle, status at 0, 8, 24; a
  ;; request at 48) and rbuf, a buffer of large-message bytes: the
  ;; engine's under engine-lock, or an OS thread's own (thread-area) with
  ;; interrupts disabled.
  (define (probe-raw! sc rbuf comm src tag)
    (let ([flag sc] [msg (+ sc 8)] [st (+ sc 24)])
      (foreign-set! 'int flag 0 0)
      (let ([rc (mpi-improbe (or src -1) tag (rmpi-comm-handle comm) flag msg st)])
        (cond
          [(not (eqv? rc 0)) rc]
          [(eqv? 0 (foreign-ref 'int flag 0)) #f]
          [else
           (let ([n (mpi-status-bytes st)])
             (received-raw sc rbuf comm tag
               (if (fx<= n small-message) (mpi-mrecv-small rbuf n (mpi-byte) msg st) (mpi-mrecv rbuf n (mpi-byte) msg st))))]))))

  ;; With interrupts disabled, in the OS thread's area: probe-raw!'s first
  ;; look.  A probe matches a message that has arrived, so that polling by
  ;; probes sees a message later than a posted receive, into which MPI
  ;; delivers it as it comes (a C ping-pong: 0.70 us a round trip against
  ;; 0.40).  So this posts MPI_Irecv into rbuf (every message on a
  ;; communicator fits: see send-message), tests it up to `looks` times,
  ;; and cancels it if it has not completed; what it received all the
  ;; same is the result.
  (define (post-raw! sc rbuf comm src tag looks)
    (let ([flag sc] [st (+ sc 24)] [req (+ sc 48)])
      (let ([rc (mpi-irecv rbuf large-message (mpi-byte) (or src -1) tag (rmpi-comm-handle comm) req)])
        (if (not (eqv? rc 0))
            rc
            (let look ([k 1])
              (foreign-set! 'int flag 0 0)
              (let ([rc (mpi-test req flag st)])
                (cond
                  [(not (eqv? rc 0)) rc]
                  [(not (eqv? 0 (foreign-ref 'int flag 0))) (received-raw sc rbuf comm tag 0)]
                  [(fx< k looks) (look (fx+ k 1))]
                  [else
                   (mpi-cancel req)
                   (let ([rc (mpi-wait req st)])
                     (cond
                       [(not (eqv? rc 0)) rc]
                       [(mpi-status-cancelled? st) #f]
                       [else (received-raw sc rbuf comm tag 0)]))])))))))

  ;; The message that a receive (MPI's code rc, status at sc + 24) wrote in
  ;; rbuf, as probe-raw! returns it.
  (define (received-raw sc rbuf comm tag rc)
    (let* ([st (+ sc 24)] [n (mpi-status-bytes st)] [from (mpi-status-source st)]
           [kind (foreign-ref 'unsigned-8 rbuf 0)])
      (cond
        [(not (eqv? rc 0)) rc]
        [(header-form kind)
         => (lambda (form)
              (let ([bv (receive-large! sc comm from tag)])
                (if (fixnum? bv) bv (cons* from (if (eq? form 'raw) 'large form) bv))))]
        [else (let-values ([(form body) (foreign->body rbuf n)]) (cons* from form body))])))

  ;; (comm src tag . value) of what probe-raw! returned (not #f).
  (define (raw->message who comm tag r)
    (if (fixnum? r)
        (begin (check-rc who r) #f)
        (cons* comm (car r) tag (if (eq? (cadr r) 'large) (cddr r) (body->value (cadr r) (cddr r))))))

  ;; Under engine-lock: the next message for (comm src tag), decoded, or #f.
  (define (probe! who comm src tag)
    (let ([r (probe-raw! (scratch-at 0) (locked-rbuf) comm src tag)])
      (and r (raw->message who comm tag r))))

  ;; Under engine-lock, or with interrupts disabled (probe-raw!): the
  ;; bytes of a large message whose header came from `from`: the oldest
  ;; from there with tag on the communicator's twin, received straight into
  ;; a new (locked) bytevector of its size; or MPI's error code.  Each
  ;; receive that takes a header takes one body, so every message is
  ;; received once, though with several receivers of one stream a receive
  ;; may take the body that followed another's header: the two were
  ;; concurrent, so either may return either message.
  (define (receive-large! sc comm from tag)
    (let ([flag sc] [msg (+ sc 8)] [st (+ sc 24)])
      (let ([rc (let wait ()
                  (foreign-set! 'int flag 0 0)
                  (let ([rc (mpi-improbe from tag (rmpi-comm-twin comm) flag msg st)])
                    (if (and (eqv? rc 0) (eqv? 0 (foreign-ref 'int flag 0))) (wait) rc)))])
        (if (not (eqv? rc 0))
            rc
            (let* ([n (mpi-status-bytes st)] [bv (make-bytevector n)])
              (lock-object bv)
              (let ([rc (mpi-mrecv (bytes-at bv 0) n (mpi-byte) msg st)])
                (unlock-object bv)
                (bytevector-set-immutable! bv)
                (if (eqv? rc 0) bv rc)))))))

  ;; Under engine-lock: one round.  Returns 'idle (nothing outstanding),
  ;; 'moved (something completed) or 'waiting.
  ;; (A parked receiver is served from early first: a message a lost sync
  ;; gave back there is older than any MPI still holds for its stream.
  ;; Once MPI is finalised, each parked receiver gets finalized-marker.)
  (define (progress-step!)
   (if (world-finalized?)
    (begin
      (for-each (lambda (w) (commit-partner! (recv-waiter-syncer w) (recv-waiter-branch w) (list finalized-marker)))
                receivers)
      (set! receivers '())
      'idle)
    (let ([moved #f])
      (set! receivers
        (filter
          (lambda (w)
            (let* ([comm (recv-waiter-comm w)] [src (recv-waiter-src w)] [tag (recv-waiter-tag w)]
                   [old (take-early! comm src tag)]
                   [m (or old (probe! 'rmpi-recv comm src tag))])
              (cond
                [(not m) #t]
                [else
                 (set! moved #t)
                 (unless (commit-partner! (recv-waiter-syncer w) (recv-waiter-branch w) (list (cdddr m)))
                   (if old (set! early (cons m early)) (push-early! m)))
                 #f])))
          receivers))
      (unless (null? probers)
        (set! probers (filter (lambda (p) (if (p) (begin (set! moved #t) #f) #t)) probers)))
      (let ([before (length requests)])
        (reap!)
        (unless (fx= before (length requests)) (set! moved #t)))
      (cond [moved 'moved] [(and (null? receivers) (null? requests) (null? probers)) 'idle] [else 'waiting]))))

  ;; Under engine-lock: takes p back before it completed (the caller
  ;; cancels it); #f if it completed already.
  (define (remove-request! p)
    (and (not (pending-done? p))
         (begin (set! requests (remq p requests)) #t)))

  ;; Under engine-lock, for a receive p that remove-request! took back:
  ;; cancels it (MPI_Cancel, then MPI_Wait: at once for a receive not yet
  ;; matched, else once its bytes are in); a message it received all the
  ;; same goes to its on-done.
  (define (cancel-pending! p)
    (unless (world-finalized?)
      (mpi-cancel (pending-req p))
      (let ([rc (mpi-wait (pending-req p) (pending-status p))])
        (unless (and (eqv? rc 0) (mpi-status-cancelled? (pending-status p)))
          ((pending-on-done p) rc (pending-status p)))))
    (pending-done?-set! p #t)
    (free (pending-req p)) (free (pending-status p)) (for-each release! (pending-owned p)))

  ;; Other receivers' probes (in-place receives, mpi-bytes): thunks called
  ;; under engine-lock each round until one returns #t (it is then dropped).
  (define probers '())
  (define (add-prober! p) (set! probers (append probers (list p))) (poke!))
  (define (remove-prober! p) (set! probers (remq p probers)))

  ;; Under engine-lock: tests the requests, dropping the completed.
  (define (reap!)
    (set! requests (filter (lambda (p) (not (test! p))) requests)))

  ;; The backoff: yield for spin-ms after the last completion, then sleep
  ;; from 0.05 ms doubling to max-sleep-ms.  A short cap matters more than
  ;; it seems: in a ping-pong, a rank that sleeps long answers late, so its
  ;; peer sleeps long too, and the pair settles at about twice the cap per
  ;; round trip.  A new receiver or request wakes the thread at once.
  ;; Open MPI moves a non-blocking collective (and a large message's
  ;; rendezvous) only while each rank calls MPI, so a rank asleep holds up
  ;; every rank waiting on its part, and at many ranks the delays chain
  ;; (16 ranks on 16 cores, CG class A: 8.1 s with 1 ms of polling, 0.77 s
  ;; polling throughout).  So a rank with a core of its own (this host's
  ;; ranks no more than its processors) polls for 100 ms; ranks that share
  ;; cores poll for 1 ms, since polling takes the core of a rank that
  ;; computes.
  (define spin-ms
    (let ([local (let ([v (getenv "OMPI_COMM_WORLD_LOCAL_SIZE")]) (and v (string->number v)))])
      (if (and (fixnum? local) (<= local (processor-count))) 100.0 1.0)))
  (define max-sleep-ms 2.0)

  (define (progress-loop)
    (let loop ([spin-since #f] [pause 0.05])
      (let* ([r (with-atomic
                  (with-os-mutex engine-lock
                    (let ([s (progress-step!)])
                      ;; a new latch unless the last is still unfired
                      (unless (or (eq? s 'moved) progress-sleeping?)
                        (set! wake (make-latch (lambda (l) (void)))))
                      (set! progress-sleeping? (not (eq? s 'moved)))
                      (cons s wake))))]
             [state (car r)] [wake (cdr r)])
        (case state
          [(idle) (sync wake) (loop #f 0.05)]
          [(moved) (loop #f 0.05)]
          [else
           (let ([now (current-inexact-monotonic-milliseconds)])
             (cond
               [(not spin-since) (yield!) (loop now pause)]
               [(< (- now spin-since) spin-ms) (yield!) (loop spin-since pause)]
               [(sync (choice-evt (wrap-evt wake (lambda (_) #t))
                                  (wrap-evt (alarm-evt (+ now pause) #t) (lambda (_) #f))))
                (loop #f 0.05)]
               [else (loop spin-since (min max-sleep-ms (* pause 2)))]))]))))

  ;; What a request owns: foreign memory (an address), a pooled buffer
  ;; (address . size), a bytevector MPI reads or writes in place (locked),
  ;; or any other object kept alive until MPI is done (a shared vector).
  (define (release! x)
    (cond [(bytevector? x) (unlock-object x)] [(pair? x) (buffer-free (car x) (cdr x))] [(integer? x) (free x)] [else (void)]))

  ;; Under engine-lock: #t (and its on-done called, the request's memory
  ;; freed) once p completed.
  ;; (A waiting sender tests its own request too, so p may be done
  ;; already; reap! then drops it.)
  (define (test! p)
    (or (pending-done? p)
    (let ([flag (scratch-at 0)])
      (foreign-set! 'int flag 0 0)
      (let ([rc (mpi-test (pending-req p) flag (pending-status p))])
        (let ([done (or (not (eqv? rc 0)) (not (eqv? 0 (foreign-ref 'int flag 0))))])
          (when done
            (pending-done?-set! p #t)
            ((pending-on-done p) rc (pending-status p))
            (free (pending-req p)) (free (pending-status p)) (for-each release! (pending-owned p)))
          done)))))

  ;; Starts a request with (start req-pointer) and waits for it.  The
  ;; request's memory and `owned` are freed by whoever sees it complete,
  ;; never by the waiter: a waiter that is killed or broken leaves MPI's
  ;; buffers alone.  Memory the waiter reads afterwards is its own to free
  ;; on a normal return (on an abnormal one it is left, not freed early).
  (define (run-request! who owned start)
    (let* ([req (malloc 8)] [st (malloc mpi-status-size)] [latch (make-latch (lambda (l) (void)))] [result #f]
           [p (make-pending req st owned (lambda (rc st) (set! result rc) (latch-fire! latch)) #f)])
      (let ([rc (with-atomic
                  (with-os-mutex engine-lock
                    (let ([rc (start req)])
                      (if (eqv? rc 0)
                          (unless (test! p) (add-request! p #t))
                          (begin (free req) (free st) (for-each release! owned)))
                      rc)))])
        (check-rc who rc)
        (sync latch)
        (check-rc who result))))


  ;; The largest message on a communicator itself (see point-to-point's
  ;; send-message), and the header kinds of the larger ones, which go as a
  ;; header then their bytes on the communicator's twin.

  (define large-message 65536)
  ;; A header's kind byte for each form of message (private/mpi/data), and back.
  (define (header-kind form) (case form [(raw) 2] [(fx) 5] [else 3]))
  (define (header-form kind) (case kind [(2) 'raw] [(3) 'encoded] [(5) 'fx] [else #f]))

  ;; A receive's result once MPI is finalised (rmpi-finish), or its
  ;; communicator freed: point-to-point's receivers raise.
  (define finalized-marker (gensym "finalized"))
  (define freed-marker (gensym "freed"))

  ;; For point-to-point: the receivers and early messages, under engine-lock
  ;; (requests-pending? and early-pending? read unlocked: hints).
  (define (requests-pending?) (not (null? requests)))
  (define (early-pending?) (pair? early))
  (define (return-early! m) (set! early (cons m early)))
  (define (add-receiver! comm src tag s branch)
    (let ([w (make-recv-waiter comm src tag s branch)])
      (set! receivers (append receivers (list w)))
      (poke!)
      w))
  (define (remove-receiver! w) (set! receivers (remq w receivers)))
  ;; comm's early messages dropped, its parked receivers given freed-marker.
  (define (drop-comm-receivers! comm)
    (set! early (filter (lambda (m) (not (eq? (car m) comm))) early))
    (set! receivers
      (filter (lambda (w)
                (or (not (eq? (recv-waiter-comm w) comm))
                    (begin (commit-partner! (recv-waiter-syncer w) (recv-waiter-branch w) (list freed-marker)) #f)))
              receivers)))

  ;; After rmpi-finish: wakes the progress thread, which gives each parked
  ;; receive its error.
  (define (wake-after-finish!)
    (with-engine-lock (poke!))))
