#!chezscheme
;;; Start procedures for tests/test-place-rings.ss: places that stream,
;;; echo, collect and write over place channels that use shared-memory rings.
(library (places rings)
  (export ring-message ring-message-ok? echo stream flood collector write-on quiet-sender counter)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

  ;; Message i of sender s: a large bytevector every big-every-th (size
  ;; big-size, filled with a byte of s and i), a small list otherwise.
  (define (ring-message s i big-every big-size)
    (vector s i (if (and big-every (= 0 (mod i big-every)))
                    (make-bytevector big-size (mod (+ s i) 256))
                    (list s i 'payload))))

  (define (ring-message-ok? m big-every big-size)
    (let ([s (vector-ref m 0)] [i (vector-ref m 1)] [p (vector-ref m 2)])
      (if (and big-every (= 0 (mod i big-every)))
          (and (bytevector? p) (= (bytevector-length p) big-size)
               (let ([b (mod (+ s i) 256)])
                 (and (= b (bytevector-u8-ref p 0)) (= b (bytevector-u8-ref p (- big-size 1)))
                      (= b (bytevector-u8-ref p (quotient big-size 2))))))
          (equal? p (list s i 'payload)))))

  ;; Puts 0, 1, 2, ... for ever.
  (define (counter ch)
    (let loop ([i 0]) (place-channel-put ch i) (loop (+ i 1))))

  ;; Replies to every message with itself, until 'stop.
  (define (echo ch)
    (let loop ()
      (let ([m (place-channel-get ch)])
        (unless (eq? m 'stop)
          (place-channel-put ch m)
          (loop)))))

  ;; #(n big-every big-size): sends messages 0..n-1 of sender 0, then 'sent;
  ;; 'stop ends it.
  (define (stream ch)
    (let loop ()
      (let ([m (place-channel-get ch)])
        (unless (eq? m 'stop)
          (let ([n (vector-ref m 0)] [every (vector-ref m 1)] [size (vector-ref m 2)])
            (do ([i 0 (+ i 1)]) ((= i n)) (place-channel-put ch (ring-message 0 i every size)))
            (place-channel-put ch 'sent)
            (loop))))))

  ;; #(size): sends bytevectors of size bytes until killed (a few a
  ;; second: puts do not wait for the reader, and would fill the memory).
  (define (flood ch)
    (let* ([size (vector-ref (place-channel-get ch) 0)] [bv (make-bytevector size 1)])
      (let loop () (place-channel-put ch bv) (sleep 0.02) (loop))))

  ;; (collect endpoint n), to collector: gets n messages from endpoint, replies with the
  ;; list of their numbers (or the first bad message).
  (define (collector ch)
    (let loop ()
      (let ([m (place-channel-get ch)])
        (unless (eq? m 'stop)
          (let ([ep (cadr m)] [n (caddr m)])
            (place-channel-put ch
              (let get ([k 0] [acc '()])
                (if (= k n)
                    (reverse acc)
                    (let ([x (place-channel-get ep)])
                      (if (and (vector? x) (ring-message-ok? x #f 0))
                          (get (+ k 1) (cons (vector-ref x 1) acc))
                          (list 'bad x)))))))
          (loop)))))

  ;; (write-on endpoint sender from to): puts messages from..to-1 of sender
  ;; on endpoint, then replies 'written.
  (define (write-on ch)
    (let loop ()
      (let ([m (place-channel-get ch)])
        (unless (eq? m 'stop)
          (let ([ep (list-ref m 1)] [s (list-ref m 2)] [from (list-ref m 3)] [to (list-ref m 4)])
            (do ([i from (+ i 1)]) ((= i to)) (place-channel-put ep (ring-message s i #f 0)))
            (place-channel-put ch 'written))
          (loop)))))

  ;; Sends 20 messages (enough for a ring), then one more after each
  ;; 'again (the parent may be parked by then), until killed or 'stop.
  (define (quiet-sender ch)
    (do ([i 0 (+ i 1)]) ((= i 20)) (place-channel-put ch (ring-message 0 i #f 0)))
    (let loop ([i 20])
      (let ([m (place-channel-get ch)])
        (when (eq? m 'again)
          (sleep 0.05)
          (place-channel-put ch (ring-message 0 i #f 0))
          (loop (+ i 1)))))))
