#!chezscheme
;;; Place channel endpoints: one end of a Unix stream socket.
;;;
;;; A frame is a 16-byte header (payload length: 8 bytes, descriptor count:
;;; 4, payload kind: 4, 1 for a raw bytevector, 0 for fasl) and the payload;
;;; descriptors travel with the header's bytes.
;;;
;;; Sending never blocks: a put writes what the socket takes at once and
;;; queues the rest (in foreign memory) for the poller, which writes it when
;;; the socket drains.  Receiving starts when an endpoint is first read from
;;; (got from, or synced on): from then on the poller reads its frames into
;;; an unbounded async channel, and getters decode them.  An endpoint that
;;; is never read locally (say, one end of a fresh place-channel, sent
;;; away) leaves its bytes to the place that reads it.
;;;
;;; The process's I/O poller (spindle private io poller) watches the sockets:
;;; a worker with nothing to run sleeps in it, busy workers look at it on
;;; each timer tick.
;;;
;;; Shared-memory rings (spindle private places shm-ring).  An endpoint made in
;;; this process and never sent away (`exclusive?`: it is the only writer
;;; of its direction) offers its peer a ring once the channel is busy (after
;;; offer-after messages, or at once for a large one): an offer frame (kind
;;; 2) on the socket carries the ring's memfd and its two eventfds.  From
;;; then on its messages without descriptors go into the ring, written once,
;;; with no system call while the reader is awake; the socket keeps
;;; descriptor passing and end-of-stream.  Order is kept because each side
;;; reads one source at a time:
;;; - the reader takes socket frames up to the offer, then only the ring
;;;   (the socket is paused) until the ring ends: a retire frame in it, a
;;;   hang-up of the socket (the writer is gone: the ring is drained first),
;;;   or the reader giving it up;
;;; - the writer retires its ring (retire frame, queued in order) before a
;;;   message with descriptors and when its endpoint is sent away; an
;;;   endpoint sent away closes the ring it reads (ring-close!, then drains
;;;   it into the frames that travel with it), so the writer's next publish
;;;   fails and that message and the rest go over the socket, whole.
;;; Endpoints received in a message never offer rings (other places may
;;; hold and write the same endpoint), but read the rings offered to them.
;;; Rings are 256 KB, or 4 MB when a large message asks for one (a large
;;; message on a small ring retires it for a large one); a message over
;;; half a ring goes in chunks.  A put that finds the ring full waits,
;;; yielding, while the reader makes progress, then queues (puts never
;;; wait for a reader that does not read).
(library (spindle private places place-channel)
  (export endpoint? make-endpoint-pair descriptor->endpoint endpoint-fd
          endpoint-send! endpoint-get endpoint-evt endpoint-set-frame-hook!
          endpoint-record-type watch-descriptor!
          wait-for-output! endpoint-take-unread!)
  (import (chezscheme)
          (only (spindle private os descriptors) close-fd set-nonblocking! descriptor-inode)
          (only (spindle private os memory) malloc free memcpy-to-bytevector! memcpy-from-bytevector! memmove!)
          (only (spindle private os polling) epoll-in epoll-out epoll-hangup-mask eventfd-signal! eventfd-drain!)
          (only (spindle private os sockets) make-socket-pair send-frame-chunk recv-chunk max-fds-per-message)
          (only (spindle private os threads) os-yield!) (spindle private core queue) (spindle private places buffer-pool)
          (spindle private places shm-ring)
          
          (only (spindle private io poller) watch-level! change-level! unwatch-level!)
          (only (spindle async-channel) make-async-channel async-channel-get
                async-channel-try-get async-channel-push-back! async-channel-take-all!)
          (only (spindle thread) yield)
          
          (only (spindle private core sync) wrap-evt guard-evt))

  (define header-size 16)

  (define-record-type endpoint
    (fields fd
            lock                     ; Chez mutex, held with interrupts disabled
            out                      ; queue of pending frames
            inbox                    ; async channel of (bytevector . fds) or 'closed
            (mutable reading?)
            (mutable writing?)       ; EPOLLOUT armed
            (mutable ended?)         ; end of stream read: every peer end is closed
            (mutable hook)           ; #f, or called by the poller with each frame
            ;; read state, used under the lock by the poller or a getter
            header                   ; foreign read-area bytes: frame headers (see read-step!)
            (mutable header-got)
            (mutable payload)        ; foreign buffer or #f
            (mutable payload-size)
            (mutable payload-got)
            (mutable fds)            ; descriptors received and not yet framed
            ;; epoll read interest: off while `quiet?` (getters read the
            ;; socket themselves); a getter about to park, or any evt use,
            ;; turns it on again.  See endpoint-get.
            (mutable quiet?)
            (mutable parked)         ; getters parked on the inbox (may overcount)
            (mutable evt-used?)
            (mutable interest)       ; the epoll mask now registered
            ;; shared-memory rings (see the top of the file)
            (mutable exclusive?)     ; may offer rings: made here, never sent away
            (mutable out-ring)       ; the ring this endpoint writes, or #f
            (mutable unringed)       ; messages sent since it had an active ring
            (mutable in-ring)        ; the active ring this endpoint reads, or #f
            (mutable area-paused?)   ; socket parsing stopped at an offer
            (mutable large))         ; #(buffer size got raw?): a ring message in chunks
    (protocol
      (lambda (new)
        (lambda (fd)
          (new fd (make-mutex) (make-queue) (make-async-channel) #f #f #f #f
               (malloc read-area) 0 #f 0 0 '() #f 0 #f 0
               #f #f 0 #f #f #f))))
    (nongenerative spindle-place-endpoint-v1) (sealed #t))

  ;; A pending frame: foreign buffer, its size, bytes sent, descriptor
  ;; owners (kept reachable until sent), descriptors not yet sent, and
  ;; descriptors to close once all are sent.
  (define-record-type pending
    (fields buffer size (mutable sent) owners (mutable fds) (mutable close-after))
    (nongenerative spindle-place-pending-v1) (sealed #t))

  (define-syntax with-endpoint-lock
    (syntax-rules ()
      [(_ ep body ...) (with-interrupts-disabled (with-mutex (endpoint-lock ep) body ...))]))

  ;; ---------------------------------------------------------------- lifetime
  (define endpoint-record-type (record-type-descriptor endpoint))

  ;; Unreachable endpoints close their descriptor.  A reading endpoint is
  ;; reachable from the poller's table, so it lives as long as the process.
  (define reclaim (make-guardian))
  (define reclaim-lock (make-mutex))

  ;; Live endpoints by socket inode (a weak pair each), so a channel that
  ;; arrives again, or comes back, is the endpoint this process has.
  (define by-inode (make-eqv-hashtable))     ; under reclaim-lock

  ;; With reclaim-lock held: releases the endpoints found unreachable.  A
  ;; dead endpoint can still be in a weak pair (the guardian keeps it), and
  ;; its mutex is already gone: it leaves by-inode here, before any lookup.
  (define (release-dead!)
    (let loop ()
      (let ([dead (reclaim)])
        (when dead
          (let ([ino (car dead)] [e (cdr dead)])
            (let ([w (hashtable-ref by-inode ino #f)])
              (when (and w (or (eq? (car w) e) (bwp-object? (car w))))
                (hashtable-delete! by-inode ino)))
            (close-fd (endpoint-fd e))
            (free (endpoint-header e))
            (let ([r (endpoint-out-ring e)]) (when r (ring-release! r)))
            (let ([r (endpoint-in-ring e)]) (when r (ring-release! r)))
            (let ([l (endpoint-large e)]) (when l (buffer-free (vector-ref l 0) (vector-ref l 1)))))
          (loop)))))

  (define (track! ep)
    (let ([ino (descriptor-inode (endpoint-fd ep))])
      (with-interrupts-disabled
        (with-mutex reclaim-lock
          (release-dead!)
          (when ino (hashtable-set! by-inode ino (weak-cons ep '())))
          (reclaim ep (cons ino ep)))))
    ep)

  ;; The live endpoint of this socket, if this process has one.  (No
  ;; collection can run between release-dead! and the lookup: interrupts
  ;; are disabled.)
  (define (endpoint-of-inode ino)
    (and ino
         (with-interrupts-disabled
           (with-mutex reclaim-lock
             (release-dead!)
             (let ([w (hashtable-ref by-inode ino #f)])
               (and w (endpoint? (car w)) (car w)))))))

  ;; unread, unread-fds: what the sender had read from this channel but not
  ;; delivered (see endpoint-take-unread!); parsed before the socket.
  (define descriptor->endpoint
    (case-lambda
      ;; a descriptor made here, for this endpoint alone
      [(fd) (let ([e (descriptor->endpoint fd #f '())]) (endpoint-exclusive?-set! e #t) e)]
      [(fd unread unread-fds)
       (let* ([known (endpoint-of-inode (descriptor-inode fd))]
              [e (or known (begin (set-nonblocking! fd) (track! (make-endpoint fd))))])
         (when known (close-fd fd))
         (when unread
           (with-endpoint-lock e
             (let-values ([(frames end?) (read-frames! e '() (bytes-reader unread unread-fds) (greatest-fixnum))])
               (for-each (lambda (f) (async-channel-push-back! (endpoint-inbox e) f)) frames))))
         e)]))

  (define (make-endpoint-pair who)
    (let-values ([(a b) (make-socket-pair who)])
      (values (descriptor->endpoint a) (descriptor->endpoint b))))

  ;; ---------------------------------------------------------------- poller
  ;; Endpoints are watched by the process's I/O poller (spindle private
  ;; poller), level-triggered: its handler runs in whichever worker polls,
  ;; with interrupts disabled.  registered: fd -> endpoint, under
  ;; registered-lock, for wait-for-output!.
  (define registered (make-eqv-hashtable))
  (define registered-lock (make-mutex))

  (define (endpoint-event! e mask)
    (let ([hang-up? (fxlogtest mask epoll-hangup-mask)])
      ;; every peer end is closed: nobody reads the ring this writes
      (when hang-up?
        (with-endpoint-lock e
          (let ([r (endpoint-out-ring e)]) (when r (ring-state-set! r 'dead)))))
      (when (or hang-up? (fxlogtest mask epoll-out)) (flush! e))
      (cond
        [(endpoint-reading? e)
         (when (fxlogtest mask (fxior epoll-in epoll-hangup-mask)) (pull! e hang-up?))]
        ;; a write-only registration whose peer is gone
        [hang-up? (unregister! e)])))

  ;; With the endpoint lock held: the epoll interest that matches its state.
  ;; The ring read here asks its writer for wake-ups when the socket would
  ;; be watched (a getter may park); frames that came before that are
  ;; pulled by the poller at once.
  (define (update-interest! e)
    (let* ([in? (and (endpoint-reading? e) (not (endpoint-quiet? e)))]
           [mask (fxior (if in? epoll-in 0) (if (endpoint-writing? e) epoll-out 0))]
           [r (endpoint-in-ring e)])
      (when (and r (ring-want-data! r in?) in?)
        (eventfd-signal! (ring-data-efd r)))
      (unless (fx= mask (endpoint-interest e))
        (endpoint-interest-set! e mask)
        (change-level! (endpoint-fd e) mask))))

  (define (register! e)
    (with-interrupts-disabled
      (with-mutex registered-lock
        (unless (hashtable-contains? registered (endpoint-fd e))
          (hashtable-set! registered (endpoint-fd e) e)
          (endpoint-interest-set! e 0)
          (watch-level! (endpoint-fd e) 0 (lambda (mask) (endpoint-event! e mask)))))))

  ;; Calls (on-readable) in a polling worker whenever fd is readable.
  (define (watch-descriptor! fd on-readable)
    (watch-level! fd epoll-in (lambda (mask) (on-readable))))

  (define (unregister! e)
    (with-interrupts-disabled
      (with-mutex registered-lock
        (when (eq? (hashtable-ref registered (endpoint-fd e) #f) e)
          (hashtable-delete! registered (endpoint-fd e))
          (unwatch-level! (endpoint-fd e))))))

  (define (start-reading! e)
    (unless (endpoint-reading? e)
      (register! e)
      (with-endpoint-lock e
        (unless (endpoint-reading? e)
          (endpoint-reading?-set! e #t)
          (update-interest! e)))))

  ;; An endpoint sent to another place stops being read here (until a
  ;; thread here gets from it again), so the receiver gets what comes.
  ;; Returns what this process has read from e but not handed to a getter
  ;; (queued frames, and the start of a frame), as the bytes and
  ;; descriptors that carried them; the receiver of e parses them first.
  (define (endpoint-take-unread! e)
    (with-endpoint-lock e
      ;; rings: other places may now write and read this endpoint
      (endpoint-exclusive?-set! e #f)
      (retire-out-ring! e)
      (let ([r (endpoint-in-ring e)])
        (when r
          (ring-close! r)
          (for-each (lambda (f) (async-channel-push-back! (endpoint-inbox e) f))
                    (reverse (pull-ring! e '() #t)))))
      (when (endpoint-reading? e)
        (endpoint-reading?-set! e #f)
        (update-interest! e))
      (let* ([frames (filter pair? (async-channel-take-all! (endpoint-inbox e)))]
             [partial (partial-frame-bytes e)]
             [fds (append (apply append (map cddr frames)) (endpoint-fds e))])
        (endpoint-fds-set! e '())
        (if (and (null? frames) (not partial) (null? fds))
            (values #f '())
            (let-values ([(port get) (open-bytevector-output-port)])
              (for-each
                (lambda (f)
                  (let ([h (make-bytevector header-size 0)])
                    (bytevector-u64-native-set! h 0 (bytevector-length (car f)))
                    (bytevector-u32-native-set! h 8 (length (cddr f)))
                    (bytevector-u32-native-set! h 12 (if (cadr f) 1 0))
                    (put-bytevector port h)
                    (put-bytevector port (car f))))
                frames)
              (when partial (put-bytevector port partial))
              (values (get) fds))))))

  ;; With the lock held: the bytes of a frame read in part, or #f; the
  ;; parser starts afresh.
  (define (partial-frame-bytes e)
    (let ([p (endpoint-payload e)] [hgot (endpoint-header-got e)])
      (cond
        [p
         (let* ([got (endpoint-payload-got e)] [bv (make-bytevector (fx+ header-size got))]
                [h (make-bytevector header-size)] [body (make-bytevector got)])
           (memcpy-to-bytevector! h (endpoint-header e) header-size)
           (memcpy-to-bytevector! body p got)
           (bytevector-copy! h 0 bv 0 header-size)
           (bytevector-copy! body 0 bv header-size got)
           (buffer-free p (endpoint-payload-size e))
           (endpoint-payload-set! e #f)
           (endpoint-header-got-set! e 0)
           bv)]
        [(fx> hgot 0)
         (let ([bv (make-bytevector hgot)])
           (memcpy-to-bytevector! bv (endpoint-header e) hgot)
           (endpoint-header-got-set! e 0)
           (endpoint-area-paused?-set! e #f)
           bv)]
        [else #f])))

  ;; A reader for read-frames! over a bytevector: all of fds come first.
  (define (bytes-reader bv fds)
    (let ([pos 0] [fds fds])
      (lambda (addr len)
        (let ([n (fxmin len (fx- (bytevector-length bv) pos))])
          (if (fx= n 0)
              (values 'again '())
              (let ([chunk (if (and (fx= pos 0) (fx= n (bytevector-length bv))) bv
                               (let ([c (make-bytevector n)]) (bytevector-copy! bv pos c 0 n) c))]
                    [given fds])
                (memcpy-from-bytevector! addr chunk n)
                (set! pos (fx+ pos n))
                (set! fds '())
                (values n given)))))))

  ;; ---------------------------------------------------------------- sending
  ;; Sends the frame of payload bv with the descriptors of owners
  ;; (endpoints or shared vectors, by their fd), then closes close-after.
  ;; A message without descriptors goes into the ring when there is one.
  (define (endpoint-send! e bv raw? owner-fds owners close-after)
    (when (fx> (length owner-fds) (fx* max-fds-per-message header-size))
      (assertion-violation 'place-channel-put "too many channels and shared vectors in one message"
                           (length owner-fds)))
    (if (and (null? owner-fds) (null? close-after))
        ;; A full ring makes the put wait (yielding) while its reader
        ;; makes progress, then queue: no copy, no kick while both run.
        (let wait ([deadline #f] [seen #f])
          (let ([head (with-endpoint-lock e (send-plain! e bv raw? (or (not deadline) (fx< (now-ns) deadline))))])
            (when head
              (yield)
              (os-yield!)
              (wait (if (eqv? head seen) deadline (fx+ (now-ns) full-patience-ns)) head))))
        (let ([p (socket-frame bv (if raw? 1 0) owner-fds owners close-after)])
          (with-endpoint-lock e
            (retire-out-ring! e)
            (queue-frame! e p)))))

  ;; A pending socket frame of payload bv.
  (define (socket-frame bv kind owner-fds owners close-after)
    (let* ([n (bytevector-length bv)]
           [size (fx+ header-size n)]
           [buf (buffer-alloc size)])
      (foreign-set! 'unsigned-64 buf 0 n)
      (foreign-set! 'unsigned-32 buf 8 (length owner-fds))
      (foreign-set! 'unsigned-32 buf 12 kind)
      (memcpy-from-bytevector! (+ buf header-size) bv n)
      (make-pending buf size 0 owners owner-fds close-after)))

  ;; With the lock held.
  (define (queue-frame! e p)
    ;; a non-empty queue is already being drained (EPOLLOUT armed, or a
    ;; ring's room awaited)
    (let ([idle? (queue-empty? (endpoint-out e))])
      (queue-push! (endpoint-out e) p)
      (when idle? (drain! e))))

  ;; A message for a ring, queued: its payload in a frame buffer (the
  ;; sender's bytevector may change after the put).  sent: payload bytes
  ;; published, -1 while the header of a chunked message is not.  kind
  ;; 'retire: the retire frame, no payload.
  (define-record-type ring-item
    (fields ring kind buffer size raw? (mutable sent))
    (nongenerative spindle-place-ring-item-v1) (sealed #t))

  (define offer-after 8)                  ; messages before a busy channel gets a ring
  (define offer-size (* 64 1024))         ; a message this large gets one at once
  (define small-ring (* 256 1024))        ; ring sizes (powers of 2)
  (define large-ring (* 4 1024 1024))
  (define offer-kind 2)                   ; socket frame kind of an offer

  ;; How long a put that finds the ring full waits with no progress of its
  ;; reader before it queues its message.
  (define full-patience-ns 2000000)

  (define (now-ns)
    (let ([t (current-time 'time-monotonic)])
      (fx+ (fx* (time-second t) 1000000000) (time-nanosecond t))))

  ;; With the lock held.  Returns #f once sent or queued, or, if wait? and
  ;; a message that fits the ring finds it full, the reader's position
  ;; seen (the caller tries again soon).
  (define (send-plain! e bv raw? wait?)
    (let* ([n (bytevector-length bv)] [r (out-ring-for! e n)] [q (endpoint-out e)])
      (cond
        [(not r) (queue-frame! e (socket-frame bv (if raw? 1 0) '() '() '())) #f]
        [(and (queue-empty? q) (fx<= n (ring-frame-limit r)))
         (case (ring-put! r frame-message (if raw? 1 0) n (lambda (a) (memcpy-from-bytevector! a bv n)))
           [(ok) #f]
           [(closed) (ring-state-set! r 'dead) (queue-ring-item! e r bv n raw?)]
           [else (if wait? (ring-head-seen r) (queue-ring-item! e r bv n raw?))])]
        [else (queue-ring-item! e r bv n raw?)])))

  (define (queue-ring-item! e r bv n raw?)
    (let ([buf (buffer-alloc n)])
      (memcpy-from-bytevector! buf bv n)
      (queue-frame! e (make-ring-item r 'message buf n raw? (if (fx> n (ring-frame-limit r)) -1 0)))
      #f))

  ;; With the lock held: the active ring to write a message of n bytes
  ;; into, offering one if the channel is busy; or #f.
  (define (out-ring-for! e n)
    (let ([r (endpoint-out-ring e)])
      (cond
        [(and r (eq? (ring-state r) 'active))
         ;; a large message on a small ring: a large ring takes over
         (if (and (fx> n (ring-frame-limit r)) (fx< (ring-capacity r) large-ring)
                  (queue-empty? (endpoint-out e)))
             (begin
               (retire-out-ring! e)
               (and (queue-empty? (endpoint-out e)) (offer-ring! e n)))
             r)]
        [(not (endpoint-exclusive? e)) #f]
        [else
         (endpoint-unringed-set! e (fx+ 1 (endpoint-unringed e)))
         (and (or (fx>= (endpoint-unringed e) offer-after) (fx>= n offer-size))
              (queue-empty? (endpoint-out e))
              (offer-ring! e n))])))

  ;; With the lock held.  A retired ring large enough is offered again
  ;; if its last reader has read it all; else a new one is made (the
  ;; reader keeps its own mapping of the old one until it has read it).
  ;; A failure to make one (out of descriptors or memory) leaves the
  ;; endpoint on the socket for good.
  (define (offer-ring! e n)
    (let ([old (endpoint-out-ring e)] [size (if (fx>= n offer-size) large-ring small-ring)])
      (let ([r (cond
                 [(and old (fx>= (ring-capacity old) size) (ring-reusable? old)) (ring-reset! old) old]
                 [(and old (eq? (ring-state old) 'retiring)) #f]
                 [else
                  (when old
                    (want-room! e old #f)
                    (ring-release! old)
                    (endpoint-out-ring-set! e #f))
                  (guard (c [#t (endpoint-exclusive?-set! e #f) #f])
                    (make-writer-ring 'place-channel-put size))])])
        (and r
             (let ([cap (make-bytevector 8)])
               (bytevector-u64-native-set! cap 0 (ring-capacity r))
               (endpoint-out-ring-set! e r)
               (endpoint-unringed-set! e 0)
               (queue-frame! e (socket-frame cap offer-kind
                                             (list (ring-memfd r) (ring-data-efd r) (ring-space-efd r))
                                             '() '()))
               r)))))

  ;; With the lock held: the active ring (if any) ends after what is queued.
  (define (retire-out-ring! e)
    (let ([r (endpoint-out-ring e)])
      (when (and r (eq? (ring-state r) 'active))
        (ring-state-set! r 'retiring)
        (queue-frame! e (make-ring-item r 'retire 0 0 #f 0)))))

  (define (discard! p)
    (if (ring-item? p)
        (free-item! p)
        (begin
          (for-each close-fd (pending-close-after p))
          (buffer-free (pending-buffer p) (pending-size p)))))

  (define (free-item! p)
    (when (eq? (ring-item-kind p) 'message)
      (buffer-free (ring-item-buffer p) (ring-item-size p))))

  ;; With the endpoint lock held: writes queued frames until the socket is
  ;; full, then arms EPOLLOUT, or until the ring is, then asks for a kick
  ;; when the reader makes room.  A vanished peer drops everything queued.
  (define (drain! e)
    (let ([q (endpoint-out e)])
      (let loop ()
        (let ([p (queue-pop! q #f)])
          (when p
            (if (ring-item? p)
                (case (ring-step! e p)
                  [(done) (loop)]
                  [(blocked) (queue-push-front! q p) (want-room! e (ring-item-ring p) (item-need p))]
                  [else (queue-push-front! q (ring-item->socket-frame p)) (loop)])
                (when (socket-step! e q p) (loop)))))
        (when (queue-empty? q)
          (when (endpoint-writing? e) (want-writable! e #f))
          (let ([r (endpoint-out-ring e)])
            (when r (want-room! e r #f)))))))

  ;; The payload bytes a blocked item waits room for.
  (define (item-need p)
    (let ([r (ring-item-ring p)] [size (ring-item-size p)] [sent (ring-item-sent p)])
      (cond
        [(or (eq? (ring-item-kind p) 'retire) (fx< sent 0)) 0]
        [(fx<= size (ring-frame-limit r)) size]
        [else (fxmin (fx- size sent) 4096)])))

  ;; One socket frame: #t to go on with the next.
  ;; A send carries at most max-fds-per-message descriptors; while more
  ;; remain it sends one byte, so each batch rides on bytes of the header.
  (define (socket-step! e q p)
    (let* ([fds (pending-fds p)]
           [more? (fx> (length fds) max-fds-per-message)]
           [batch (if more? (list-head fds max-fds-per-message) fds)]
           [r (send-frame-chunk (endpoint-fd e)
                                (+ (pending-buffer p) (pending-sent p))
                                (if more? 1 (fx- (pending-size p) (pending-sent p)))
                                batch)])
      (cond
        [(eq? r 'again) (queue-push-front! q p) (want-writable! e #t) #f]
        [(eq? r 'closed)
         (discard! p)
         (let drop () (let ([p (queue-pop! q #f)]) (when p (discard! p) (drop))))
         (let ([r (endpoint-out-ring e)]) (when r (ring-state-set! r 'dead)))
         (want-writable! e #f)
         #f]
        [else
         (unless (null? batch)
           (pending-fds-set! p (list-tail fds (length batch)))
           (when (null? (pending-fds p))
             (for-each close-fd (pending-close-after p))
             (pending-close-after-set! p '())))
         (pending-sent-set! p (fx+ (pending-sent p) r))
         (if (fx= (pending-sent p) (pending-size p))
             (buffer-free (pending-buffer p) (pending-size p))
             (queue-push-front! q p))
         #t])))

  ;; One ring item: 'done, 'blocked (the ring is full) or 'socket (its ring
  ;; is closed by the reader, or its peer gone: the message goes whole over
  ;; the socket; a retire frame is dropped).
  (define (ring-step! e p)
    (let ([r (ring-item-ring p)])
      (define (result res)
        (case res
          [(ok) #t]
          [(full) 'blocked]
          [else (ring-state-set! r 'dead) 'socket]))
      (cond
        [(eq? (ring-state r) 'dead)
         (if (eq? (ring-item-kind p) 'retire) 'done 'socket)]
        [(eq? (ring-item-kind p) 'retire)
         (let ([res (result (ring-put! r frame-retire 0 0 (lambda (a) (void))))])
           (cond
             [(eq? res #t) (ring-state-set! r 'retired) 'done]
             [(eq? res 'socket) 'done]
             [else res]))]
        [else
         (let ([buf (ring-item-buffer p)] [size (ring-item-size p)] [aux (if (ring-item-raw? p) 1 0)])
           (let loop ()
             (let ([sent (ring-item-sent p)])
               (cond
                 [(fx= sent size)
                  (buffer-free buf size)
                  'done]
                 [(fx< sent 0)
                  (let ([res (result (ring-put! r frame-large aux 8 (lambda (a) (foreign-set! 'unsigned-64 a 0 size))))])
                    (if (eq? res #t) (begin (ring-item-sent-set! p 0) (loop)) res))]
                 [(fx<= size (ring-frame-limit r))
                  (let ([res (result (ring-put! r frame-message aux size
                                                (lambda (a) (memmove! a buf size))))])
                    (if (eq? res #t) (begin (ring-item-sent-set! p size) (loop)) res))]
                 [else
                  (let* ([want (fxmin (fx- size sent) (fxsrl (ring-frame-limit r) 1))]
                         [n (ring-room r want)])
                    (if (fx< n (fxmin want 4096))
                        'blocked
                        (let ([res (result (ring-put! r frame-chunk 0 n
                                                      (lambda (a) (memmove! a (+ buf sent) n))))])
                          (if (eq? res #t) (begin (ring-item-sent-set! p (fx+ sent n)) (loop)) res))))]))))])))

  ;; The socket frame of a ring item whose ring is gone, from its start.
  (define (ring-item->socket-frame p)
    (let* ([n (ring-item-size p)] [size (fx+ header-size n)] [buf (buffer-alloc size)])
      (foreign-set! 'unsigned-64 buf 0 n)
      (foreign-set! 'unsigned-32 buf 8 0)
      (foreign-set! 'unsigned-32 buf 12 (if (ring-item-raw? p) 1 0))
      (memmove! (+ buf header-size) (ring-item-buffer p) n)
      (free-item! p)
      (make-pending buf size 0 '() '() '())))

  ;; With the lock held.  need: #f, no more waiting; or the payload bytes
  ;; awaited: a kick on the ring's space eventfd runs flush!.  The endpoint
  ;; is registered meanwhile, so that wait-for-output! sees its queue and
  ;; a hang-up drops it.
  (define (want-room! e r need)
    (let ([efd (ring-space-efd r)])
      (if need
          (begin
            (register! e)
            (unless (ring-watched? r)
              (ring-watched?-set! r #t)
              (watch-level! efd epoll-in (lambda (mask) (eventfd-drain! efd) (flush! e))))
            ;; room made before the flag was seen: no kick comes
            (when (ring-want-room! r need) (eventfd-signal! efd)))
          (when (ring-watched? r)
            (ring-watched?-set! r #f)
            (unwatch-level! efd)))))

  (define (want-writable! e on?)
    (unless (eq? on? (endpoint-writing? e))
      (when on? (register! e))
      (endpoint-writing?-set! e on?)
      (update-interest! e)))

  (define (flush! e) (with-endpoint-lock e (drain! e)))

  ;; Returns once no endpoint has queued output (sent, or dropped because
  ;; the peer is gone); a place calls it before it exits.  Endpoints with
  ;; queued output are always registered (want-writable!).
  ;; (A frame being written is off the queue for a moment, under the
  ;; endpoint's lock: each queue is looked at under its lock.)
  ;; The poller does the writing while this sleeps; this only looks, less
  ;; and less often (a place whose reader never reads waits here until the
  ;; program ends).
  (define (wait-for-output! sleep)
    (let loop ([pause 0.001])
      (when (exists (lambda (e)
                      (with-endpoint-lock e (not (queue-empty? (endpoint-out e)))))
                    (with-interrupts-disabled
                      (with-mutex registered-lock
                        (vector->list (hashtable-values registered)))))
        (sleep pause)
        (loop (flmin 0.05 (fl* 2. pause))))))

  ;; ---------------------------------------------------------------- receiving
  ;; Reads what the socket has and delivers the complete frames.  Called by
  ;; the poller, and by a getter that finds the inbox empty (so a reply that
  ;; arrives while it spins needs no thread wake-up).  The parser state is
  ;; used under the endpoint lock; frames are delivered after it is released.
  ;; Frames for the inbox are queued before the lock is released, so two
  ;; pullers can never deliver out of order.  A hook (the launcher's control
  ;; channel, pulled by the poller alone) gets them after.
  ;; hang-up?: every peer end is closed (the ring read here, drained, ends).
  (define pull!
    (case-lambda
      [(e) (pull! e #f)]
      [(e hang-up?) (pull-frames! e hang-up?)]))

  (define (pull-frames! e hang-up?)
    (let ([hook (endpoint-hook e)])
      (let-values ([(frames end?)
                    (with-endpoint-lock e
                      ;; (a poller thread may come here after a look at
                      ;; reading?, just as e is sent away: it reads nothing)
                      (if (or (endpoint-ended? e) (not (endpoint-reading? e)))
                          (values '() #f)
                          (let-values ([(frames end?) (take-frames! e hang-up?)])
                            (unless hook
                              (for-each (lambda (f) (async-channel-push-back! (endpoint-inbox e) f)) frames)
                              (when end? (endpoint-reading?-set! e #f)
                                (async-channel-push-back! (endpoint-inbox e) 'closed)))
                            (values frames end?))))])
        (when end? (unregister! e))
        (when hook
          (for-each (lambda (f) (hook (car f) (cddr f))) frames)
          (when end? (hook #f '()))))))

  ;; With the lock held: (values frames-in-order end-of-stream?).
  ;; read: (lambda (address length) ...) with recv-chunk's results.  Stops
  ;; after read-budget bytes even if more is there: epoll reports the rest
  ;; again, after the other descriptors (a peer that never stops writing
  ;; must not starve them).
  (define read-budget (* 4 1024 1024))

  (define (read-frames! e acc read budget)
    (let-values ([(acc budget end?) (read-source! e acc read budget)])
      (values (reverse acc) end?)))

  ;; With the lock held: (values frames-in-order end-of-stream?) from the
  ;; ring while one is active, else from the socket; an offer taken from
  ;; the socket switches to its ring at once.
  (define (take-frames! e hang-up?)
    (let loop ([acc '()] [budget read-budget])
      (let ([acc (if (endpoint-in-ring e) (pull-ring! e acc hang-up?) acc)])
        (if (endpoint-in-ring e)
            (values (reverse acc) #f)
            (let-values ([(acc budget end?)
                          (read-source! e acc (lambda (a n) (recv-chunk (endpoint-fd e) a n)) budget)])
              (if (and (endpoint-in-ring e) (not end?))
                  (loop acc budget)
                  (values (reverse acc) end?)))))))

  ;; With the lock held: (values acc budget-left end-of-stream?); stops at
  ;; an offer (the rest of the read area waits for the ring's end).
  (define (read-source! e acc read budget)
    (let ([acc (if (endpoint-area-paused? e)
                   (begin (endpoint-area-paused?-set! e #f) (parse-area! e acc))
                   acc)])
      (let loop ([acc acc] [budget budget])
        (if (or (fx<= budget 0) (endpoint-in-ring e))
            (values acc budget #f)
            (let-values ([(acc n end?) (read-step! e acc read)])
              (if n (loop acc (fx- budget n)) (values acc budget end?)))))))

  ;; With the lock held: adds the ring's frames to acc (newest first).  A
  ;; retire frame, or the writer's hang-up, ends the ring here.
  (define (pull-ring! e acc hang-up?)
    (let ([r (endpoint-in-ring e)] [acc acc] [retired? #f])
      (define (deliver! bv raw?) (set! acc (cons (list* bv raw? '()) acc)))
      (let ([ok? (ring-read! r
                   (lambda (kind aux a len)
                     (cond
                       [(fx= kind frame-message)
                        (let ([bv (make-bytevector len)])
                          (memcpy-to-bytevector! bv a len)
                          (deliver! bv (fx= aux 1)))
                        #t]
                       [(fx= kind frame-large)
                        (drop-large! e)
                        (let ([size (foreign-ref 'unsigned-64 a 0)])
                          (endpoint-large-set! e (vector (buffer-alloc size) size 0 (fx= aux 1))))
                        #t]
                       [(fx= kind frame-chunk)
                        (let ([l (endpoint-large e)])
                          (when l
                            (let ([buf (vector-ref l 0)] [size (vector-ref l 1)] [got (vector-ref l 2)])
                              (memmove! (+ buf got) a len)
                              (vector-set! l 2 (fx+ got len))
                              (when (fx= (fx+ got len) size)
                                (let ([bv (make-bytevector size)])
                                  (memcpy-to-bytevector! bv buf size)
                                  (drop-large! e)
                                  (deliver! bv (vector-ref l 3)))))))
                        #t]
                       [(fx= kind frame-retire) (set! retired? #t) #f]
                       [else #t])))])
        (when (or retired? hang-up? (not ok?)) (drop-in-ring! e))
        acc)))

  ;; With the lock held: a message in chunks that will not be finished is dropped.
  (define (drop-large! e)
    (let ([l (endpoint-large e)])
      (when l
        (buffer-free (vector-ref l 0) (vector-ref l 1))
        (endpoint-large-set! e #f))))

  (define (drop-in-ring! e)
    (let ([r (endpoint-in-ring e)])
      (endpoint-in-ring-set! e #f)
      (drop-large! e)
      (when (ring-watched? r)
        (ring-watched?-set! r #f)
        (unwatch-level! (ring-data-efd r)))
      (ring-release! r)))

  ;; With the lock held: the offer frame whose header is at `header` (its
  ;; descriptors are the next three received) becomes the ring read here.
  ;; Its data eventfd, watched by the poller, is kicked by the writer only
  ;; while this side asks for it (see update-interest!).
  (define (adopt-offer! e header capacity)
    (let-values ([(fds rest) (split (endpoint-fds e) (foreign-ref 'unsigned-32 header 8))])
      (endpoint-fds-set! e rest)
      (when (endpoint-in-ring e) (drop-in-ring! e))
      (if (fx= (length fds) 3)
          (let ([r (adopt-reader-ring 'place-channel-get (car fds) (cadr fds) (caddr fds) capacity)]
                [efd (cadr fds)])
            (endpoint-in-ring-set! e r)
            (ring-watched?-set! r #t)
            (watch-level! efd epoll-in
              (lambda (mask)
                ;; (the ring may be gone, its descriptor closed)
                (when (with-endpoint-lock e
                        (and (eq? (endpoint-in-ring e) r) (begin (eventfd-drain! efd) #t)))
                  (pull! e))))
            (let ([in? (and (endpoint-reading? e) (not (endpoint-quiet? e)))])
              (when (and (ring-want-data! r in?) in?) (eventfd-signal! efd))))
          (for-each close-fd fds))))

  ;; One read: (values acc bytes-read-or-#f end-of-stream?); #f when the
  ;; source has nothing now, has ended, or gave less than asked (it is
  ;; drained for now: stopping there saves the read that would fail).
  ;; Between frames, a read asks for up to read-area bytes into the header
  ;; area, and every frame complete there is taken at once (a small message
  ;; costs one read).  A frame that does not fit goes on into a payload
  ;; buffer of its size, its header kept at the start of the area; what is
  ;; left of a header (under 16 bytes) moves to the start.
  (define read-area 4096)

  (define (read-step! e acc read)
    (let* ([p (endpoint-payload e)]
           [want (if p
                     (fx- (endpoint-payload-size e) (endpoint-payload-got e))
                     (fx- read-area (endpoint-header-got e)))])
      (let-values ([(r fds) (if p
                                (read (+ p (endpoint-payload-got e)) want)
                                (read (+ (endpoint-header e) (endpoint-header-got e)) want))])
        (unless (null? fds) (endpoint-fds-set! e (append (endpoint-fds e) fds)))
        (cond
          [(eq? r 'again) (values acc #f #f)]
          [(or (eq? r 'closed) (eqv? r 0))
           (endpoint-ended?-set! e #t)
           (values acc #f #t)]
          [else
           (let ([acc (if p
                          (begin
                            (endpoint-payload-got-set! e (fx+ (endpoint-payload-got e) r))
                            (if (fx= (endpoint-payload-got e) (endpoint-payload-size e))
                                (let ([f (take-payload-frame! e)]) (if f (cons f acc) acc))
                                acc))
                          (begin
                            (endpoint-header-got-set! e (fx+ (endpoint-header-got e) r))
                            (parse-area! e acc)))])
             (values acc (and (fx= r want) r) #f))]))))

  ;; With the lock held: takes the frames complete in the header area.
  (define (parse-area! e acc)
    (let ([area (endpoint-header e)] [got (endpoint-header-got e)])
      (let loop ([pos 0] [acc acc])
        (let ([avail (fx- got pos)])
          (if (fx< avail header-size)
              (begin
                (unless (fx= pos 0) (memmove! area (+ area pos) avail))
                (endpoint-header-got-set! e avail)
                acc)
              (let ([size (foreign-ref 'unsigned-64 area pos)] [body (fx- avail header-size)])
                (cond
                  [(and (fx<= size body) (fx= offer-kind (foreign-ref 'unsigned-32 area (fx+ pos 12))))
                   (adopt-offer! e (+ area pos) (foreign-ref 'unsigned-64 area (fx+ pos header-size)))
                   (let ([next (fx+ pos header-size size)])
                     (memmove! area (+ area next) (fx- got next))
                     (endpoint-header-got-set! e (fx- got next))
                     (endpoint-area-paused?-set! e #t)
                     acc)]
                  [(fx<= size body)
                    (let ([bv (make-bytevector size)])
                      (memcpy-to-bytevector! bv (+ area pos header-size) size)
                      (loop (fx+ pos header-size size) (cons (frame bv e (+ area pos)) acc)))]
                  [else
                    (let ([buf (buffer-alloc size)])
                      (memmove! buf (+ area pos header-size) body)
                      (unless (fx= pos 0) (memmove! area (+ area pos) header-size))
                      (endpoint-header-got-set! e header-size)
                      (endpoint-payload-set! e buf)
                      (endpoint-payload-size-set! e size)
                      (endpoint-payload-got-set! e body)
                      acc)])))))))

  ;; With the lock held: the frame whose payload buffer is complete (#f
  ;; for an offer, taken).
  (define (take-payload-frame! e)
    (let ([bv (make-bytevector (endpoint-payload-size e))])
      (memcpy-to-bytevector! bv (endpoint-payload e) (endpoint-payload-size e))
      (buffer-free (endpoint-payload e) (endpoint-payload-size e))
      (endpoint-payload-set! e #f)
      (endpoint-header-got-set! e 0)
      (if (fx= offer-kind (foreign-ref 'unsigned-32 (endpoint-header e) 12))
          (begin (adopt-offer! e (endpoint-header e) (bytevector-u64-native-ref bv 0)) #f)
          (frame bv e (endpoint-header e)))))

  ;; A delivered frame: (bytevector raw? . fds), its descriptors taken from
  ;; those received so far (they ride on the frame's first bytes).
  (define (frame bv e header)
    (let-values ([(mine rest) (split (endpoint-fds e) (foreign-ref 'unsigned-32 header 8))])
      (endpoint-fds-set! e rest)
      (cons bv (cons (fx= 1 (foreign-ref 'unsigned-32 header 12)) mine))))

  (define (split l n)
    (if (or (fx= n 0) (null? l))
        (values '() l)
        (let-values ([(a b) (split (cdr l) (fx- n 1))]) (values (cons (car l) a) b))))

  ;; The poller calls (hook bytevector fds) for each frame, and (hook #f '())
  ;; at the end of the stream, instead of queueing them.
  ;; (Such an endpoint talks to a program that reads plain frames: no rings.)
  (define (endpoint-set-frame-hook! e hook)
    (endpoint-exclusive?-set! e #f)
    (endpoint-hook-set! e hook)
    (start-reading! e))

  ;; ---------------------------------------------------------------- getting
  (define-condition-type &peer-ended &error make-peer-ended peer-ended-error?)

  ;; Item from the inbox -> message.  The end marker stays for later gets.
  (define (open-item e item decode)
    (if (eq? item 'closed)
        (begin
          (async-channel-push-back! (endpoint-inbox e) 'closed)
          (raise (condition (make-peer-ended) (make-who-condition 'place-channel-get)
                            (make-message-condition "peer place ended"))))
        (decode (car item) (cadr item) (cddr item))))

  ;; A getter that finds nothing reads the socket itself for a while
  ;; (yielding to other threads between tries) before it parks: a reply to
  ;; a message just sent usually arrives within that time, and then no
  ;; thread has to be woken.  While getters read for themselves the poller
  ;; is not told of arrivals (`quiet?`: its wake-ups, one per message, took
  ;; a third of a round trip).  Whoever would wait for the poller turns
  ;; the interest back on first, under the lock: a getter before it parks
  ;; (counted in `parked`, so no later spinner turns it off under it), and
  ;; any evt use of the endpoint, for good.  A thread killed while it spins
  ;; leaves the endpoint quiet, which every later waiter undoes.
  ;; A getter on a ring spins for a time instead (a look at a ring costs
  ;; little; a writer may be copying a large message in): the next
  ;; message of a busy channel then needs no wake-up.
  (define spin-tries 40)
  (define ring-spin-ns 100000)

  (define (endpoint-get e decode)
    (start-reading! e)
    (let ([inbox (endpoint-inbox e)])
      (open-item e
                 (or (async-channel-try-get inbox)
                     (and (ring-has-frames? e) (begin (pull! e) (async-channel-try-get inbox)))
                     (begin
                       (with-endpoint-lock e
                         (when (and (fx= 0 (endpoint-parked e)) (not (endpoint-evt-used? e)))
                           (endpoint-quiet?-set! e #t)
                           (update-interest! e)))
                       (let spin ([i 0] [deadline #f])
                         ;; an empty ring is seen without the lock
                         (unless (and (endpoint-in-ring e) (not (ring-has-frames? e))) (pull! e))
                         (or (async-channel-try-get inbox)
                             (if (if (endpoint-in-ring e)
                                     (or (not deadline) (fx< (fxand i 15) 15) (fx< (now-ns) deadline))
                                     (fx< i spin-tries))
                                 (begin
                                   (yield)
                                   ;; the writer may wait for this core
                                   (when (and (endpoint-in-ring e) (fx= 3 (fxand i 3))) (os-yield!))
                                   (spin (fx+ i 1) (or deadline (and (endpoint-in-ring e) (fx+ (now-ns) ring-spin-ns)))))
                                 (begin
                                   (with-endpoint-lock e
                                     (endpoint-parked-set! e (fx+ (endpoint-parked e) 1))
                                     (endpoint-quiet?-set! e #f)
                                     (update-interest! e))
                                   (let ([item (async-channel-get inbox)])
                                     (with-endpoint-lock e
                                       (endpoint-parked-set! e (fx- (endpoint-parked e) 1)))
                                     item)))))))
                 decode)))

  ;; A look without the lock: the ring read here has frames.
  (define (ring-has-frames? e)
    (let ([r (endpoint-in-ring e)]) (and r (ring-ready? r))))

  (define (endpoint-evt e decode)
    (guard-evt
      (lambda ()
        (start-reading! e)
        (with-endpoint-lock e
          (endpoint-evt-used?-set! e #t)
          (endpoint-quiet?-set! e #f)
          (update-interest! e))
        (wrap-evt (endpoint-inbox e) (lambda (item) (open-item e item decode)))))))
