#!chezscheme
;;; An endpoint's inbox: the frames received and not yet got, oldest first,
;;; as an evt whose result is the oldest item (which it takes).  Unbounded;
;;; putting never blocks and is no break point, so the poller and a getter
;;; holding the endpoint lock can put.
;;;
;;; lock: a spin lock, taken with interrupts disabled, held for queue
;;; operations and the wake-up of one getter.
(library (spindle private places inbox)
  (export make-inbox inbox? inbox-put! inbox-try-get inbox-get inbox-take-all!)
  (import (chezscheme) (spindle private core queue)
          (only (spindle private core atomic) spin-lock! spin-unlock! with-spin-lock assert-atomic with-atomic)
          (spindle private core evt-core)
          (only (spindle private core sync) sync))

  (define-record-type inbox
    (parent prim-evt)
    (fields lock items getters)
    (protocol
      (lambda (new)
        (lambda () ((new inbox-attempt inbox-cancel) (box #f) (make-queue) (make-queue)))))
    (nongenerative spindle-place-inbox-v1) (sealed #t))

  (define (inbox-attempt ib s branch register?)
    (assert-atomic 'inbox-attempt)
    (with-spin-lock (inbox-lock ib)
      (cond
        [(queue-empty? (inbox-items ib))
         (and register? (not (syncer-done? s))
              (queue-push! (inbox-getters ib) (make-waiter s branch #f)))]
        [(claim! s)
         (finish! s branch (list (queue-pop! (inbox-items ib) #f)))
         #t]
        [else #f])))

  (define (inbox-cancel ib node)
    (assert-atomic 'inbox-cancel)
    (remove-waiter! (inbox-lock ib) (inbox-getters ib) node))

  ;; Appends v (never #f), or hands it to the first getter still waiting.
  (define (inbox-put! ib v)
    (with-atomic
      (spin-lock! (inbox-lock ib))
      (let loop ()
        (let ([w (queue-pop! (inbox-getters ib) #f)])
          (cond
            [(not w) (queue-push! (inbox-items ib) v)]
            [(commit-partner! (waiter-syncer w) (waiter-branch w) (list v)) (void)]
            [else (loop)])))
      (spin-unlock! (inbox-lock ib))))

  ;; The oldest item, taken, or #f; never blocks.
  (define (inbox-try-get ib)
    (with-interrupts-disabled
      (spin-lock! (inbox-lock ib))
      (let ([v (queue-pop! (inbox-items ib) #f)])
        (spin-unlock! (inbox-lock ib))
        v)))

  (define (inbox-get ib) (sync ib))

  ;; Removes and returns every item, oldest first; never blocks.
  (define (inbox-take-all! ib)
    (with-interrupts-disabled
      (spin-lock! (inbox-lock ib))
      (let loop ([acc '()])
        (let ([v (queue-pop! (inbox-items ib) #f)])
          (if v
              (loop (cons v acc))
              (begin (spin-unlock! (inbox-lock ib)) (reverse acc)))))))

  (record-prints-as! (record-type-descriptor inbox) "place-channel-inbox")
  (evt-trace-reason! (record-type-descriptor inbox) 'channel (lambda (ib) (list ib 'get))))
