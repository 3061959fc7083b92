#!chezscheme
;;; A FIFO queue whose nodes can be unlinked in O(1).
;;; Not thread-safe: every owner guards it with its own lock.
(library (spindle private core queue)
  (export make-queue queue? queue-empty? queue-length
          queue-push! queue-push-front! queue-pop! queue-remove! queue-clear! queue->list
          queue-node-unlinked?)
  (import (chezscheme))

  ;; A node is linked iff its queue field is the queue holding it.
  (define-record-type node
    (fields (mutable prev) (mutable next) (mutable owner) value)
    (nongenerative spindle-queue-node-v1)
    (sealed #t))

  (define-record-type queue
    (fields (mutable head) (mutable tail) (mutable length))
    (protocol (lambda (new) (lambda () (new #f #f 0))))
    (nongenerative spindle-queue-v1)
    (sealed #t))

  (define (queue-empty? q) (fx= (queue-length q) 0))

  ;; Appends v; returns its node (for queue-remove!).
  (define (queue-push! q v)
    (let* ([tail (queue-tail q)]
           [n (make-node tail #f q v)])
      (if tail (node-next-set! tail n) (queue-head-set! q n))
      (queue-tail-set! q n)
      (queue-length-set! q (fx+ (queue-length q) 1))
      n))

  (define (queue-push-front! q v)
    (let* ([head (queue-head q)]
           [n (make-node #f head q v)])
      (if head (node-prev-set! head n) (queue-tail-set! q n))
      (queue-head-set! q n)
      (queue-length-set! q (fx+ (queue-length q) 1))
      n))

  (define (unlink! q n)
    (let ([p (node-prev n)] [x (node-next n)])
      (if p (node-next-set! p x) (queue-head-set! q x))
      (if x (node-prev-set! x p) (queue-tail-set! q p))
      (node-prev-set! n #f)
      (node-next-set! n #f)
      (node-owner-set! n #f)
      (queue-length-set! q (fx- (queue-length q) 1))))

  ;; Removes and returns the first value, or default when empty.
  (define (queue-pop! q default)
    (let ([n (queue-head q)])
      (if n (begin (unlink! q n) (node-value n)) default)))

  ;; Unlinks node n if it is still in q; harmless otherwise.
  (define (queue-remove! q n)
    (when (eq? (node-owner n) q) (unlink! q n)))

  ;; #t for a node no queue holds any more.  Safe without the owner's lock:
  ;; a node is linked once, then unlinked once, never linked again.
  (define (queue-node-unlinked? v) (and (node? v) (not (node-owner v))))

  (define (queue-clear! q)
    (let loop () (unless (queue-empty? q) (queue-pop! q #f) (loop))))

  (define (queue->list q)
    (let loop ([n (queue-tail q)] [acc '()])
      (if n (loop (node-prev n) (cons (node-value n) acc)) acc))))
