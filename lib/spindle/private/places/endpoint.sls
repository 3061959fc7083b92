#!chezscheme
;;; Place channel endpoints: one end of a Unix stream socket, its state, the
;;; registry of live endpoints, and their registration with the poller.
;;;
;;; An endpoint's state is used under its lock (a Chez mutex, held with
;;; interrupts disabled: with-endpoint-lock) by getters, putters and the
;;; poller.  It is kept by concept: what is being sent (send-state, used by
;;; send.sls and the two transports), what is being received
;;; (receive-state and its parser, used by receive.sls and
;;; ring-transport.sls), and the epoll read interest (watch, used by
;;; endpoint-get.sls).
;;;
;;; The process's I/O poller (spindle private io poller) watches the
;;; sockets, level-triggered: its handler runs in whichever worker polls,
;;; with interrupts disabled.  A worker with nothing to run sleeps in it,
;;; busy workers look at it on each timer tick.
(library (spindle private places endpoint)
  (export endpoint? make-endpoint endpoint-record-type
          endpoint-fd endpoint-lock endpoint-inbox endpoint-send-state endpoint-receive-state
          endpoint-watch endpoint-hook endpoint-hook-set! with-endpoint-lock
          ;; sending
          send-state-queue send-state-writing? send-state-writing?-set!
          send-state-exclusive? send-state-exclusive?-set!
          send-state-ring send-state-ring-set! send-state-unringed send-state-unringed-set!
          send-state-peer-gone? send-state-peer-gone?-set!
          ;; receiving
          receive-state-reading? receive-state-reading?-set! receive-state-ended? receive-state-ended?-set!
          receive-state-parser receive-state-ring receive-state-ring-set!
          receive-state-large receive-state-large-set!
          read-area-size parser-area parser-got parser-got-set! parser-payload parser-payload-set!
          parser-fds parser-fds-set! parser-take-fds! parser-paused? parser-paused?-set!
          make-assembly assembly? assembly-buffer assembly-size assembly-got assembly-got-set!
          assembly-raw? assembly-free!
          ;; epoll read interest
          watch-mask watch-mask-set! watch-quiet? watch-quiet?-set! watch-parked watch-parked-set!
          watch-evt-used? watch-evt-used?-set!
          ;; registry and poller
          endpoint-of-inode track! set-endpoint-event-handler!
          register! unregister! update-interest! start-reading! watch-descriptor! wait-for-output!
          endpoint-closed? endpoint-close!
          now-ns)
  (import (chezscheme) (only (spindle private core atomic) with-os-mutex)
          (only (spindle private os descriptors) close-fd descriptor-inode) (only (spindle private os memory) malloc free) (only (spindle private os polling) epoll-in epoll-out)
          (only (spindle private os polling) eventfd-signal!)
          (only (spindle private io poller) watch-level! change-level! unwatch-level!)
          (spindle private core queue)
          (spindle private places buffer-pool) (spindle private places shm-ring)
          (spindle private places inbox))

  ;; ---------------------------------------------------------------- state
  ;; What is being sent.  queue: outgoing items, socket frames and ring
  ;; items (send.sls); writing?: EPOLLOUT armed; exclusive?: this endpoint
  ;; may offer rings (made here, never sent away: the only writer of its
  ;; direction); ring: the ring written, or #f; unringed: messages sent
  ;; since it had an active ring; peer-gone?: a send found every peer end
  ;; closed (it never reopens: later sends are dropped at once).
  (define-record-type send-state
    (fields queue (mutable writing?) (mutable exclusive?) (mutable ring) (mutable unringed)
            (mutable peer-gone?))
    (protocol (lambda (new) (lambda () (new (make-queue) #f #f #f 0 #f))))
    (nongenerative spindle-place-send-state-v1) (sealed #t))

  ;; What is being received.  ended?: end of stream read (every peer end is
  ;; closed); ring: the active ring read, or #f; large: the assembly of a
  ;; ring message that comes in chunks, or #f.
  (define-record-type receive-state
    (fields (mutable reading?) (mutable ended?) parser (mutable ring) (mutable large))
    (protocol (lambda (new) (lambda () (new #f #f (make-parser) #f #f))))
    (nongenerative spindle-place-receive-state-v1) (sealed #t))

  ;; The socket's frame parser (receive.sls).  area: read-area-size bytes
  ;; of foreign memory, frame headers and small frames, got bytes of it
  ;; filled; payload: the assembly of a frame too large for the area (its
  ;; header kept at the area's start), or #f; fds: descriptors received and
  ;; not yet given to a frame; paused?: parsing stopped at a ring offer.
  (define read-area-size 4096)
  (define-record-type parser
    (fields area (mutable got) (mutable payload) (mutable fds) (mutable paused?))
    (protocol (lambda (new) (lambda () (new (malloc read-area-size) 0 #f '() #f))))
    (nongenerative spindle-place-parser-v1) (sealed #t))

  ;; The first n descriptors received and not yet given to a frame (they
  ;; belong to the frame whose header says n), taken.
  (define (parser-take-fds! p n)
    (let loop ([fds (parser-fds p)] [n n] [acc '()])
      (if (or (fx= n 0) (null? fds))
          (begin (parser-fds-set! p fds) (reverse acc))
          (loop (cdr fds) (fx- n 1) (cons (car fds) acc)))))

  ;; A payload filled in pieces into a foreign buffer of size bytes.
  (define-record-type assembly
    (fields buffer size (mutable got) raw?)
    (protocol (lambda (new) (lambda (size raw?) (new (buffer-alloc size) size 0 raw?))))
    (nongenerative spindle-place-assembly-v1) (sealed #t))

  (define (assembly-free! a) (buffer-free (assembly-buffer a) (assembly-size a)))

  ;; The epoll read interest (see endpoint-get.sls): mask: the epoll mask now
  ;; registered; quiet?: read interest off (getters read the socket
  ;; themselves); parked: getters parked on the inbox (may overcount);
  ;; evt-used?: the endpoint was used as an evt.
  (define-record-type watch
    (fields (mutable mask) (mutable quiet?) (mutable parked) (mutable evt-used?))
    (protocol (lambda (new) (lambda () (new 0 #f 0 #f))))
    (nongenerative spindle-place-watch-v1) (sealed #t))

  ;; hook: #f, or called by the poller with each frame (endpoint-set-frame-hook!).
  ;; fd: #f once closed (endpoint-close!).
  (define-record-type endpoint
    (fields (mutable fd) lock inbox send-state receive-state watch (mutable hook))
    (protocol
      (lambda (new)
        (lambda (fd)
          (new fd (make-mutex) (make-inbox) (make-send-state) (make-receive-state) (make-watch) #f))))
    (nongenerative spindle-place-endpoint-v1) (sealed #t))

  (define-syntax with-endpoint-lock
    (syntax-rules ()
      [(_ ep body ...) (with-os-mutex (endpoint-lock ep) body ...)]))

  (define endpoint-record-type (record-type-descriptor endpoint))

  ;; ---------------------------------------------------------------- lifetime
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
            (when (endpoint-fd e) (close-fd (endpoint-fd e)))
            (let ([s (endpoint-send-state e)] [r (endpoint-receive-state e)])
              (free (parser-area (receive-state-parser r)))
              (let ([ring (send-state-ring s)]) (when ring (ring-release! ring)))
              (let ([ring (receive-state-ring r)]) (when ring (ring-release! ring)))
              (let ([l (receive-state-large r)]) (when l (assembly-free! l)))))
          (loop)))))

  (define (track! ep)
    (let ([ino (descriptor-inode (endpoint-fd ep))])
      (with-os-mutex reclaim-lock
        (release-dead!)
        (when ino (hashtable-set! by-inode ino (weak-cons ep '())))
        (reclaim ep (cons ino ep))))
    ep)

  ;; The live endpoint of this socket, if this process has one.  (No
  ;; collection can run between release-dead! and the lookup: interrupts
  ;; are disabled.)
  (define (endpoint-of-inode ino)
    (and ino
         (with-os-mutex reclaim-lock
           (release-dead!)
           (let ([w (hashtable-ref by-inode ino #f)])
             (and w (endpoint? (car w)) (car w))))))

  (define (endpoint-closed? e) (not (endpoint-fd e)))

  ;; With the endpoint lock held, the endpoint unregistered and its stream
  ;; read to its end: closes its socket now rather than at a collection.
  ;; It leaves by-inode first (the inode may be given to a new socket).
  ;; Nothing uses the descriptor after: sends are dropped (peer-gone?),
  ;; gets find the end marker, and the poller and getters look at
  ;; endpoint-closed? before they watch or read it.
  (define (endpoint-close! e)
    (let ([fd (endpoint-fd e)])
      (when fd
        (let ([ino (descriptor-inode fd)])
          (with-os-mutex reclaim-lock
            (let ([w (and ino (hashtable-ref by-inode ino #f))])
              (when (and w (eq? (car w) e)) (hashtable-delete! by-inode ino)))))
        (endpoint-fd-set! e #f)
        (close-fd fd))))

  ;; ---------------------------------------------------------------- poller
  ;; registered: fd -> endpoint, under registered-lock, for wait-for-output!.
  (define registered (make-eqv-hashtable))
  (define registered-lock (make-mutex))

  ;; (handler endpoint mask), set once by place-channel.sls: it sends
  ;; (send.sls) and receives (receive.sls), which are built on this library.
  (define event-handler #f)
  (define (set-endpoint-event-handler! h) (set! event-handler h))

  ;; With the endpoint lock held: the epoll interest that matches its state.
  ;; The ring read here asks its writer for wake-ups when the socket would
  ;; be watched (a getter may park); frames that came before that are
  ;; pulled by the poller at once.
  (define (update-interest! e)
    (let* ([rs (endpoint-receive-state e)] [w (endpoint-watch e)]
           [in? (and (receive-state-reading? rs) (not (watch-quiet? w)))]
           [mask (fxior (if in? epoll-in 0) (if (send-state-writing? (endpoint-send-state e)) epoll-out 0))]
           [r (receive-state-ring rs)])
      (when (and r (ring-want-data! r in?) in?)
        (eventfd-signal! (ring-data-efd r)))
      (unless (or (fx= mask (watch-mask w)) (endpoint-closed? e))
        (watch-mask-set! w mask)
        (change-level! (endpoint-fd e) mask))))

  (define (register! e)
    (with-os-mutex registered-lock
      (unless (or (endpoint-closed? e) (hashtable-contains? registered (endpoint-fd e)))
        (hashtable-set! registered (endpoint-fd e) e)
        (watch-mask-set! (endpoint-watch e) 0)
        (watch-level! (endpoint-fd e) 0 (lambda (mask) (event-handler e mask))))))

  (define (unregister! e)
    (with-os-mutex registered-lock
      (when (and (not (endpoint-closed? e)) (eq? (hashtable-ref registered (endpoint-fd e) #f) e))
        (hashtable-delete! registered (endpoint-fd e))
        (unwatch-level! (endpoint-fd e)))))

  ;; Calls (on-readable) in a polling worker whenever fd is readable.
  (define (watch-descriptor! fd on-readable)
    (watch-level! fd epoll-in (lambda (mask) (on-readable))))

  ;; Receiving starts when an endpoint is first read from (got from, or
  ;; synced on): from then on the poller reads its frames into its inbox.
  (define (start-reading! e)
    (let ([rs (endpoint-receive-state e)])
      (unless (or (receive-state-reading? rs) (receive-state-ended? rs))
        (register! e)
        (with-endpoint-lock e
          (unless (receive-state-reading? rs)
            (receive-state-reading?-set! rs #t)
            (update-interest! e))))))

  ;; Returns once no endpoint has queued output (sent, or dropped because
  ;; the peer is gone); a place calls it before it exits.  Endpoints with
  ;; queued output are always registered (want-writable!, want-room!).
  ;; (A frame being written is off the queue for a moment, under the
  ;; endpoint's lock: each queue is looked at under its lock.)
  ;; The poller does the writing while this sleeps; this only looks, less
  ;; and less often (a place whose reader never reads waits here until the
  ;; program ends).
  (define (wait-for-output! sleep)
    (let loop ([pause 0.001])
      (when (exists (lambda (e)
                      (with-endpoint-lock e (not (queue-empty? (send-state-queue (endpoint-send-state e))))))
                    (with-os-mutex registered-lock
                      (vector->list (hashtable-values registered))))
        (sleep pause)
        (loop (flmin 0.05 (fl* 2. pause))))))

  ;; The monotonic clock in nanoseconds, for the spin and wait deadlines of
  ;; endpoint-get.sls and send.sls.
  (define (now-ns)
    (let ([t (current-time 'time-monotonic)])
      (fx+ (fx* (time-second t) 1000000000) (time-nanosecond t)))))
