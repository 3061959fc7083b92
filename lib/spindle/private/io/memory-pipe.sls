#!chezscheme
;;; An in-memory pipe: two Chez binary ports over a byte queue, whose read
;;; waits (parks) while the pipe is empty and whose write waits while it
;;; holds limit bytes.  make-pipe makes one inside a simulation, where an
;;; OS pipe would be woken by the poller in real time.
;;;
;;; A waiter takes the pipe's current latch under the lock, after seeing
;;; that it must wait; every change (bytes in, bytes out, a close) fires
;;; that latch and puts a fresh one: no wake-up is lost.
(library (spindle private io memory-pipe)
  (export make-memory-pipe)
  (import (chezscheme) (only (spindle private core atomic) with-os-mutex)
          (only (spindle private core evt-core) make-latch latch-fire!)
          (only (spindle private core sync) sync))

  (define-record-type mpipe
    (fields lock limit (mutable chunks) (mutable size) (mutable head) (mutable writer-closed?)
            (mutable reader-closed?) (mutable changed))
    (protocol (lambda (new) (lambda (limit) (new (make-mutex) limit '() 0 0 #f #f (fresh-latch)))))
    (nongenerative spindle-memory-pipe-v1) (sealed #t))

  (define (fresh-latch) (make-latch (lambda (l) (void))))

  ;; With the lock held.
  (define (changed! p)
    (latch-fire! (mpipe-changed p))
    (mpipe-changed-set! p (fresh-latch)))

  ;; Copies up to n bytes into bv at start: the count, 0 at end of file.
  (define (read! p bv start n)
    (let loop ()
      (let ([r (with-os-mutex (mpipe-lock p)
                 (cond
                   [(fx> (mpipe-size p) 0) (take! p bv start n)]
                   [(mpipe-writer-closed? p) 0]
                   [else (mpipe-changed p)]))])
        (if (fixnum? r) r (begin (sync r) (loop))))))

  ;; With the lock held and bytes queued.
  (define (take! p bv start n)
    (let* ([chunk (car (mpipe-chunks p))] [head (mpipe-head p)]
           [k (fxmin n (fx- (bytevector-length chunk) head))])
      (bytevector-copy! chunk head bv start k)
      (if (fx= (fx+ head k) (bytevector-length chunk))
          (begin (mpipe-chunks-set! p (cdr (mpipe-chunks p))) (mpipe-head-set! p 0))
          (mpipe-head-set! p (fx+ head k)))
      (mpipe-size-set! p (fx- (mpipe-size p) k))
      (changed! p)
      k))

  ;; Queues bytes while there is room, waiting for it: returns n.
  (define (write! p bv start n)
    (let loop ([start start] [left n])
      (if (fx= left 0)
          n
          (let ([r (with-os-mutex (mpipe-lock p)
                     (cond
                       [(mpipe-reader-closed? p) 'closed]
                       [(or (not (mpipe-limit p)) (fx< (mpipe-size p) (mpipe-limit p)))
                        (let* ([k (if (mpipe-limit p) (fxmin left (fx- (mpipe-limit p) (mpipe-size p))) left)]
                               [chunk (make-bytevector k)])
                          (bytevector-copy! bv start chunk 0 k)
                          (mpipe-chunks-set! p (append (mpipe-chunks p) (list chunk)))
                          (mpipe-size-set! p (fx+ (mpipe-size p) k))
                          (changed! p)
                          k)]
                       [else (mpipe-changed p)]))])
            (cond
              [(eq? r 'closed) (raise (condition (make-i/o-write-error) (make-who-condition 'write-bytes)
                                                 (make-message-condition "the pipe's input end is closed")))]
              [(fixnum? r) (loop (fx+ start r) (fx- left r))]
              [else (sync r) (loop start left)])))))

  (define (close-end! p writer?)
    (with-os-mutex (mpipe-lock p)
      (if writer? (mpipe-writer-closed?-set! p #t) (mpipe-reader-closed?-set! p #t))
      (changed! p)))

  ;; (make-memory-pipe limit in-name out-name) -> (values in out); limit:
  ;; #f (no limit) or the bytes a write may queue before it waits.
  (define (make-memory-pipe limit in-name out-name)
    (let ([p (make-mpipe limit)])
      (values
        (make-custom-binary-input-port in-name (lambda (bv start n) (read! p bv start n)) #f #f
          (lambda () (close-end! p #f)))
        (make-custom-binary-output-port out-name (lambda (bv start n) (write! p bv start n)) #f #f
          (lambda () (close-end! p #t)))))))
