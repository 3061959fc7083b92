#!chezscheme
;;; The socket transport of place channels: frames written to the
;;; endpoint's socket, with descriptors.
;;;
;;; Sending never blocks: a put writes what the socket takes at once and
;;; the rest stays queued (in foreign memory, send.sls) for the poller,
;;; which writes it when the socket drains (EPOLLOUT, want-writable!).
(library (spindle private places socket-transport)
  (export socket-item? bytevector->socket-item copy->socket-item socket-item-discard! socket-step!
          want-writable!)
  (import (chezscheme)
          (only (spindle private os descriptors) close-fd) (only (spindle private os memory) memcpy-from-bytevector! memmove!) (only (spindle private os sockets) send-frame-chunk max-fds-per-message)
          (spindle private places buffer-pool) (spindle private places frame)
          (spindle private places endpoint))

  ;; A socket frame queued: foreign buffer (header and payload), its size,
  ;; bytes sent, descriptor owners (kept reachable until sent), descriptors
  ;; not yet sent, and descriptors to close once all are sent.
  (define-record-type socket-item
    (fields buffer size (mutable sent) owners (mutable fds) (mutable close-after))
    (protocol
      (lambda (new)
        (lambda (buffer size owners fds close-after) (new buffer size 0 owners fds close-after))))
    (nongenerative spindle-place-pending-v1) (sealed #t))

  ;; The frame of payload bv, of the given kind, carrying the descriptors
  ;; fds of owners (endpoints or shared vectors).
  (define (bytevector->socket-item bv kind fds owners close-after)
    (let* ([n (bytevector-length bv)] [size (fx+ frame-header-size n)] [buf (buffer-alloc size)])
      (frame-header-set! buf n (length fds) kind)
      (memcpy-from-bytevector! (+ buf frame-header-size) bv n)
      (make-socket-item buf size owners fds close-after)))

  ;; A frame of n payload bytes copied from foreign memory, no descriptors.
  (define (copy->socket-item src n kind)
    (let* ([size (fx+ frame-header-size n)] [buf (buffer-alloc size)])
      (frame-header-set! buf n 0 kind)
      (memmove! (+ buf frame-header-size) src n)
      (make-socket-item buf size '() '() '())))

  (define (socket-item-discard! p)
    (for-each close-fd (socket-item-close-after p))
    (buffer-free (socket-item-buffer p) (socket-item-size p)))

  ;; With the endpoint lock held: writes what the socket takes of p.
  ;; Returns 'sent (p is done and freed), 'partial (more of p to write:
  ;; try again), 'full (the socket takes nothing now) or 'closed (the peer
  ;; is gone: p is discarded).
  ;; A send carries at most max-fds-per-message descriptors; while more
  ;; remain it sends one byte, so each batch rides on bytes of the header.
  (define (socket-step! e p)
    (let* ([fds (socket-item-fds p)]
           [more? (fx> (length fds) max-fds-per-message)]
           [batch (if more? (list-head fds max-fds-per-message) fds)]
           [r (send-frame-chunk (endpoint-fd e)
                                (+ (socket-item-buffer p) (socket-item-sent p))
                                (if more? 1 (fx- (socket-item-size p) (socket-item-sent p)))
                                batch)])
      (cond
        [(eq? r 'again) 'full]
        [(eq? r 'closed) (socket-item-discard! p) 'closed]
        [else
         (unless (null? batch)
           (socket-item-fds-set! p (list-tail fds (length batch)))
           (when (null? (socket-item-fds p))
             (for-each close-fd (socket-item-close-after p))
             (socket-item-close-after-set! p '())))
         (socket-item-sent-set! p (fx+ (socket-item-sent p) r))
         (if (fx= (socket-item-sent p) (socket-item-size p))
             (begin (buffer-free (socket-item-buffer p) (socket-item-size p)) 'sent)
             'partial)])))

  ;; With the endpoint lock held: EPOLLOUT on or off.  An endpoint with
  ;; queued output is registered, so wait-for-output! sees it.
  (define (want-writable! e on?)
    (let ([s (endpoint-send-state e)])
      (unless (eq? on? (send-state-writing? s))
        (when on? (register! e))
        (send-state-writing?-set! s on?)
        (update-interest! e)))))
