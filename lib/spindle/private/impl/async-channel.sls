#!chezscheme
;;; Buffered (asynchronous) channels, optionally bounded; also the storage
;;; of thread mailboxes (unbounded, with a peek evt and push-front).
(library (spindle private impl async-channel)
  (export (rename (make-async-channel* make-async-channel)) async-channel? async-channel-get async-channel-try-get
          async-channel-put async-channel-put-evt
          ;; for impl/thread's mailboxes ((spindle async-channel) leaves them out)
          make-buffer-channel async-channel-peek-evt async-channel-push-front!
          async-channel-push-back! async-channel-take-all!)
  (import (chezscheme) (spindle private core queue) (spindle private core scheduler) (spindle private core atomic)
          (spindle private core evt-core) (spindle private core sync))

  (define-record-type async-channel
    (parent prim-evt)
    (fields limit lock buffer getters putters peekers)   ; lock: a spin-lock box, interrupts disabled, not re-entrant
    (protocol
      (lambda (new)
        (lambda (limit)
          ((new get-attempt get-cancel) limit (box #f) (make-queue)
           (make-queue) (make-queue) (make-queue)))))
    (nongenerative spindle-async-channel-v1))

  (define-record-type put-evt
    (parent prim-evt)
    (fields channel value)
    (protocol (lambda (new) (lambda (ch v) ((new put-attempt put-cancel) ch v))))
    (nongenerative spindle-async-channel-put-evt-v1) (sealed #t))

  ;; Ready when the buffer is not empty; dequeues nothing.  Result: the evt.
  (define-record-type peek-evt
    (parent prim-evt)
    (fields channel)
    (protocol (lambda (new) (lambda (ch) ((new peek-attempt peek-cancel) ch))))
    (nongenerative spindle-async-channel-peek-v1) (sealed #t))

  (define (make-buffer-channel) (make-async-channel #f))

  (define make-async-channel*
    (case-lambda
      [() (make-async-channel #f)]
      [(limit)
       (unless (or (not limit) (and (integer? limit) (exact? limit) (> limit 0)))
         (assertion-violation 'make-async-channel "expected #f or an exact positive integer" limit))
       (make-async-channel limit)]))

  (define (check who ch)
    (unless (async-channel? ch) (assertion-violation who "expected an async channel" ch)))

  (define (room? ch)
    (let ([limit (async-channel-limit ch)])
      (or (not limit) (fx< (queue-length (async-channel-buffer ch)) limit))))

  ;; With the lock held: move waiting putters into the buffer while there is
  ;; room, and wake peekers if the buffer is not empty.
  (define (settle! ch)
    (let loop ()
      (when (room? ch)
        (let ([w (queue-pop! (async-channel-putters ch) #f)])
          (when w
            (when (commit-partner! (waiter-syncer w) (waiter-branch w) (list (waiter-value w)))
              (queue-push! (async-channel-buffer ch) (put-evt-value (waiter-value w))))
            (loop)))))
    (unless (queue-empty? (async-channel-buffer ch))
      (let loop ()
        (let ([w (queue-pop! (async-channel-peekers ch) #f)])
          (when w
            (commit-partner! (waiter-syncer w) (waiter-branch w) (list (waiter-value w)))
            (loop))))))

  ;; Hands v to a waiting getter, if any is live.  #t if handed.
  (define (hand-to-getter! ch s branch v our-result)
    (let ([q (async-channel-getters ch)])
      (let loop ([skipped '()])
        (let ([w (queue-pop! q #f)])
          (define (restore!) (for-each (lambda (w) (queue-push-front! q w)) skipped))
          (cond
            [(not w) (restore!) #f]
            ;; never with itself (claiming s twice would spin forever)
            [(and s (eq? (waiter-syncer w) s)) (loop (cons w skipped))]
            [else
             (let ([r (if s (claim-pair! s (waiter-syncer w)) (claim! (waiter-syncer w)))])
               (cond
                 [(eq? r #t)
                  (finish! (waiter-syncer w) (waiter-branch w) (list v))
                  (when s (finish! s branch our-result))
                  (wake-partner! (waiter-syncer w))
                  (restore!)
                  #t]
                 [(and s (eq? r s)) (queue-push-front! q w) (restore!) #f]
                 [else (loop skipped)]))])))))

  (define (get-attempt ch s branch register?)
    (assert-atomic 'get-attempt)
    (with-spin-lock (async-channel-lock ch)
      (cond
        [(queue-empty? (async-channel-buffer ch))
         (and register? (not (syncer-done? s))
              (queue-push! (async-channel-getters ch) (make-waiter s branch #f)))]
        [(claim! s)
         (finish! s branch (list (queue-pop! (async-channel-buffer ch) #f)))
         (settle! ch)
         #t]
        [else #f])))

  (define (get-cancel ch node)
    (assert-atomic 'get-cancel)
    (remove-waiter! (async-channel-lock ch) (async-channel-getters ch) node))

  (define (put-attempt pe s branch register?)
    (assert-atomic 'put-attempt)
    (let ([ch (put-evt-channel pe)] [v (put-evt-value pe)])
      (with-spin-lock (async-channel-lock ch)
        (cond
          [(hand-to-getter! ch s branch v (list pe)) #t]
          [(syncer-done? s) #f]
          [(room? ch)
           (and (claim! s)
                (begin
                  (queue-push! (async-channel-buffer ch) v)
                  (finish! s branch (list pe))
                  (settle! ch)
                  #t))]
          [register? (queue-push! (async-channel-putters ch) (make-waiter s branch pe))]
          [else #f]))))

  (define (put-cancel pe node)
    (assert-atomic 'put-cancel)
    (let ([ch (put-evt-channel pe)])
      (remove-waiter! (async-channel-lock ch) (async-channel-putters ch) node)))

  (define (peek-attempt pk s branch register?)
    (assert-atomic 'peek-attempt)
    (let ([ch (peek-evt-channel pk)])
      (with-spin-lock (async-channel-lock ch)
        (cond
          [(not (queue-empty? (async-channel-buffer ch))) (commit-one! s branch (list pk))]
          [register? (queue-push! (async-channel-peekers ch) (make-waiter s branch pk))]
          [else #f]))))

  (define (peek-cancel pk node)
    (assert-atomic 'peek-cancel)
    (let ([ch (peek-evt-channel pk)])
      (remove-waiter! (async-channel-lock ch) (async-channel-peekers ch) node)))

  (define (async-channel-peek-evt ch) (make-peek-evt ch))

  ;; Puts v back at the front (thread-rewind-receive); never blocks.
  (define (async-channel-push-front! ch v)
    (with-interrupts-disabled
      (spin-lock! (async-channel-lock ch))
      (unless (hand-to-getter! ch #f #f v #f)
        (queue-push-front! (async-channel-buffer ch) v)
        (settle! ch))
      (spin-unlock! (async-channel-lock ch))))

  ;; Appends v to an unbounded channel without a sync (so it is no break
  ;; point and may be called with a lock held); never blocks.
  (define (async-channel-push-back! ch v)
    (with-interrupts-disabled
      (spin-lock! (async-channel-lock ch))
      (unless (hand-to-getter! ch #f #f v #f)
        (queue-push! (async-channel-buffer ch) v)
        (settle! ch))
      (spin-unlock! (async-channel-lock ch))))

  ;; Removes and returns every buffered value, oldest first; never blocks.
  (define (async-channel-take-all! ch)
    (with-interrupts-disabled
      (spin-lock! (async-channel-lock ch))
      (let loop ([acc '()])
        (let ([v (queue-pop! (async-channel-buffer ch) #f)])
          (if v
              (loop (cons v acc))
              (begin (settle! ch) (spin-unlock! (async-channel-lock ch)) (reverse acc)))))))

  (define (async-channel-get ch) (check 'async-channel-get ch) (sync ch))

  (define (async-channel-try-get ch)
    (check 'async-channel-try-get ch)
    (sync/timeout 0 ch))

  (define (async-channel-put ch v)
    (check 'async-channel-put ch)
    (sync (make-put-evt ch v))
    (void))

  (define (async-channel-put-evt ch v)
    (check 'async-channel-put-evt ch)
    (make-put-evt ch v))

  (record-prints-as! (record-type-descriptor async-channel) "async-channel")
  (record-prints-as! (record-type-descriptor put-evt) "async-channel-put-evt")
  (record-prints-as! (record-type-descriptor peek-evt) "async-channel-peek-evt")
  (evt-trace-reason! (record-type-descriptor async-channel) 'channel (lambda (ch) (list ch 'get)))
  (evt-trace-reason! (record-type-descriptor put-evt) 'channel (lambda (e) (list (put-evt-channel e) 'put)))
  (evt-trace-reason! (record-type-descriptor peek-evt) 'channel (lambda (e) (list (peek-evt-channel e) 'peek))))
