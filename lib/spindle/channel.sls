#!chezscheme
;;; Synchronous channels: each transfer pairs one putter with one getter,
;;; both committed together (claim-pair!), served FIFO.
(library (spindle channel)
  (export make-channel channel? channel-get channel-put channel-try-get
          channel-put-evt channel-put-evt?)
  (import (chezscheme) (spindle private core queue) (spindle private core scheduler) (spindle private core atomic)
          (spindle private core evt-core) (spindle private core sync))

  (define-record-type channel
    (parent prim-evt)
    (fields lock getters putters)   ; lock: a spin-lock box, held with interrupts disabled (not re-entrant)
    (protocol
      (lambda (new)
        (lambda () ((new get-attempt get-cancel) (box #f) (make-queue) (make-queue)))))
    (nongenerative spindle-channel-v1))

  (define-record-type put-evt
    (parent prim-evt)
    (fields channel value)
    (protocol (lambda (new) (lambda (ch v) ((new put-attempt put-cancel) ch v))))
    (nongenerative spindle-channel-put-evt-v1) (sealed #t))

  (define (channel-put-evt? v) (put-evt? v))

  (define (check who ch)
    (unless (channel? ch) (assertion-violation who "expected a channel" ch)))

  ;; Pairs syncer s with the first live partner in q.  The partner's result
  ;; is (partner-result w); ours is (our-result w).  Returns #t when s was
  ;; committed, #f when there is no partner or s is already done.
  (define (match! q s branch our-result partner-result)
    (let loop ([skipped '()])
      (let ([w (queue-pop! q #f)])
        (define (restore!) (for-each (lambda (w) (queue-push-front! q w)) skipped))
        (cond
          [(not w) (restore!) #f]
          [(eq? (waiter-syncer w) s) (loop (cons w skipped))]   ; never with itself
          [else
           (let* ([p (waiter-syncer w)] [r (claim-pair! s p)])
             (cond
               [(eq? r #t)
                (finish! p (waiter-branch w) (partner-result w))
                (finish! s branch (our-result w))
                (wake-partner! p)
                (restore!)
                #t]
               [(eq? r s) (queue-push-front! q w) (restore!) #f]   ; we are done elsewhere
               [else (loop skipped)]))]))))                       ; stale partner: drop it

  (define (get-attempt ch s branch register?)
    (assert-atomic 'get-attempt)
    (spin-lock! (channel-lock ch))
    (let ([r (or (match! (channel-putters ch) s branch
                         ;; a putter's waiter value is its put evt
                         (lambda (w) (list (put-evt-value (waiter-value w))))
                         (lambda (w) (list (waiter-value w))))
                 (and register? (not (syncer-done? s))
                      (queue-push! (channel-getters ch) (make-waiter s branch #f))))])
      (spin-unlock! (channel-lock ch))
      r))

  (define (get-cancel ch node)
    (assert-atomic 'get-cancel)
    (remove-waiter! (channel-lock ch) (channel-getters ch) node))

  (define (put-attempt pe s branch register?)
    (assert-atomic 'put-attempt)
    (let ([ch (put-evt-channel pe)])
      (spin-lock! (channel-lock ch))
      (let ([r (or (match! (channel-getters ch) s branch
                           (lambda (w) (list pe))
                           (lambda (w) (list (put-evt-value pe))))
                   (and register? (not (syncer-done? s))
                        (queue-push! (channel-putters ch) (make-waiter s branch pe))))])
        (spin-unlock! (channel-lock ch))
        r)))

  (define (put-cancel pe node)
    (assert-atomic 'put-cancel)
    (let ([ch (put-evt-channel pe)])
      (remove-waiter! (channel-lock ch) (channel-putters ch) node)))

  (define (channel-get ch) (check 'channel-get ch) (sync ch))

  (define (channel-try-get ch)
    (check 'channel-try-get ch)
    (sync/timeout 0 ch))

  (define (channel-put ch v)
    (check 'channel-put ch)
    (sync (make-put-evt ch v))
    (void))

  (define (channel-put-evt ch v)
    (check 'channel-put-evt ch)
    (make-put-evt ch v))

  (record-prints-as! (record-type-descriptor channel) "channel")
  (record-prints-as! (record-type-descriptor put-evt) "channel-put-evt")
  (evt-trace-reason! (record-type-descriptor channel) 'channel (lambda (ch) (list ch 'get)))
  (evt-trace-reason! (record-type-descriptor put-evt) 'channel (lambda (e) (list (put-evt-channel e) 'put))))
