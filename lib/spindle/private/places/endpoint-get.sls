#!chezscheme
;;; Getting from a place channel endpoint: the getter's spin policy, and the
;;; endpoint as an evt.
;;;
;;; A getter that finds nothing reads the socket itself for a while
;;; (yielding to other threads between tries) before it parks: a reply to
;;; a message just sent usually arrives within that time, and then no
;;; thread has to be woken.  While getters read for themselves the poller
;;; is not told of arrivals (`quiet?`: its wake-ups, one per message, took
;;; a third of a round trip).  Whoever would wait for the poller turns
;;; the interest back on first, under the lock: a getter before it parks
;;; (counted in `parked`, so no later spinner turns it off under it), and
;;; any evt use of the endpoint, for good.  A thread killed while it spins
;;; leaves the endpoint quiet, which every later waiter undoes.
;;; A getter on a ring spins for a time instead (a look at a ring costs
;;; little; a writer may be copying a large message in): the next
;;; message of a busy channel then needs no wake-up.
(library (spindle private places endpoint-get)
  (export endpoint-get endpoint-evt)
  (import (chezscheme)
          (only (spindle private os threads) os-yield!)
          (only (spindle private core scheduler) yield!)
          (only (spindle private core sync) wrap-evt guard-evt)
          (spindle private places shm-ring) (spindle private places frame)
          (spindle private places inbox) (spindle private places endpoint)
          (spindle private places receive))

  (define spin-tries 40)
  (define ring-spin-ns 100000)

  (define-condition-type &peer-ended &error make-peer-ended peer-ended-error?)

  ;; Item from the inbox -> message.  The end marker stays for later gets.
  (define (open-item e item decode)
    (if (eq? item 'closed)
        (begin
          (inbox-put! (endpoint-inbox e) 'closed)
          (raise (condition (make-peer-ended) (make-who-condition 'place-channel-get)
                            (make-message-condition "peer place ended"))))
        (decode (frame-payload item) (frame-raw? item) (frame-fds item))))

  (define (in-ring? e) (receive-state-ring (endpoint-receive-state e)))

  ;; A look without the lock: the ring read here has frames.
  (define (ring-has-frames? e)
    (let ([r (in-ring? e)]) (and r (ring-ready? r))))

  (define (endpoint-get e decode)
    (start-reading! e)
    (let ([inbox (endpoint-inbox e)] [w (endpoint-watch e)])
      (open-item e
                 (or (inbox-try-get inbox)
                     (and (ring-has-frames? e) (begin (pull! e) (inbox-try-get inbox)))
                     (begin
                       (with-endpoint-lock e
                         (when (and (fx= 0 (watch-parked w)) (not (watch-evt-used? w)))
                           (watch-quiet?-set! w #t)
                           (update-interest! e)))
                       (let spin ([i 0] [deadline #f])
                         ;; an empty ring is seen without the lock
                         (unless (and (in-ring? e) (not (ring-has-frames? e))) (pull! e))
                         (or (inbox-try-get inbox)
                             (if (if (in-ring? e)
                                     (or (not deadline) (fx< (fxand i 15) 15) (fx< (now-ns) deadline))
                                     (fx< i spin-tries))
                                 (begin
                                   (yield!)
                                   ;; the writer may wait for this core
                                   (when (and (in-ring? e) (fx= 3 (fxand i 3))) (os-yield!))
                                   (spin (fx+ i 1) (or deadline (and (in-ring? e) (fx+ (now-ns) ring-spin-ns)))))
                                 (begin
                                   (with-endpoint-lock e
                                     (watch-parked-set! w (fx+ (watch-parked w) 1))
                                     (watch-quiet?-set! w #f)
                                     (update-interest! e))
                                   (let ([item (inbox-get inbox)])
                                     (with-endpoint-lock e
                                       (watch-parked-set! w (fx- (watch-parked w) 1)))
                                     item)))))))
                 decode)))

  (define (endpoint-evt e decode)
    (guard-evt
      (lambda ()
        (start-reading! e)
        (with-endpoint-lock e
          (watch-evt-used?-set! (endpoint-watch e) #t)
          (watch-quiet?-set! (endpoint-watch e) #f)
          (update-interest! e))
        (wrap-evt (endpoint-inbox e) (lambda (item) (open-item e item decode)))))))
