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
;;; The process's I/O poller (spindle private poller) watches the sockets:
;;; a worker with nothing to run sleeps in it, busy workers look at it on
;;; each timer tick.
(library (spindle private place-channel)
  (export endpoint? make-endpoint-pair descriptor->endpoint endpoint-fd
          endpoint-send! endpoint-get endpoint-evt endpoint-set-frame-hook!
          endpoint-record-type watch-descriptor!
          wait-for-output! endpoint-take-unread!)
  (import (chezscheme) (spindle private unix) (spindle private queue) (spindle private buffer-pool)
          (only (spindle private poller) watch-level! change-level! unwatch-level!)
          (only (spindle async-channel) make-async-channel async-channel-get
                async-channel-try-get async-channel-push-back! async-channel-take-all!)
          (only (spindle thread) yield)
          (only (spindle private sync) wrap-evt guard-evt))

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
            (mutable interest))      ; the epoll mask now registered
    (protocol
      (lambda (new)
        (lambda (fd)
          (new fd (make-mutex) (make-queue) (make-async-channel) #f #f #f #f
               (malloc read-area) 0 #f 0 0 '() #f 0 #f 0))))
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
            (free (endpoint-header e)))
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
      [(fd) (descriptor->endpoint fd #f '())]
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
    (when (fxlogtest mask epoll-out) (flush! e))
    (cond
      [(endpoint-reading? e)
       (when (fxlogtest mask (fxior epoll-in epoll-hangup-mask)) (pull! e))]
      ;; a write-only registration whose peer is gone
      [(fxlogtest mask epoll-hangup-mask) (flush! e) (unregister! e)]))

  ;; With the endpoint lock held: the epoll interest that matches its state.
  (define (update-interest! e)
    (let ([mask (fxior (if (and (endpoint-reading? e) (not (endpoint-quiet? e))) epoll-in 0)
                       (if (endpoint-writing? e) epoll-out 0))])
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
  (define (endpoint-send! e bv raw? owner-fds owners close-after)
    (let* ([n (bytevector-length bv)]
           [size (fx+ header-size n)]
           [buf (buffer-alloc size)])
      (when (fx> (length owner-fds) (fx* max-fds-per-message header-size))
        (buffer-free buf size)
        (assertion-violation 'place-channel-put "too many channels and shared vectors in one message"
                             (length owner-fds)))
      (foreign-set! 'unsigned-64 buf 0 n)
      (foreign-set! 'unsigned-32 buf 8 (length owner-fds))
      (foreign-set! 'unsigned-32 buf 12 (if raw? 1 0))
      (memcpy-from-bytevector! (+ buf header-size) bv n)
      (let ([p (make-pending buf size 0 owners owner-fds close-after)])
        (with-endpoint-lock e
          ;; a non-empty queue is already being drained (EPOLLOUT armed)
          (let ([idle? (queue-empty? (endpoint-out e))])
            (queue-push! (endpoint-out e) p)
            (when idle? (drain! e)))))))

  (define (discard! p)
    (for-each close-fd (pending-close-after p))
    (buffer-free (pending-buffer p) (pending-size p)))

  ;; With the endpoint lock held: writes queued frames until the socket is
  ;; full, then arms EPOLLOUT.  A vanished peer drops everything queued.
  ;; A send carries at most max-fds-per-message descriptors; while more
  ;; remain it sends one byte, so each batch rides on bytes of the header.
  (define (drain! e)
    (let ([q (endpoint-out e)])
      (let loop ()
        (let ([p (queue-pop! q #f)])
          (when p
            (let* ([fds (pending-fds p)]
                   [more? (fx> (length fds) max-fds-per-message)]
                   [batch (if more? (list-head fds max-fds-per-message) fds)]
                   [r (send-frame-chunk (endpoint-fd e)
                                        (+ (pending-buffer p) (pending-sent p))
                                        (if more? 1 (fx- (pending-size p) (pending-sent p)))
                                        batch)])
              (cond
                [(eq? r 'again) (queue-push-front! q p) (want-writable! e #t)]
                [(eq? r 'closed)
                 (discard! p)
                 (let drop () (let ([p (queue-pop! q #f)]) (when p (discard! p) (drop))))
                 (want-writable! e #f)]
                [else
                 (unless (null? batch)
                   (pending-fds-set! p (list-tail fds (length batch)))
                   (when (null? (pending-fds p))
                     (for-each close-fd (pending-close-after p))
                     (pending-close-after-set! p '())))
                 (pending-sent-set! p (fx+ (pending-sent p) r))
                 (if (fx= (pending-sent p) (pending-size p))
                     (begin (buffer-free (pending-buffer p) (pending-size p)) (loop))
                     (begin (queue-push-front! q p) (loop)))])))
          (when (and (queue-empty? q) (endpoint-writing? e)) (want-writable! e #f))))))

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
  (define (pull! e)
    (let ([hook (endpoint-hook e)])
      (let-values ([(frames end?)
                    (with-endpoint-lock e
                      (if (endpoint-ended? e)
                          (values '() #f)
                          (let-values ([(frames end?)
                                        (read-frames! e '() (lambda (a n) (recv-chunk (endpoint-fd e) a n)) read-budget)])
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
    (let loop ([acc acc] [budget budget])
      (if (fx<= budget 0)
          (values (reverse acc) #f)
          (let-values ([(acc n end?) (read-step! e acc read)])
            (if n (loop acc (fx- budget n)) (values (reverse acc) end?))))))

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
                                (cons (take-payload-frame! e) acc)
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
                (if (fx<= size body)
                    (let ([bv (make-bytevector size)])
                      (memcpy-to-bytevector! bv (+ area pos header-size) size)
                      (loop (fx+ pos header-size size) (cons (frame bv e (+ area pos)) acc)))
                    (let ([buf (buffer-alloc size)])
                      (memmove! buf (+ area pos header-size) body)
                      (unless (fx= pos 0) (memmove! area (+ area pos) header-size))
                      (endpoint-header-got-set! e header-size)
                      (endpoint-payload-set! e buf)
                      (endpoint-payload-size-set! e size)
                      (endpoint-payload-got-set! e body)
                      acc))))))))

  ;; With the lock held: the frame whose payload buffer is complete.
  (define (take-payload-frame! e)
    (let ([bv (make-bytevector (endpoint-payload-size e))])
      (memcpy-to-bytevector! bv (endpoint-payload e) (endpoint-payload-size e))
      (buffer-free (endpoint-payload e) (endpoint-payload-size e))
      (endpoint-payload-set! e #f)
      (endpoint-header-got-set! e 0)
      (frame bv e (endpoint-header e))))

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
  (define (endpoint-set-frame-hook! e hook)
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
  (define spin-tries 40)

  (define (endpoint-get e decode)
    (start-reading! e)
    (let ([inbox (endpoint-inbox e)])
      (open-item e
                 (or (async-channel-try-get inbox)
                     (begin
                       (with-endpoint-lock e
                         (when (and (fx= 0 (endpoint-parked e)) (not (endpoint-evt-used? e)))
                           (endpoint-quiet?-set! e #t)
                           (update-interest! e)))
                       (let spin ([i 0])
                         (pull! e)
                         (or (async-channel-try-get inbox)
                             (if (fx< i spin-tries)
                                 (begin (yield) (spin (fx+ i 1)))
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

  (define (endpoint-evt e decode)
    (guard-evt
      (lambda ()
        (start-reading! e)
        (with-endpoint-lock e
          (endpoint-evt-used?-set! e #t)
          (endpoint-quiet?-set! e #f)
          (update-interest! e))
        (wrap-evt (endpoint-inbox e) (lambda (item) (open-item e item decode)))))))
