#!chezscheme
;;; Descriptor handles: what an fd port (private/io/fd-port) holds.
;;;
;;; A handle owns the descriptor.  Its `users` box counts the system calls
;;; in flight (times 2) plus a closing bit: the descriptor is closed by
;;; whoever leaves it closing with no call in flight, so a call never runs
;;; on a descriptor number that was closed and reused meanwhile.  No count
;;; is held while a thread waits, so a thread killed in a wait leaks
;;; nothing.  A handle that becomes unreachable is closed by a guardian,
;;; drained when a port is made and after every collection (a wrapper of
;;; collect-request-handler): a port dropped while young closes its
;;; descriptor at the next collection; one that lived through k
;;; collections is found unreachable only when its generation is next
;;; collected.  Guardians are not safe to use from two OS threads at once:
;;; this one is registered and drained under reclaim-lock (a Chez mutex,
;;; held with interrupts disabled, never across the closing).
;;;
;;; A handle also holds the input side's buffer (bytes read, not yet
;;; taken), lent from a shared stack while it holds bytes, and the
;;; directions' owner locks.
(library (spindle private io fd-handle)
  (export make-handle handle? handle-fd handle-rec handle-name handle-kind handle-closed?
          handle-open-ports handle-open-ports-set! handle-abandoned? handle-abandoned?-set!
          handle-in-closed? handle-in-closed?-set! handle-out-closed? handle-out-closed?-set!
          handle-in-lock handle-out-lock handle-in-buf handle-in-buf-set! handle-in-start handle-in-start-set!
          handle-in-end handle-in-end-set! handle-in-eof? handle-in-eof?-set! handle-out-byte
          close-handle! handle-call raise-os-error handle-wait-read! handle-wait-write!
          buffered take-buffered! borrow-buffer! return-buffer! fill-buffer!
          guard-handle! reclaim-unreachable-handles! open-handle)
  (import (chezscheme) (only (spindle private core atomic) with-os-mutex) (spindle private io poller)
          (only (spindle private os descriptors) sys-read sys-close)
          (only (spindle private os libc) sys-strerror)
          (only (spindle private core owner-lock) make-owner-lock))

  (define-record-type handle
    (fields fd rec name kind            ; kind: socket or pipe
            users                       ; box: 2 x calls in flight + closing bit
            (mutable open-ports)        ; ports still open (under interrupts disabled)
            (mutable abandoned?)        ; the output port closes without a FIN
            (mutable in-closed?) (mutable out-closed?)
            in-lock out-lock            ; owner locks of the two directions (see fd-port)
            (mutable in-buf) (mutable in-start) (mutable in-end)  ; bytes read, not yet taken
            (mutable in-eof?)           ; an unget-u8 of eof: the next get gives eof
            out-byte)                   ; put-u8's bytevector, used under the output lock
    (protocol
      (lambda (new)
        (lambda (fd name kind open-ports)
          (new fd (fd-watch fd) name kind (box 0) open-ports #f #f #f
               (make-owner-lock) (make-owner-lock) #f 0 0 #f (make-bytevector 1)))))
    (nongenerative spindle-fd-handle-v1) (sealed #t))

  (define (handle-closed? h) (fxodd? (unbox (handle-users h))))

  ;; #f if the handle is closing; else the call may run.
  (define (acquire! h)
    (let loop ()
      (let ([n (unbox (handle-users h))])
        (cond
          [(fxodd? n) #f]
          [(box-cas! (handle-users h) n (fx+ n 2)) #t]
          [else (loop)]))))

  (define (release! h)
    (let loop ()
      (let ([n (unbox (handle-users h))])
        (if (box-cas! (handle-users h) n (fx- n 2))
            (when (fx= n 3) (really-close! h))
            (loop)))))

  ;; Marks the handle closing (waiters wake and find it closed); the
  ;; descriptor closes now or when the last call in flight ends.
  (define (close-handle! h)
    (let loop ()
      (let ([n (unbox (handle-users h))])
        (unless (fxodd? n)
          (if (box-cas! (handle-users h) n (fx+ n 1))
              (begin
                (fd-unwatch! (handle-rec h))
                (when (fx= n 0) (really-close! h)))
              (loop))))))

  (define (really-close! h) (sys-close (handle-fd h)))

  ;; Runs (call fd) with the descriptor held open; #f if it is closed.
  (define (handle-call h call)
    (and (acquire! h)
         (let ([r (call (handle-fd h))])
           (release! h)
           r)))

  ;; ---------------------------------------------------------------- errors
  ;; Raises an i/o condition naming who, with the OS text of errno e.
  (define (raise-os-error who e what . irritants)
    (raise
      (condition
        (case what
          [(read) (make-i/o-read-error)]
          [(write) (make-i/o-write-error)]
          [else (make-error)])
        (make-who-condition who)
        (make-message-condition (string-append (if (string? what) (string-append what ": ") "")
                                               (sys-strerror e)))
        (make-irritants-condition irritants))))

  ;; ---------------------------------------------------------------- reading, writing
  ;; Parks until the direction may be ready.  The seq must have been read
  ;; before the call that failed with EAGAIN.
  (define (handle-wait-read! h seq)
    (fd-idle! (handle-rec h) 'read seq)
    (fd-wait! (handle-rec h) 'read))
  (define (handle-wait-write! h seq)
    (fd-idle! (handle-rec h) 'write seq)
    (fd-wait! (handle-rec h) 'write))

  (define in-buffer-size 16384)

  ;; With the input lock held: the buffered count.
  (define (buffered h) (fx- (handle-in-end h) (handle-in-start h)))

  ;; With the input lock held: moves up to n buffered bytes into bv.
  (define (take-buffered! h bv start n)
    (let ([k (fxmin n (buffered h))])
      (bytevector-copy! (handle-in-buf h) (handle-in-start h) bv start k)
      (handle-in-start-set! h (fx+ (handle-in-start h) k))
      k))

  ;; Input buffers are lent to a handle while they hold bytes, and given
  ;; back to a shared stack when a reader finds them empty and parks, so an
  ;; idle connection holds none (10,000 idle connections would otherwise
  ;; keep 160 MB).  The stack (a box, CAS'd) keeps at most spare-limit.
  (define spare-buffers (box '()))
  (define spare-limit 64)

  (define (borrow-buffer!)
    (let loop ()
      (let ([l (unbox spare-buffers)])
        (cond
          [(null? l) (make-bytevector in-buffer-size)]
          [(box-cas! spare-buffers l (cdr l)) (car l)]
          [else (loop)]))))

  ;; With the input lock held and nothing buffered.
  (define (return-buffer! h)
    (let ([buf (handle-in-buf h)])
      (when buf
        (handle-in-buf-set! h #f)
        (handle-in-start-set! h 0)
        (handle-in-end-set! h 0)
        (let loop ()
          (let ([l (unbox spare-buffers)])
            (when (and (fx< (length l) spare-limit) (not (box-cas! spare-buffers l (cons buf l))))
              (loop)))))))

  ;; With the input lock held: one non-blocking read into the buffer (after
  ;; what it holds): a count, 0 at end of file, -EAGAIN, -errno, or #f when
  ;; the handle is closed.
  (define (fill-buffer! h)
    (unless (handle-in-buf h) (handle-in-buf-set! h (borrow-buffer!)))
    (when (fx= (handle-in-start h) (handle-in-end h))
      (handle-in-start-set! h 0) (handle-in-end-set! h 0))
    (let* ([buf (handle-in-buf h)] [end (handle-in-end h)])
      (when (and (fx= end (bytevector-length buf)) (fx> (handle-in-start h) 0))
        (bytevector-copy! buf (handle-in-start h) buf 0 (buffered h))
        (handle-in-end-set! h (buffered h))
        (handle-in-start-set! h 0))
      (let* ([end (handle-in-end h)]
             [r (handle-call h (lambda (fd) (sys-read fd buf end (fx- (bytevector-length buf) end))))])
        (when (and r (fx> r 0)) (handle-in-end-set! h (fx+ end r)))
        r)))

  ;; ---------------------------------------------------------------- reclaiming
  ;; Unreachable handles close their descriptor (see the top of the file).
  (define reclaim (make-guardian))
  (define reclaim-lock (make-mutex))

  (define (guard-handle! h)
    (with-os-mutex reclaim-lock (reclaim h)))

  ;; With reclaim-lock held: the handles found unreachable.
  (define (unreachable-handles)
    (let loop ([acc '()])
      (let ([h (reclaim)])
        (if h (loop (cons h acc)) acc))))

  (define (reclaim-unreachable-handles!)
    (for-each close-handle!
      (with-os-mutex reclaim-lock (unreachable-handles))))

  ;; After every collection, on the OS thread that ran it while the others
  ;; wait.  The lock is only tried: a thread holding it has interrupts
  ;; disabled, so it cannot be among those waiting, but it may be inside
  ;; mutex-acquire on another OS thread; then the next port made drains it.
  (define collect-hook-installed
    (let ([handler (collect-request-handler)])
      (collect-request-handler
        (lambda ()
          (handler)
          (for-each close-handle!
            (with-interrupts-disabled
              (if (mutex-acquire reclaim-lock #f)
                  (let ([l (unreachable-handles)]) (mutex-release reclaim-lock) l)
                  '())))))
      #t))

  ;; A handle for a descriptor that has no ports (a listening socket),
  ;; closed with close-handle! or when unreachable.
  (define (open-handle fd name kind)
    (reclaim-unreachable-handles!)
    (let ([h (make-handle fd name kind 1)])
      (guard-handle! h)
      h)))
