#!chezscheme
;;; The ring transport of place channels: both sides of the ring-offer
;;; protocol over shared-memory rings (spindle private places shm-ring).
;;;
;;; An endpoint made in this process and never sent away (`exclusive?`: it
;;; is the only writer of its direction) offers its peer a ring once the
;;; channel is busy (send.sls decides when): an offer frame on the socket
;;; carries the ring's memfd and its two eventfds.  From then on its
;;; messages without descriptors go into the ring, written once, with no
;;; system call while the reader is awake; the socket keeps descriptor
;;; passing and end-of-stream.  Order is kept because each side reads one
;;; source at a time:
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
;;; half a ring goes in chunks.
;;;
;;; A ring written here is in one of the states (ring-state): active,
;;; retiring (its retire frame queued), retired (retire frame published),
;;; dead (closed by its reader, or the peer is gone).
(library (spindle private places ring-transport)
  (export ;; writing
          ring-item? ring-message-item ring-retire-item ring-item-ring ring-item-discard!
          ring-step! ring-item-need ring-item->socket-item want-room!
          ring-offer! ring-too-small? offer-at-once?
          ;; reading
          adopt-offer! pull-ring! drop-in-ring!)
  (import (chezscheme)
          (only (spindle private os descriptors) close-fd) (only (spindle private os memory) memcpy-to-bytevector! memcpy-from-bytevector! memmove!) (only (spindle private os polling) epoll-in)
          (only (spindle private os polling) eventfd-drain! eventfd-signal!)
          (only (spindle private io poller) watch-level! unwatch-level!)
          (spindle private places buffer-pool) (spindle private places shm-ring)
          (spindle private places frame) (spindle private places endpoint)
          (spindle private places socket-transport))

  (define offer-size (* 64 1024))         ; a message this large gets a ring at once
  (define small-ring (* 256 1024))        ; ring sizes (powers of 2)
  (define large-ring (* 4 1024 1024))
  (define min-chunk 4096)                 ; a chunk waits for this much room (or the whole rest)

  (define (offer-at-once? n) (fx>= n offer-size))

  ;; A large message on a small ring: a large ring should take over.
  (define (ring-too-small? r n)
    (and (fx> n (ring-frame-limit r)) (fx< (ring-capacity r) large-ring)))

  ;; ---------------------------------------------------------------- writing
  ;; A message for a ring, queued: its payload in a frame buffer (the
  ;; sender's bytevector may change after the put).  sent: payload bytes
  ;; published.  announced?: #f while the large frame that starts a message
  ;; in chunks is not published.  kind 'retire: the retire frame, no payload.
  (define-record-type ring-item
    (fields ring kind buffer size raw? (mutable sent) (mutable announced?))
    (nongenerative spindle-place-ring-item-v1) (sealed #t))

  (define (ring-message-item r bv n raw?)
    (let ([buf (buffer-alloc n)])
      (memcpy-from-bytevector! buf bv n)
      (make-ring-item r 'message buf n raw? 0 (fx<= n (ring-frame-limit r)))))

  (define (ring-retire-item r) (make-ring-item r 'retire 0 0 #f 0 #t))

  (define (ring-item-discard! p)
    (when (eq? (ring-item-kind p) 'message)
      (buffer-free (ring-item-buffer p) (ring-item-size p))))

  ;; With the endpoint lock held: one ring item.  Returns 'done, 'blocked
  ;; (the ring is full) or 'socket (its ring is closed by the reader, or its
  ;; peer gone: the message goes whole over the socket; a retire frame is
  ;; dropped).
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
         (let ([res (result (ring-put! r kind-retire 0 (lambda (a) (void))))])
           (cond
             [(eq? res #t) (ring-state-set! r 'retired) 'done]
             [(eq? res 'socket) 'done]
             [else res]))]
        [else
         (let ([buf (ring-item-buffer p)] [size (ring-item-size p)] [kind (message-kind (ring-item-raw? p))])
           (let loop ()
             (let ([sent (ring-item-sent p)])
               (cond
                 [(fx= sent size)
                  (buffer-free buf size)
                  'done]
                 [(not (ring-item-announced? p))
                  (let ([res (result (ring-put! r kind-large large-payload-size
                                                (lambda (a) (large-payload-set! a size kind))))])
                    (if (eq? res #t) (begin (ring-item-announced?-set! p #t) (loop)) res))]
                 [(fx<= size (ring-frame-limit r))
                  (let ([res (result (ring-put! r kind size (lambda (a) (memmove! a buf size))))])
                    (if (eq? res #t) (begin (ring-item-sent-set! p size) (loop)) res))]
                 [else
                  (let* ([want (fxmin (fx- size sent) (fxsrl (ring-frame-limit r) 1))]
                         [n (ring-room r want)])
                    (if (fx< n (fxmin want min-chunk))
                        'blocked
                        (let ([res (result (ring-put! r kind-chunk n
                                                      (lambda (a) (memmove! a (+ buf sent) n))))])
                          (if (eq? res #t) (begin (ring-item-sent-set! p (fx+ sent n)) (loop)) res))))]))))])))

  ;; The payload bytes a blocked item waits room for.
  (define (ring-item-need p)
    (let ([r (ring-item-ring p)] [size (ring-item-size p)] [sent (ring-item-sent p)])
      (cond
        [(or (eq? (ring-item-kind p) 'retire) (not (ring-item-announced? p))) 0]
        [(fx<= size (ring-frame-limit r)) size]
        [else (fxmin (fx- size sent) min-chunk)])))

  ;; The socket frame of a ring item whose ring is gone, from its start.
  (define (ring-item->socket-item p)
    (let ([s (copy->socket-item (ring-item-buffer p) (ring-item-size p) (message-kind (ring-item-raw? p)))])
      (ring-item-discard! p)
      s))

  ;; With the endpoint lock held.  need: #f, no more waiting; or the
  ;; payload bytes awaited: a kick on the ring's space eventfd calls
  ;; (on-room).  The endpoint is registered meanwhile, so that
  ;; wait-for-output! sees its queue and a hang-up drops it.
  (define (want-room! e r need on-room)
    (let ([efd (ring-space-efd r)])
      (if need
          (begin
            (register! e)
            (unless (ring-watched? r)
              (ring-watched?-set! r #t)
              (watch-level! efd epoll-in (lambda (mask) (eventfd-drain! efd) (on-room))))
            ;; room made before the flag was seen: no kick comes
            (when (ring-want-room! r need) (eventfd-signal! efd)))
          (when (ring-watched? r)
            (ring-watched?-set! r #f)
            (unwatch-level! efd)))))

  ;; With the endpoint lock held: makes the ring for a message of n bytes
  ;; the one e writes, and returns the offer frame to queue; or #f.  A
  ;; retired ring large enough is offered again if its last reader has read
  ;; it all; else a new one is made (the reader keeps its own mapping of
  ;; the old one until it has read it).  A failure to make one (out of
  ;; descriptors or memory) leaves the endpoint on the socket for good.
  (define (ring-offer! e n)
    (let* ([s (endpoint-send-state e)] [old (send-state-ring s)]
           [size (if (offer-at-once? n) large-ring small-ring)])
      (let ([r (cond
                 [(and old (fx>= (ring-capacity old) size) (ring-reusable? old)) (ring-reset! old) old]
                 [(and old (eq? (ring-state old) 'retiring)) #f]
                 [else
                  (when old
                    (want-room! e old #f #f)
                    (ring-release! old)
                    (send-state-ring-set! s #f))
                  (guard (c [#t (send-state-exclusive?-set! s #f) #f])
                    (make-writer-ring 'place-channel-put size))])])
        (and r
             (let ([cap (make-bytevector 8)])
               (bytevector-u64-native-set! cap 0 (ring-capacity r))
               (send-state-ring-set! s r)
               (send-state-unringed-set! s 0)
               (bytevector->socket-item cap kind-offer
                                        (list (ring-memfd r) (ring-data-efd r) (ring-space-efd r))
                                        '() '()))))))

  ;; ---------------------------------------------------------------- reading
  ;; With the lock held: adds the ring's frames to acc (newest first).  A
  ;; retire frame, or the writer's hang-up, ends the ring here.
  (define (pull-ring! e acc hang-up?)
    (let* ([rs (endpoint-receive-state e)] [r (receive-state-ring rs)] [acc acc] [retired? #f])
      (define (deliver! bv raw?) (set! acc (cons (make-frame bv raw? '()) acc)))
      (let ([ok? (ring-read! r
                   (lambda (kind a len)
                     (cond
                       [(or (fx= kind kind-fasl) (fx= kind kind-raw))
                        (let ([bv (make-bytevector len)])
                          (memcpy-to-bytevector! bv a len)
                          (deliver! bv (message-kind-raw? kind)))
                        #t]
                       [(fx= kind kind-large)
                        (drop-large! rs)
                        (receive-state-large-set! rs (make-assembly (large-size a) (large-raw? a)))
                        #t]
                       [(fx= kind kind-chunk)
                        (let ([l (receive-state-large rs)])
                          (when l
                            (let ([buf (assembly-buffer l)] [size (assembly-size l)] [got (assembly-got l)])
                              (memmove! (+ buf got) a len)
                              (assembly-got-set! l (fx+ got len))
                              (when (fx= (fx+ got len) size)
                                (let ([bv (make-bytevector size)])
                                  (memcpy-to-bytevector! bv buf size)
                                  (drop-large! rs)
                                  (deliver! bv (assembly-raw? l)))))))
                        #t]
                       [(fx= kind kind-retire) (set! retired? #t) #f]
                       [else #t])))])
        (when (or retired? hang-up? (not ok?)) (drop-in-ring! e))
        acc)))

  ;; With the lock held: a message in chunks that will not be finished is dropped.
  (define (drop-large! rs)
    (let ([l (receive-state-large rs)])
      (when l
        (assembly-free! l)
        (receive-state-large-set! rs #f))))

  (define (drop-in-ring! e)
    (let* ([rs (endpoint-receive-state e)] [r (receive-state-ring rs)])
      (receive-state-ring-set! rs #f)
      (drop-large! rs)
      (when (ring-watched? r)
        (ring-watched?-set! r #f)
        (unwatch-level! (ring-data-efd r)))
      (ring-release! r)))

  ;; With the lock held: the offer frame whose header is at `header` (its
  ;; descriptors are the next three received) becomes the ring read here.
  ;; Its data eventfd, watched by the poller, is kicked by the writer only
  ;; while this side asks for it (see update-interest!); a kick calls
  ;; (on-data).
  (define (adopt-offer! e header capacity on-data)
    (let* ([rs (endpoint-receive-state e)] [p (receive-state-parser rs)])
      (let ([fds (parser-take-fds! p (frame-fd-count header))])
        (when (receive-state-ring rs) (drop-in-ring! e))
        (if (fx= (length fds) 3)
            (let* ([efd (list-ref fds 1)]            ; memfd, data eventfd, space eventfd
                   [r (apply adopt-reader-ring 'place-channel-get (append fds (list capacity)))])
              (receive-state-ring-set! rs r)
              (ring-watched?-set! r #t)
              (watch-level! efd epoll-in
                (lambda (mask)
                  ;; (the ring may be gone, its descriptor closed)
                  (when (with-endpoint-lock e
                          (and (eq? (receive-state-ring rs) r) (begin (eventfd-drain! efd) #t)))
                    (on-data))))
              (let ([in? (and (receive-state-reading? rs) (not (watch-quiet? (endpoint-watch e))))])
                (when (and (ring-want-data! r in?) in?) (eventfd-signal! efd))))
            (for-each close-fd fds))))))
