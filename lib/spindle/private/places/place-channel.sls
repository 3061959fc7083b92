#!chezscheme
;;; Place channel endpoints: what (spindle place) uses of them.
;;;
;;; An endpoint is one end of a Unix stream socket (endpoint.sls) carrying
;;; frames (frame.sls).  Sending never blocks: what the socket does not
;;; take at once is queued for the poller (send.sls,
;;; socket-transport.sls).  Receiving starts when an endpoint is first read
;;; from (got from, or synced on): from then on the poller reads its frames
;;; into its inbox (receive.sls, inbox.sls), and getters decode them
;;; (endpoint-get.sls).  A busy channel made in this process moves its messages
;;; without descriptors to a shared-memory ring (ring-transport.sls,
;;; shm-ring.sls).
;;;
;;; Here: making endpoints, the poller's events, and handing an endpoint
;;; to another place.
(library (spindle private places place-channel)
  (export endpoint? make-endpoint-pair descriptor->endpoint endpoint-fd
          endpoint-send! endpoint-get endpoint-evt endpoint-set-frame-hook!
          endpoint-record-type watch-descriptor!
          wait-for-output! endpoint-take-unread! endpoint-read-to-end! endpoint-closed?)
  (import (chezscheme)
          (only (spindle private os descriptors) close-fd set-nonblocking! descriptor-inode) (only (spindle private os polling) epoll-out epoll-in epoll-hangup-mask) (only (spindle private os sockets) make-socket-pair)
          (spindle private places shm-ring) (spindle private places frame)
          (spindle private places inbox) (spindle private places endpoint)
          (spindle private places send) (spindle private places ring-transport)
          (spindle private places receive) (spindle private places endpoint-get))

  ;; unread, unread-fds: what the sender had read from this channel but not
  ;; delivered (see endpoint-take-unread!); parsed before the socket.
  (define descriptor->endpoint
    (case-lambda
      ;; a descriptor made here, for this endpoint alone
      [(fd) (let ([e (descriptor->endpoint fd #f '())])
              (send-state-exclusive?-set! (endpoint-send-state e) #t)
              e)]
      [(fd unread unread-fds)
       (let* ([known (endpoint-of-inode (descriptor-inode fd))]
              [e (or known (begin (set-nonblocking! fd) (track! (make-endpoint fd))))])
         (when known (close-fd fd))
         (when unread
           (with-endpoint-lock e
             (let-values ([(frames end?) (read-frames! e '() (bytes-reader unread unread-fds) (greatest-fixnum))])
               (for-each (lambda (f) (inbox-put! (endpoint-inbox e) f)) frames))))
         e)]))

  (define (make-endpoint-pair who)
    (let-values ([(a b) (make-socket-pair who)])
      (values (descriptor->endpoint a) (descriptor->endpoint b))))

  ;; The poller's handler of an endpoint's socket (see endpoint.sls).
  (define (endpoint-event! e mask)
    (let ([hang-up? (fxlogtest mask epoll-hangup-mask)])
      ;; every peer end is closed: nobody reads the ring this writes
      (when hang-up?
        (with-endpoint-lock e
          (let ([r (send-state-ring (endpoint-send-state e))]) (when r (ring-state-set! r 'dead)))))
      (when (or hang-up? (fxlogtest mask epoll-out)) (flush! e))
      (cond
        [(receive-state-reading? (endpoint-receive-state e))
         (when (fxlogtest mask (fxior epoll-in epoll-hangup-mask)) (pull! e hang-up?))]
        ;; a write-only registration whose peer is gone
        [hang-up? (unregister! e)])))

  ;; An endpoint sent to another place stops being read here (until a
  ;; thread here gets from it again), so the receiver gets what comes.
  ;; Returns what this process has read from e but not handed to a getter
  ;; (queued frames, and the start of a frame), as the bytes and
  ;; descriptors that carried them; the receiver of e parses them first.
  (define (endpoint-take-unread! e)
    (with-endpoint-lock e
      (let ([rs (endpoint-receive-state e)])
        ;; rings: other places may now write and read this endpoint
        (send-state-exclusive?-set! (endpoint-send-state e) #f)
        (retire-out-ring! e)
        (let ([r (receive-state-ring rs)])
          (when r
            (ring-close! r)
            (for-each (lambda (f) (inbox-put! (endpoint-inbox e) f))
                      (reverse (pull-ring! e '() #t)))))
        (when (receive-state-reading? rs)
          (receive-state-reading?-set! rs #f)
          (update-interest! e))
        (let* ([frames (filter frame? (inbox-take-all! (endpoint-inbox e)))]
               [partial (partial-frame-bytes e)]
               [p (receive-state-parser rs)]
               [fds (append (apply append (map frame-fds frames)) (parser-fds p))])
          (parser-fds-set! p '())
          (if (and (null? frames) (not partial) (null? fds))
              (values #f '())
              (let-values ([(port get) (open-bytevector-output-port)])
                (for-each
                  (lambda (f)
                    (put-bytevector port (frame-header-bytevector (bytevector-length (frame-payload f))
                                                                   (length (frame-fds f))
                                                                   (message-kind (frame-raw? f))))
                    (put-bytevector port (frame-payload f)))
                  frames)
                (when partial (put-bytevector port partial))
                (values (get) fds)))))))

  ;; The process at the other end has ended (a reaped place): the poller
  ;; reads what it left into the inbox, and at the end of the stream the
  ;; endpoint lets its descriptors go (see release-ended! in receive.sls).
  ;; Not for an endpoint sent to another place meanwhile (no longer
  ;; exclusive): what comes belongs to that place.
  (define (endpoint-read-to-end! e)
    (when (with-endpoint-lock e (send-state-exclusive? (endpoint-send-state e)))
      (start-reading! e)))

  ;; The poller calls (hook bytevector fds) for each frame, and (hook #f '())
  ;; at the end of the stream, instead of queueing them.
  ;; (Such an endpoint talks to a program that reads plain frames: no rings.)
  (define (endpoint-set-frame-hook! e hook)
    (send-state-exclusive?-set! (endpoint-send-state e) #f)
    (endpoint-hook-set! e hook)
    (start-reading! e))

  (set-endpoint-event-handler! endpoint-event!))
