#!chezscheme
;;; Sending on a place channel endpoint: the send queue and its state
;;; machine, and the choice between the socket and a ring.
;;;
;;; Sending never blocks: a put writes what the socket (or ring) takes at
;;; once and queues the rest; the queue holds socket items
;;; (socket-transport.sls) and ring items (ring-transport.sls) in order,
;;; and is drained by the putter and then by the poller (EPOLLOUT on the
;;; socket, or a kick on the ring's space eventfd).  A message without
;;; descriptors goes into the ring when there is one.  A put that finds
;;; the ring full waits, yielding, while the reader makes progress, then
;;; queues (puts never wait for a reader that does not read).
(library (spindle private places send)
  (export endpoint-send! flush! retire-out-ring!)
  (import (chezscheme)
          (only (spindle private os memory) memcpy-from-bytevector!) (only (spindle private os sockets) max-fds-per-message)
          (only (spindle private os descriptors) close-fd)
          (only (spindle private os threads) os-yield!)
          (only (spindle private core scheduler) yield!)
          (spindle private core queue)
          (spindle private places shm-ring) (spindle private places frame)
          (spindle private places endpoint)
          (spindle private places socket-transport) (spindle private places ring-transport))

  (define offer-after 8)                  ; messages before a busy channel gets a ring

  ;; How long a put that finds the ring full waits with no progress of its
  ;; reader before it queues its message.
  (define full-patience-ns 2000000)

  ;; Sends the frame of payload bv with the descriptors of owners
  ;; (endpoints or shared vectors, by their fd), then closes close-after.
  (define (endpoint-send! e bv raw? owner-fds owners close-after)
    (when (fx> (length owner-fds) (fx* max-fds-per-message frame-header-size))
      (assertion-violation 'place-channel-put "too many channels and shared vectors in one message"
                           (length owner-fds)))
    (cond
      ;; a peer gone for good: dropped, as a queued message is when its
      ;; send finds the peer gone (no sendmsg, no ring offered per put)
      [(send-state-peer-gone? (endpoint-send-state e)) (for-each close-fd close-after)]
      [(and (null? owner-fds) (null? close-after))
        ;; A full ring makes the put wait (yielding) while its reader
        ;; makes progress, then queue: no copy, no kick while both run.
        (let wait ([deadline #f] [seen #f])
          (let ([head (with-endpoint-lock e (send-plain! e bv raw? (or (not deadline) (fx< (now-ns) deadline))))])
            (when head
              (yield!)
              (os-yield!)
              (wait (if (eqv? head seen) deadline (fx+ (now-ns) full-patience-ns)) head))))]
      [else
        (let ([p (bytevector->socket-item bv (message-kind raw?) owner-fds owners close-after)])
          (with-endpoint-lock e
            (retire-out-ring! e)
            (queue-item! e p)))]))

  ;; With the lock held.  Returns #f once sent or queued, or, if wait? and
  ;; a message that fits the ring finds it full, the reader's position
  ;; seen (the caller tries again soon).
  (define (send-plain! e bv raw? wait?)
    (let* ([n (bytevector-length bv)] [r (out-ring-for! e n)] [q (send-state-queue (endpoint-send-state e))])
      (cond
        [(not r) (queue-item! e (bytevector->socket-item bv (message-kind raw?) '() '() '())) #f]
        [(and (queue-empty? q) (fx<= n (ring-frame-limit r)))
         (case (ring-put! r (message-kind raw?) n (lambda (a) (memcpy-from-bytevector! a bv n)))
           [(ok) #f]
           [(closed) (ring-state-set! r 'dead) (queue-item! e (ring-message-item r bv n raw?)) #f]
           [else (if wait? (ring-head-seen r) (begin (queue-item! e (ring-message-item r bv n raw?)) #f))])]
        [else (queue-item! e (ring-message-item r bv n raw?)) #f])))

  ;; With the lock held: the active ring to write a message of n bytes
  ;; into, offering one if the channel is busy; or #f.
  (define (out-ring-for! e n)
    (let* ([s (endpoint-send-state e)] [r (send-state-ring s)] [q (send-state-queue s)])
      (cond
        [(and r (eq? (ring-state r) 'active))
         ;; a large message on a small ring: a large ring takes over
         (if (and (ring-too-small? r n) (queue-empty? q))
             (begin
               (retire-out-ring! e)
               (and (queue-empty? q) (offer-ring! e n)))
             r)]
        [(not (send-state-exclusive? s)) #f]
        [else
         (send-state-unringed-set! s (fx+ 1 (send-state-unringed s)))
         (and (or (fx>= (send-state-unringed s) offer-after) (offer-at-once? n))
              (queue-empty? q)
              (offer-ring! e n))])))

  ;; With the lock held: the ring offered, its offer queued; or #f.
  (define (offer-ring! e n)
    (let ([offer (ring-offer! e n)])
      (and offer
           (begin
             (queue-item! e offer)
             (send-state-ring (endpoint-send-state e))))))

  ;; With the lock held: the active ring (if any) ends after what is queued.
  (define (retire-out-ring! e)
    (let ([r (send-state-ring (endpoint-send-state e))])
      (when (and r (eq? (ring-state r) 'active))
        (ring-state-set! r 'retiring)
        (queue-item! e (ring-retire-item r)))))

  ;; With the lock held.
  (define (queue-item! e p)
    ;; a non-empty queue is already being drained (EPOLLOUT armed, or a
    ;; ring's room awaited)
    (let* ([q (send-state-queue (endpoint-send-state e))] [idle? (queue-empty? q)])
      (queue-push! q p)
      (when idle? (drain! e))))

  (define (discard! p)
    (if (ring-item? p) (ring-item-discard! p) (socket-item-discard! p)))

  ;; With the endpoint lock held: writes queued items until the socket is
  ;; full, then arms EPOLLOUT, or until the ring is, then asks for a kick
  ;; when the reader makes room.  A vanished peer drops everything queued.
  (define (drain! e)
    (let* ([s (endpoint-send-state e)] [q (send-state-queue s)])
      (let loop ()
        (let ([p (queue-pop! q #f)])
          (when p
            (if (ring-item? p)
                (case (ring-step! e p)
                  [(done) (loop)]
                  [(blocked)
                   (queue-push-front! q p)
                   (want-room! e (ring-item-ring p) (ring-item-need p) (lambda () (flush! e)))]
                  [else (queue-push-front! q (ring-item->socket-item p)) (loop)])
                (case (socket-step! e p)
                  [(sent) (loop)]
                  [(partial) (queue-push-front! q p) (loop)]
                  [(full) (queue-push-front! q p) (want-writable! e #t)]
                  [else
                   (send-state-peer-gone?-set! s #t)
                   (let drop () (let ([p (queue-pop! q #f)]) (when p (discard! p) (drop))))
                   (let ([r (send-state-ring s)]) (when r (ring-state-set! r 'dead)))
                   (want-writable! e #f)])))))
      (when (queue-empty? q)
        (when (send-state-writing? s) (want-writable! e #f))
        (let ([r (send-state-ring s)])
          (when r (want-room! e r #f #f))))))

  (define (flush! e) (with-endpoint-lock e (drain! e))))
