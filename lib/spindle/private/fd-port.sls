#!chezscheme
;;; Chez binary ports over non-blocking descriptors (sockets, pipes) whose
;;; reads and writes park the calling thread, not its OS thread, when the
;;; descriptor is not ready.
;;;
;;; The ports are safe to share between threads, coroutine or parallel.
;;; Each read and each write call runs under its direction's lock, held
;;; across a park, so a put call's bytes go out contiguous and each read
;;; call takes bytes no other call takes.  Chez's own buffers are kept
;;; out of the way, so threads on several OS threads never share one:
;;; the input port is built on Chez's port-handler record (as synchronized
;;; ports are) with an empty Chez buffer, so every get-u8, lookahead-u8,
;;; unget-u8 and bulk read is one call of its handler, which works on the
;;; handle's buffer under the input lock; output is written through: each
;;; put call of more than output-buffer-size bytes is one write(2) (build a
;;; bytevector, or use a transcoded port, whose buffer is flushed in one
;;; call).  Chez 9.5.8's custom ports mishandle put-u8 with an output
;;; buffer under three bytes, so a few single bytes are held by Chez until
;;; the next flush or put.  The lock belongs to a thread, and a dead
;;; owner's lock is taken over, so a thread killed while it waits inside a
;;; read or write blocks nobody; a read that raises releases it first.
;;;
;;; A handle owns the descriptor.  Its `users` box counts the system calls
;;; in flight (times 2) plus a closing bit: the descriptor is closed by
;;; whoever leaves it closing with no call in flight, so a call never runs
;;; on a descriptor number that was closed and reused meanwhile.  No count
;;; is held while a thread waits, so a thread killed in a wait leaks
;;; nothing; a handle that becomes unreachable is closed by a guardian.
(library (spindle private fd-port)
  (export make-fd-ports make-fd-ports/custodian open-handle abandon-port! fd-port? fd-port-handle fd-port-input-ready-evt fd-port-output-ready-evt
          handle? handle-fd handle-rec handle-name handle-closed? handle-kind close-handle!
          handle-call handle-wait-read! handle-wait-write!
          port-buffered-count port-buffered-has? port-fill! raise-os-error reclaim-unreachable-handles!)
  (import (chezscheme) (spindle private port-handler) (spindle private poller) (spindle private posix-io)
          (only (spindle private scheduler) current-gthread gthread-dead?)
          (only (spindle private sync) always-evt wrap-evt guard-evt port-evt-proc-set! sync/timeout)
          (only (spindle semaphore) make-semaphore semaphore-post)
          (only (spindle custodian) custodian-register! make-custodian-kind current-custodian))

  (define-record-type handle
    (fields fd rec name kind            ; kind: socket or pipe
            users                       ; box: 2 x calls in flight + closing bit
            (mutable open-ports)        ; ports still open (under interrupts disabled)
            (mutable on-close)          ; thunks run once the descriptor is closed
            (mutable abandoned?)        ; the output port closes without a FIN
            (mutable in-closed?) (mutable out-closed?)
            in-lock out-lock            ; port-locks, see above
            (mutable in-buf) (mutable in-start) (mutable in-end)  ; bytes read, not yet taken
            (mutable in-eof?))          ; an unget-u8 of eof: the next get gives eof
    (protocol
      (lambda (new)
        (lambda (fd name kind open-ports)
          (new fd (fd-watch fd) name kind (box 0) open-ports '() #f #f #f
               (make-port-lock) (make-port-lock) #f 0 0 #f))))
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

  ;; ---------------------------------------------------------------- port locks
  ;; A box holding the owning thread (or #f), a count of waiters and a
  ;; semaphore they wait on.  Waiters look again every 50 ms, so a lock
  ;; whose owner died (killed while parked in a read) is taken over.
  (define-record-type port-lock
    (fields owner (mutable waiters) turn)
    (protocol (lambda (new) (lambda () (new (box #f) 0 (make-semaphore 0)))))
    (nongenerative spindle-port-lock-v1) (sealed #t))

  (define (port-lock! l)
    (let ([me (current-gthread)] [b (port-lock-owner l)])
      (let loop ()
        (let ([owner (unbox b)])
          (unless (or (and (not owner) (box-cas! b #f me))
                      (and owner (gthread-dead? owner) (box-cas! b owner me)))
            (with-interrupts-disabled (port-lock-waiters-set! l (fx+ (port-lock-waiters l) 1)))
            (sync/timeout 0.05 (port-lock-turn l))
            (with-interrupts-disabled (port-lock-waiters-set! l (fx- (port-lock-waiters l) 1)))
            (loop))))))

  (define (port-unlock! l)
    (set-box! (port-lock-owner l) #f)
    (when (fx> (port-lock-waiters l) 0) (semaphore-post (port-lock-turn l))))

  ;; #t if the lock was free and is now the caller's.
  (define (port-try-lock! l) (box-cas! (port-lock-owner l) #f (current-gthread)))

  (define-syntax with-port-lock
    (syntax-rules ()
      [(_ l e ...) (let ([lock l])
                     (port-lock! lock)
                     (call-with-values (lambda () e ...)
                       (lambda vals (port-unlock! lock) (apply values vals))))]))

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

  (define (really-close! h)
    (sys-close (handle-fd h))
    (for-each (lambda (thunk) (thunk)) (handle-on-close h)))

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

  (define (closed-error who h)
    (raise (condition (make-i/o-error) (make-who-condition who)
                      (make-message-condition "port is closed") (make-irritants-condition (list (handle-name h))))))

  (define in-buffer-size 16384)
  (define output-buffer-size 3)

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

;; ---------------------------------------------------------------- input port
  ;; Every input handler runs under the input lock: (locked-input h body)
  ;; takes it, runs body, and releases it; body returns its result, or a
  ;; failure holding a condition that is raised once the lock is free (so a
  ;; reader that fails never keeps the lock from the others).
  (define-record-type failure (fields condition) (nongenerative spindle-fd-failure-v1) (sealed #t))

  (define-syntax locked-input
    (syntax-rules ()
      [(_ h body ...)
       (let ([lock (handle-in-lock h)])
         (port-lock! lock)
         (let ([r (begin body ...)])
           (port-unlock! lock)
           (if (failure? r) (raise (failure-condition r)) r)))]))

  (define (closed-failure who h)
    (make-failure (guard (c [#t c]) (closed-error who h))))

  ;; With the input lock held: #t once a byte is buffered (parking while
  ;; the descriptor has none), #f at end of file, or a failure.
  (define (await-input! who h)
    (let loop ()
      (cond
        [(fx> (buffered h) 0) #t]
        [(handle-in-eof? h) #f]
        [else
         (let* ([seq (fd-seq (handle-rec h) 'read)] [r (fill-buffer! h)])
           (cond
             [(or (not r) (handle-in-closed? h)) (closed-failure who h)]
             [(fx> r 0) #t]
             [(fx= r 0) #f]
             [(fx= r (fx- 0 errno-again)) (return-buffer! h) (handle-wait-read! h seq) (loop)]
             ;; a reset peer reads as an error, as in Racket
             [else (make-failure (guard (c [#t c]) (raise-os-error who r 'read (handle-name h))))]))])))

  ;; With the input lock held: at least one byte into bv, the count, or
  ;; eof, or a failure; parks while none is there.  Large reads go
  ;; straight into bv.
  (define (read-some! who h bv start n)
    (let loop ()
      (cond
        [(fx> (buffered h) 0) (take-buffered! h bv start n)]
        [(handle-in-eof? h) (handle-in-eof?-set! h #f) (eof-object)]
        [(fx< n 4096) (let ([r (await-input! who h)])
                        (cond [(eq? r #t) (take-buffered! h bv start n)] [r r] [else (eof-object)]))]
        [else
         (let* ([seq (fd-seq (handle-rec h) 'read)]
                [r (handle-call h (lambda (fd) (sys-read fd bv start n)))])
           (cond
             [(or (not r) (handle-in-closed? h)) (closed-failure who h)]
             [(fx> r 0) r]
             [(fx= r 0) (eof-object)]
             [(fx= r (fx- 0 errno-again)) (return-buffer! h) (handle-wait-read! h seq) (loop)]
             [else (make-failure (guard (c [#t c]) (raise-os-error who r 'read (handle-name h))))]))])))

  ;; With the input lock held: the next byte (taken if take?), or eof.
  (define (next-byte! who h take?)
    (let ([r (await-input! who h)])
      (cond
        [(eq? r #t)
         (let* ([i (handle-in-start h)] [b (bytevector-u8-ref (handle-in-buf h) i)])
           (when take? (handle-in-start-set! h (fx+ i 1)))
           b)]
        [r r]
        [else (when take? (handle-in-eof?-set! h #f)) (eof-object)])))

  ;; With the input lock held: puts byte x (or eof) back in front.
  (define (unget-byte! h x)
    (if (eof-object? x)
        (handle-in-eof?-set! h #t)
        (let ([buf (handle-in-buf h)] [start (handle-in-start h)])
          (cond
            [(not buf)
             (let ([buf (borrow-buffer!)])
               (handle-in-buf-set! h buf)
               (bytevector-u8-set! buf 0 x)
               (handle-in-start-set! h 0)
               (handle-in-end-set! h 1))]
            [(fx> start 0)
             (bytevector-u8-set! buf (fx- start 1) x)
             (handle-in-start-set! h (fx- start 1))]
            [else
             (let* ([k (buffered h)]
                    [to (if (fx< k (bytevector-length buf)) buf (make-bytevector (fx+ k 1)))])
               (bytevector-copy! buf 0 to 1 k)
               (bytevector-u8-set! to 0 x)
               (handle-in-buf-set! h to)
               (handle-in-end-set! h (fx+ k 1)))]))))

  ;; The port flag bits that make a port block-buffered for Chez (a
  ;; custom port has them, a bare handler port has not): without them
  ;; transcoded-port gives the port a one-character buffer, and get-line
  ;; on it costs three times as much.  Found by difference, not hard-coded.
  (define block-buffered-flags
    (let* ([custom (make-custom-binary-input-port "probe" (lambda (bv start n) 0) #f #f #f)]
           [bare (#%$make-binary-input-port "probe" (#%$port-handler custom) (make-bytevector 1) #f)])
      (fold-left (lambda (acc i)
                   (let ([bit (fxsll 1 i)])
                     (if (and (#%$port-flags-set? custom bit) (not (#%$port-flags-set? bare bit))) (fxior acc bit) acc)))
                 0 (iota 24))))

  (define (port-closed-error who p)
    (raise (condition (make-i/o-port-error p) (make-who-condition who)
                      (make-message-condition "not permitted on a closed port") (make-irritants-condition (list p)))))

  ;; The input port's handler.  Its Chez buffer is empty and stays so:
  ;; Chez calls the handler for every read, and the handler takes the
  ;; input lock, so one byte goes to exactly one reader on any OS thread.
  (define (make-input-handler h close!)
    (define-syntax op
      (syntax-rules ()
        [(_ (who p arg ...) body ...)
         (lambda (who p arg ...)
           (when (port-closed? p) (port-closed-error who p))
           (locked-input h body ...))]))
    (make-port-handler
      (lambda (who p)                                      ; ready?
        (when (port-closed? p) (port-closed-error who p))
        (or (handle-in-eof? h) (fx> (buffered h) 0) (not (eq? (port-fill-handle! h) 'again))))
      (op (who p) (next-byte! who h #f))                   ; lookahead
      (op (who p x) (unget-byte! h x))                     ; unget
      (op (who p)                                          ; get
        (if (fx> (buffered h) 0)
            (let* ([i (handle-in-start h)] [b (bytevector-u8-ref (handle-in-buf h) i)])
              (handle-in-start-set! h (fx+ i 1))
              b)
            (next-byte! who h #t)))
      (op (who p bv start n)                               ; get-some
        (if (fx= n 0) 0 (read-some! who h bv start n)))
      (op (who p)                                          ; clear-input
        (handle-in-eof?-set! h #f)
        (handle-in-start-set! h (handle-in-end h)))
      #f #f #f #f                                          ; put, put-some, flush, clear-output
      (lambda (who p) (close! p))
      #f #f #f #f #f #f))

  ;; Writes all n bytes (the output lock keeps them contiguous); parks
  ;; while the descriptor is full.
  (define (write-all! h bv start n)
    (with-port-lock (handle-out-lock h)
      (let loop ([start start] [left n])
        (if (fx= left 0)
            n
            (let ([k (write-some! h bv start left)])
              (loop (fx+ start k) (fx- left k)))))))

  ;; Writes at least one byte; parks while the descriptor is full.
  (define (write-some! h bv start n)
    (if (fx= n 0)
        0
        (let ([socket? (eq? (handle-kind h) 'socket)])
          (let loop ()
            (let* ([seq (fd-seq (handle-rec h) 'write)]
                   [r (handle-call h (lambda (fd) (sys-write fd bv start n socket?)))])
              (cond
                [(or (not r) (handle-out-closed? h)) (closed-error 'write h)]
                [(fx> r 0) r]
                [(or (fx= r 0) (fx= r (fx- 0 errno-again))) (handle-wait-write! h seq) (loop)]
                [else (raise-os-error 'write r 'write (handle-name h))]))))))

  ;; ---------------------------------------------------------------- ports
  ;; Unreachable handles close their descriptor.  A Chez guardian is not
  ;; safe to register with or drain from two OS threads at once: both go
  ;; through reclaim-lock (a mutex, held with interrupts disabled, for the
  ;; guardian call only).
  (define reclaim-guardian (make-guardian))
  (define reclaim-lock (make-mutex))
  (define reclaim
    (case-lambda
      [() (with-interrupts-disabled (with-mutex reclaim-lock (reclaim-guardian)))]
      [(h) (with-interrupts-disabled (with-mutex reclaim-lock (reclaim-guardian h)))]))

  (define (reclaim-unreachable-handles!)
    (let loop ()
      (let ([h (reclaim)])
        (when h (close-handle! h) (loop)))))

  ;; port -> (handle . direction), for sync, tcp-addresses and custodians.
  (define ports (make-weak-eq-hashtable))
  (define ports-lock (make-mutex))

  (define (fd-port-entry p)
    (with-interrupts-disabled (with-mutex ports-lock (hashtable-ref ports p #f))))
  (define (fd-port? p) (and (port? p) (fd-port-entry p) #t))
  (define (fd-port-handle p) (let ([e (fd-port-entry p)]) (and e (car e))))

  ;; A handle for a descriptor that has no ports (a listening socket),
  ;; closed with close-handle! or when unreachable.
  (define (open-handle fd name kind)
    (reclaim-unreachable-handles!)
    (let ([h (make-handle fd name kind 1)])
      (reclaim h)
      h))

  ;; One port closed: the last one closes the handle.  on-output-close runs
  ;; when the output port closes (a socket sends its FIN there).
  ;; Threads waiting on the closed direction wake and raise "port is closed".
  (define (port-closed! h on-output-close out?)
    (if out?
        (begin (on-output-close) (handle-out-closed?-set! h #t) (fd-wake! (handle-rec h) 'write))
        (begin (handle-in-closed?-set! h #t) (fd-wake! (handle-rec h) 'read)))
    (when (with-interrupts-disabled
            (handle-open-ports-set! h (fx- (handle-open-ports h) 1))
            (fx= 0 (handle-open-ports h)))
      (close-handle! h)))

  ;; Binary ports over fd: (values input-port-or-#f output-port-or-#f).
  ;; kind: 'socket or 'pipe.  fd must be non-blocking.
  ;; The ports belong to the current custodian; make-fd-ports/custodian
  ;; names it, for code that may run where no thread of the ports' owner
  ;; is current (an accept completed by the poller).
  (define (make-fd-ports fd name kind in? out?)
    (make-fd-ports/custodian fd name kind in? out? (current-custodian)))

  (define (make-fd-ports/custodian fd name kind in? out? custodian)
    (reclaim-unreachable-handles!)
    (let* ([h (make-handle fd name kind (+ (if in? 1 0) (if out? 1 0)))]
           [shut-write (lambda ()
                         (when (and (eq? kind 'socket) (not (handle-abandoned? h)))
                           (handle-call h (lambda (fd) (sys-shutdown fd 1)))))]
           [in (and in?
                    (#%$make-binary-input-port name
                      (make-input-handler h
                        (lambda (p)
                          ;; only the first close of the port counts
                          (when (with-interrupts-disabled
                                  (with-mutex ports-lock
                                    (and (not (port-closed? p)) (begin (#%mark-port-closed! p) #t))))
                            (port-closed! h void #f))))
                      ;; Chez's buffer: its size is set to 0 below, before
                      ;; the port is seen, and stays 0 (Chez's file ports
                      ;; keep at least one byte; so do we)
                      (make-bytevector 1) #f))]
           [out (and out?
                     (make-custom-binary-output-port name
                       (lambda (bv start n) (write-all! h bv start n))
                       #f #f
                       (lambda () (port-closed! h shut-write #t))))])
      ;; Chez's buffers are kept out of the way (see the top of the file)
      (when in
        (set-binary-port-input-size! in 0)
        (#%$set-port-flags! in block-buffered-flags))
      (when out (set-binary-port-output-buffer! out (make-bytevector output-buffer-size)))
      (with-interrupts-disabled
        (with-mutex ports-lock
          (when in (hashtable-set! ports in (cons h 'in)))
          (when out (hashtable-set! ports out (cons h 'out)))))
      (reclaim h)
      ;; the ports belong to the current custodian (a shut-down one refuses
      ;; them: the descriptor is closed and the error raised)
      (guard (c [#t (close-handle! h) (raise c)])
        (when in (custodian-register! in fd-port-kind 'make-fd-ports custodian))
        (when out (custodian-register! out fd-port-kind 'make-fd-ports custodian)))
      (values in out)))

  ;; A custodian closes a port's descriptor first, so that a thread waiting
  ;; in a read or write wakes with "port is closed", then the port itself
  ;; (dropping unflushed output: it could only fail).
  (define fd-port-kind
    (make-custodian-kind
      (lambda (p)
        (let ([h (fd-port-handle p)])
          (when h (close-handle! h))
          (guard (c [#t (void)])
            (when (output-port? p) (set-binary-port-output-index! p 0))
            (close-port p))))
      port-closed?))

  ;; Closes p; an output port of a socket sends no FIN (Racket's
  ;; tcp-abandon-port), so the peer sees the end only when the socket closes.
  (define (abandon-port! p)
    (let ([e (fd-port-entry p)])
      (when (and e (eq? (cdr e) 'out)) (handle-abandoned?-set! (car e) #t))
      (close-port p)))

  ;; Bytes that p can give without a system call (read without the lock:
  ;; a hint, as any count is once another reader may take them).
  (define (port-buffered-count p)
    (fxmax 0 (buffered (fd-port-handle p))))

  ;; #t if byte is among them.
  (define (port-buffered-has? p byte)
    (let* ([h (fd-port-handle p)] [buf (handle-in-buf h)])
      (and buf
           (let ([end (fxmin (handle-in-end h) (bytevector-length buf))])
             (let loop ([i (handle-in-start h)])
               (and (fx< i end)
                    (or (fx= (bytevector-u8-ref buf i) byte) (loop (fx+ i 1)))))))))

  ;; Reads what the descriptor has now into p's buffer, without blocking:
  ;; 'data, 'again (nothing now: the direction is marked idle, so its
  ;; ready evt waits for the next edge; also while another thread holds
  ;; the input lock), 'full, or 'end (end of file, an error or a closed
  ;; port: a read returns at once).
  (define (port-fill! p)
    (if (port-closed? p) 'end (port-fill-handle! (fd-port-handle p))))

  (define (port-fill-handle! h)
    (cond
      [(or (handle-closed? h) (handle-in-closed? h)) 'end]
      [(not (port-try-lock! (handle-in-lock h))) 'again]
      [else
       (let ([r (if (and (handle-in-buf h) (fx= (buffered h) (bytevector-length (handle-in-buf h))))
                    'full
                    (let* ([seq (fd-seq (handle-rec h) 'read)] [r (fill-buffer! h)])
                      (cond
                        [(and r (fx> r 0)) 'data]
                        [(and r (fx= r (fx- 0 errno-again)))
                         (fd-idle! (handle-rec h) 'read seq)
                         (when (fx= 0 (buffered h)) (return-buffer! h))
                         'again]
                        [else 'end])))])
         (port-unlock! (handle-in-lock h))
         r)]))

  ;; Ready (with result v) when a read from p would not block: bytes are
  ;; buffered, or the descriptor has bytes or end of file (checked by
  ;; filling p's buffer, without blocking), or p is closed.
  (define (fd-port-input-ready-evt p v)
    (guard-evt
      (lambda ()
        (if (and (not (port-closed? p)) (fx> (port-buffered-count p) 0))
            (wrap-evt always-evt (lambda (_) v))
            (if (eq? (port-fill! p) 'again)
                (fd-ready-evt (handle-rec (fd-port-handle p)) 'read v)
                (wrap-evt always-evt (lambda (_) v)))))))

  ;; Ready when the descriptor may take bytes (or p is closed).
  (define (fd-port-output-ready-evt p v)
    (let ([h (fd-port-handle p)])
      (fd-ready-evt (handle-rec h) 'write v)))

  ;; Every port is an evt: spindle's descriptor ports are ready when a
  ;; read (or write) would not block, other ports at once.  Result: the port.
  (port-evt-proc-set!
    (lambda (p)
      (let ([e (fd-port-entry p)])
        (cond
          [(not e) (wrap-evt always-evt (lambda (_) p))]
          [(eq? (cdr e) 'in) (fd-port-input-ready-evt p p)]
          [else (fd-port-output-ready-evt p p)])))))
