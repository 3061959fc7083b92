#!chezscheme
;;; Receiving on a place channel endpoint: the socket's frame parser, the
;;; choice between the socket and the ring, and delivery to the inbox.
;;;
;;; The poller reads an endpoint that is being read (receive-state
;;; reading?) when its socket or ring has data; a getter that finds the
;;; inbox empty reads it too (see endpoint-get.sls).  An endpoint that is never
;;; read locally (say, one end of a fresh place-channel, sent away) leaves
;;; its bytes to the place that reads it.
(library (spindle private places receive)
  (export pull! read-frames! bytes-reader partial-frame-bytes)
  (import (chezscheme)
          (only (spindle private os memory) memcpy-to-bytevector! memcpy-from-bytevector! memmove!) (only (spindle private os sockets) recv-chunk)
          (spindle private places buffer-pool) (spindle private places frame)
          (spindle private places inbox) (spindle private places endpoint)
          (spindle private places ring-transport)
          (only (spindle private places shm-ring) ring-release!)
          (only (spindle private core queue) queue-empty?))

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
      [(e hang-up?)
       (let ([hook (endpoint-hook e)] [rs (endpoint-receive-state e)] [inbox (endpoint-inbox e)])
         (let-values ([(frames end?)
                       (with-endpoint-lock e
                         ;; (a poller thread may come here after a look at
                         ;; reading?, just as e is sent away: it reads nothing)
                         (if (or (receive-state-ended? rs) (not (receive-state-reading? rs)))
                             (values '() #f)
                             (let-values ([(frames end?) (take-frames! e hang-up?)])
                               (unless hook
                                 (for-each (lambda (f) (inbox-put! inbox f)) frames)
                                 (when end?
                                   (receive-state-reading?-set! rs #f)
                                   (inbox-put! inbox 'closed)))
                               (values frames end?))))])
           (when end?
             (unregister! e)
             (unless hook (release-ended! e)))
           (when hook
             (for-each (lambda (f) (hook (frame-payload f) (frame-fds f))) frames)
             (when end? (hook #f '())))))]))

  ;; Every peer end is closed and the stream is read to its end (the end
  ;; marker is in the inbox): the socket and the ring written are let go
  ;; now, not at a collection, or a program that starts and waits for
  ;; places in a loop runs out of descriptors.  Later sends are dropped
  ;; (peer-gone?).  Left to the collector while output is queued.
  (define (release-ended! e)
    (with-endpoint-lock e
      (let ([s (endpoint-send-state e)])
        (when (queue-empty? (send-state-queue s))
          (send-state-peer-gone?-set! s #t)
          (let ([r (send-state-ring s)])
            (when r
              (want-room! e r #f #f)
              (send-state-ring-set! s #f)
              (ring-release! r)))
          (endpoint-close! e)))))

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
    (let ([rs (endpoint-receive-state e)])
      (let loop ([acc '()] [budget read-budget])
        (let ([acc (if (receive-state-ring rs) (pull-ring! e acc hang-up?) acc)])
          (if (receive-state-ring rs)
              (values (reverse acc) #f)
              (let-values ([(acc budget end?)
                            (read-source! e acc (lambda (a n) (recv-chunk (endpoint-fd e) a n)) budget)])
                (if (and (receive-state-ring rs) (not end?))
                    (loop acc budget)
                    (values (reverse acc) end?))))))))

  ;; With the lock held: (values acc budget-left end-of-stream?); stops at
  ;; an offer (the rest of the read area waits for the ring's end).
  (define (read-source! e acc read budget)
    (let* ([rs (endpoint-receive-state e)] [p (receive-state-parser rs)]
           [acc (if (parser-paused? p)
                    (begin (parser-paused?-set! p #f) (parse-area! e acc))
                    acc)])
      (let loop ([acc acc] [budget budget])
        (if (or (fx<= budget 0) (receive-state-ring rs))
            (values acc budget #f)
            (let-values ([(acc n end?) (read-step! e acc read)])
              (if n (loop acc (fx- budget n)) (values acc budget end?)))))))

  ;; One read: (values acc bytes-read-or-#f end-of-stream?); #f when the
  ;; source has nothing now, has ended, or gave less than asked (it is
  ;; drained for now: stopping there saves the read that would fail).
  ;; Between frames, a read asks for up to read-area-size bytes into the
  ;; area, and every frame complete there is taken at once (a small message
  ;; costs one read).  A frame that does not fit goes on into a payload
  ;; buffer of its size, its header kept at the start of the area; what is
  ;; left of a header (under 16 bytes) moves to the start.
  (define (read-step! e acc read)
    (let* ([p (endpoint-parser e)] [pl (parser-payload p)]
           [want (if pl
                     (fx- (assembly-size pl) (assembly-got pl))
                     (fx- read-area-size (parser-got p)))])
      (let-values ([(r fds) (if pl
                                (read (+ (assembly-buffer pl) (assembly-got pl)) want)
                                (read (+ (parser-area p) (parser-got p)) want))])
        (unless (null? fds) (parser-fds-set! p (append (parser-fds p) fds)))
        (cond
          [(eq? r 'again) (values acc #f #f)]
          [(or (eq? r 'closed) (eqv? r 0))
           (receive-state-ended?-set! (endpoint-receive-state e) #t)
           (values acc #f #t)]
          [else
           (let ([acc (if pl
                          (begin
                            (assembly-got-set! pl (fx+ (assembly-got pl) r))
                            (if (fx= (assembly-got pl) (assembly-size pl))
                                (let ([f (take-payload-frame! e)]) (if f (cons f acc) acc))
                                acc))
                          (begin
                            (parser-got-set! p (fx+ (parser-got p) r))
                            (parse-area! e acc)))])
             (values acc (and (fx= r want) r) #f))]))))

  (define (endpoint-parser e) (receive-state-parser (endpoint-receive-state e)))

  ;; With the lock held: takes the frames complete in the area.
  (define (parse-area! e acc)
    (let* ([p (endpoint-parser e)] [area (parser-area p)] [got (parser-got p)])
      (let loop ([pos 0] [acc acc])
        (let ([avail (fx- got pos)])
          (if (fx< avail frame-header-size)
              (begin
                (unless (fx= pos 0) (memmove! area (+ area pos) avail))
                (parser-got-set! p avail)
                acc)
              (let* ([h (+ area pos)] [size (frame-length h)] [body (fx- avail frame-header-size)])
                (cond
                  [(and (fx<= size body) (fx= kind-offer (frame-kind h)))
                   (adopt-offer! e h (foreign-ref 'unsigned-64 h frame-header-size) (lambda () (pull! e)))
                   (let ([next (fx+ pos frame-header-size size)])
                     (memmove! area (+ area next) (fx- got next))
                     (parser-got-set! p (fx- got next))
                     (parser-paused?-set! p #t)
                     acc)]
                  [(fx<= size body)
                   (let ([bv (make-bytevector size)])
                     (memcpy-to-bytevector! bv (+ h frame-header-size) size)
                     (loop (fx+ pos frame-header-size size) (cons (frame-of bv p h) acc)))]
                  [else
                   (let ([pl (make-assembly size #f)])
                     (memmove! (assembly-buffer pl) (+ h frame-header-size) body)
                     (assembly-got-set! pl body)
                     (unless (fx= pos 0) (memmove! area h frame-header-size))
                     (parser-got-set! p frame-header-size)
                     (parser-payload-set! p pl)
                     acc)])))))))

  ;; With the lock held: the frame whose payload buffer is complete (#f
  ;; for an offer, taken).
  (define (take-payload-frame! e)
    (let* ([p (endpoint-parser e)] [pl (parser-payload p)] [h (parser-area p)]
           [bv (make-bytevector (assembly-size pl))])
      (memcpy-to-bytevector! bv (assembly-buffer pl) (assembly-size pl))
      (assembly-free! pl)
      (parser-payload-set! p #f)
      (parser-got-set! p 0)
      (if (fx= kind-offer (frame-kind h))
          (begin (adopt-offer! e h (bytevector-u64-native-ref bv 0) (lambda () (pull! e))) #f)
          (frame-of bv p h))))

  ;; A delivered frame, its descriptors taken from those received so far
  ;; (they ride on the frame's first bytes).
  (define (frame-of bv p header)
    (let ([fds (parser-take-fds! p (frame-fd-count header))])
      (make-frame bv (message-kind-raw? (frame-kind header)) fds)))

  ;; With the lock held: the bytes of a frame read in part, or #f; the
  ;; parser starts afresh.
  (define (partial-frame-bytes e)
    (let* ([p (endpoint-parser e)] [pl (parser-payload p)] [hgot (parser-got p)])
      (cond
        [pl
         (let* ([got (assembly-got pl)] [bv (make-bytevector (fx+ frame-header-size got))]
                [h (make-bytevector frame-header-size)] [body (make-bytevector got)])
           (memcpy-to-bytevector! h (parser-area p) frame-header-size)
           (memcpy-to-bytevector! body (assembly-buffer pl) got)
           (bytevector-copy! h 0 bv 0 frame-header-size)
           (bytevector-copy! body 0 bv frame-header-size got)
           (assembly-free! pl)
           (parser-payload-set! p #f)
           (parser-got-set! p 0)
           bv)]
        [(fx> hgot 0)
         (let ([bv (make-bytevector hgot)])
           (memcpy-to-bytevector! bv (parser-area p) hgot)
           (parser-got-set! p 0)
           (parser-paused?-set! p #f)
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
                (values n given))))))))
