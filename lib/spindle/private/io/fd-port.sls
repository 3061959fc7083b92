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
;;; both ports are built on Chez's port-handler record (as synchronized
;;; ports are) with empty Chez buffers, so every get-u8, lookahead-u8,
;;; unget-u8, put-u8 and bulk read or write is one call of its handler,
;;; which works under the direction's lock.  Output is written through:
;;; each put-u8 and put-bytevector has reached the kernel when it returns
;;; (parking while the descriptor is full), and flush has nothing to do.
;;; The output port is marked line-buffered for Chez, so that a textual
;;; port made over it with transcoded-port (which keeps a buffer of its
;;; own) passes its text on at every newline.  The lock belongs to a
;;; thread, and a dead owner's lock is taken over, so a thread killed while
;;; it waits inside a read or write blocks nobody; a call that raises
;;; releases it first.
;;;
;;; A port records its handle (private/io/fd-handle: the descriptor, its
;;; input buffer and locks) and direction in its info field (Chez's
;;; per-port slot), so no table keeps a dropped port's handle alive.
(library (spindle private io fd-port)
  (export make-fd-ports make-fd-ports/custodian abandon-port! fd-port? fd-port-handle
          fd-port-output-ready-evt fd-port-write-some!
          port-buffered-count port-buffered-has? port-fill!
          ;; from private/io/fd-handle, for the libraries that make ports
          open-handle handle? handle-fd handle-rec handle-name handle-closed? handle-kind close-handle!
          handle-call raise-os-error)
  (import (chezscheme) (spindle private host ports) (spindle private io poller)
          (spindle private io fd-handle)
          (only (spindle private os descriptors) sys-read sys-write)
          (only (spindle private os libc) errno-again)
          (only (spindle private os polling) descriptor-writable? descriptor-output-room)
          (only (spindle private os sockets) sys-shutdown shut-write)
          (only (spindle private core owner-lock) owner-lock-acquire! owner-lock-release!
                owner-lock-try-acquire!)
          (only (spindle private core sync) always-evt wrap-evt guard-evt replace-evt register-evt-kind!)
          (spindle private io custodian-hooks))

  ;; ---------------------------------------------------------------- port locks
  ;; Owner locks (see (spindle private core owner-lock)): a lock whose
  ;; owner died (killed while parked in a read) goes to the next waiter.
  (define port-lock! owner-lock-acquire!)
  (define port-unlock! owner-lock-release!)
  ;; #t if the lock was free and is now the caller's.
  (define port-try-lock! owner-lock-try-acquire!)

  (define-syntax with-port-lock
    (syntax-rules ()
      [(_ l e ...) (let ([lock l])
                     (port-lock! lock)
                     (call-with-values (lambda () e ...)
                       (lambda vals (port-unlock! lock) (apply values vals))))]))

  ;; Every use of a closed port (closed before the call, or while the call
  ;; waited) raises this: an &i/o-port error naming the operation.
  (define (closed-error who p)
    (raise (condition (make-i/o-port-error p) (make-who-condition who)
                      (make-message-condition "port is closed") (make-irritants-condition (list p)))))

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

  (define (closed-failure who p)
    (make-failure (guard (c [#t c]) (closed-error who p))))

  ;; With the input lock held: #t once a byte is buffered (parking while
  ;; the descriptor has none), #f at end of file, or a failure.
  (define (await-input! who p h)
    (let loop ()
      (cond
        [(fx> (buffered h) 0) #t]
        [(handle-in-eof? h) #f]
        [else
         (let* ([seq (fd-seq (handle-rec h) 'read)] [r (fill-buffer! h)])
           (cond
             [(or (not r) (handle-in-closed? h)) (closed-failure who p)]
             [(fx> r 0) #t]
             [(fx= r 0) #f]
             [(fx= r (fx- 0 errno-again)) (return-buffer! h) (handle-wait-read! h seq) (loop)]
             ;; a reset peer reads as an error, as in Racket
             [else (make-failure (guard (c [#t c]) (raise-os-error who r 'read (handle-name h))))]))])))

  ;; With the input lock held: at least one byte into bv, the count, or
  ;; eof, or a failure; parks while none is there.  Large reads go
  ;; straight into bv.
  (define (read-some! who p h bv start n)
    (let loop ()
      (cond
        [(fx> (buffered h) 0) (take-buffered! h bv start n)]
        [(handle-in-eof? h) (handle-in-eof?-set! h #f) (eof-object)]
        [(fx< n 4096) (let ([r (await-input! who p h)])
                        (cond [(eq? r #t) (take-buffered! h bv start n)] [r r] [else (eof-object)]))]
        [else
         (let* ([seq (fd-seq (handle-rec h) 'read)]
                [r (handle-call h (lambda (fd) (sys-read fd bv start n)))])
           (cond
             [(or (not r) (handle-in-closed? h)) (closed-failure who p)]
             [(fx> r 0) r]
             [(fx= r 0) (eof-object)]
             [(fx= r (fx- 0 errno-again)) (return-buffer! h) (handle-wait-read! h seq) (loop)]
             [else (make-failure (guard (c [#t c]) (raise-os-error who r 'read (handle-name h))))]))])))

  ;; With the input lock held: the next byte (taken if take?), or eof.
  (define (next-byte! who p h take?)
    (let ([r (await-input! who p h)])
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
  ;; Chez's port-flag-line-buffered (see the top of the file).
  (define line-buffered-flag #x400)

  (define block-buffered-flags
    (let* ([custom (make-custom-binary-input-port "probe" (lambda (bv start n) 0) #f #f #f)]
           [bare (make-handler-binary-input-port "probe" (port-handler-of custom) (make-bytevector 1) #f)])
      (fold-left (lambda (acc i)
                   (let ([bit (fxsll 1 i)])
                     (if (and (port-flags-set? custom bit) (not (port-flags-set? bare bit))) (fxior acc bit) acc)))
                 0 (iota 24))))

  ;; A port-handler operation: refuses a closed port, then runs body.
  (define-syntax port-op
    (syntax-rules ()
      [(_ (who p arg ...) body ...)
       (lambda (who p arg ...)
         (when (port-closed? p) (closed-error who p))
         body ...)]))

  ;; The input port's handler.  Its Chez buffer is empty and stays so:
  ;; Chez calls the handler for every read, and the handler takes the
  ;; input lock, so one byte goes to exactly one reader on any OS thread.
  (define (make-input-handler h close!)
    (define-syntax op
      (syntax-rules ()
        [(_ (who p arg ...) body ...) (port-op (who p arg ...) (locked-input h body ...))]))
    (make-port-handler
      (lambda (who p)                                      ; ready?
        (when (port-closed? p) (closed-error who p))
        (or (handle-in-eof? h) (fx> (buffered h) 0) (not (eq? (port-fill-handle! h) 'again))))
      (op (who p) (next-byte! who p h #f))                 ; lookahead
      (op (who p x) (unget-byte! h x))                     ; unget
      (op (who p)                                          ; get
        (if (fx> (buffered h) 0)
            (let* ([i (handle-in-start h)] [b (bytevector-u8-ref (handle-in-buf h) i)])
              (handle-in-start-set! h (fx+ i 1))
              b)
            (next-byte! who p h #t)))
      (op (who p bv start n)                               ; get-some
        (if (fx= n 0) 0 (read-some! who p h bv start n)))
      (op (who p)                                          ; clear-input
        (handle-in-eof?-set! h #f)
        (handle-in-start-set! h (handle-in-end h)))
      #f #f #f #f                                          ; put, put-some, flush, clear-output
      (lambda (who p) (close! p))
      #f #f #f #f #f #f))

  ;; ---------------------------------------------------------------- output port
  ;; With the output lock held: writes all n bytes; parks while the
  ;; descriptor is full.
  (define (write-all! who p h bv start n)
    (let loop ([start start] [left n])
      (unless (fx= left 0)
        (let ([k (write-some! who p h bv start left)])
          (loop (fx+ start k) (fx- left k))))))

  ;; With the output lock held: writes at least one byte (n > 0) and
  ;; returns the count; parks while the descriptor is full.
  (define (write-some! who p h bv start n)
    (let ([socket? (eq? (handle-kind h) 'socket)])
      (let loop ()
        (let* ([seq (fd-seq (handle-rec h) 'write)]
               [r (handle-call h (lambda (fd) (sys-write fd bv start n socket?)))])
          (cond
            [(or (not r) (handle-out-closed? h)) (closed-error who p)]
            [(fx> r 0) r]
            [(or (fx= r 0) (fx= r (fx- 0 errno-again))) (handle-wait-write! h seq) (loop)]
            [else (raise-os-error who r 'write (handle-name h))])))))

  ;; The output port's handler.  Its Chez buffer is empty and stays so:
  ;; Chez calls put for every put-u8 and put-some for every bulk write
  ;; (put-bytevector, a transcoded port's flush), each under the output
  ;; lock, which a raise releases (with-port-lock).
  (define (make-output-handler h close!)
    (make-port-handler
      #f #f #f #f #f #f                                    ; the input operations
      (port-op (who p b)                                        ; put
        (with-port-lock (handle-out-lock h)
          (bytevector-u8-set! (handle-out-byte h) 0 b)
          (write-all! who p h (handle-out-byte h) 0 1)))
      (port-op (who p bv start n)                               ; put-some
        (with-port-lock (handle-out-lock h) (write-all! who p h bv start n))
        n)
      (port-op (who p) (void))                                  ; flush: nothing is held
      (port-op (who p) (void))                                  ; clear-output
      (lambda (who p) (close! p))
      #f #f #f #f #f #f))

  ;; One write of at least one byte of bv[start, start+n) (n > 0) on
  ;; output port p, under its lock: the count.  Parks while p is full.
  (define (fd-port-write-some! who p bv start n)
    (when (port-closed? p) (closed-error who p))
    (let ([h (fd-port-handle p)])
      (with-port-lock (handle-out-lock h) (write-some! who p h bv start n))))

  ;; ---------------------------------------------------------------- ports
  ;; A port's info: its handle and direction ('in or 'out); closing? is a
  ;; box set by the first close of the port (only that one counts).
  (define-record-type fd-entry
    (fields handle dir closing?)
    (nongenerative spindle-fd-entry-v1) (sealed #t))

  (define (fd-port-entry p)
    (let ([i (port-info p)]) (and (fd-entry? i) i)))
  (define (fd-port? p) (and (port? p) (fd-port-entry p) #t))
  (define (fd-port-handle p) (let ([e (fd-port-entry p)]) (and e (fd-entry-handle e))))

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
    (make-fd-ports/custodian fd name kind in? out? (current-custody)))

  (define (make-fd-ports/custodian fd name kind in? out? custodian)
    (reclaim-unreachable-handles!)
    (let* ([h (make-handle fd name kind (+ (if in? 1 0) (if out? 1 0)))]
           [shut-write (lambda ()
                         (when (and (eq? kind 'socket) (not (handle-abandoned? h)))
                           (handle-call h (lambda (fd) (sys-shutdown fd shut-write)))))]
           ;; only the first close of a port counts (a transcoded port's
           ;; close reaches the handler through Chez's copy of the port)
           [closer (lambda (e on-close out?)
                     (lambda (p)
                       (mark-port-closed! p)
                       (when (box-cas! (fd-entry-closing? e) #f #t)
                         (port-closed! h on-close out?))))]
           [in-entry (make-fd-entry h 'in (box #f))]
           [out-entry (make-fd-entry h 'out (box #f))]
           [in (and in?
                    (make-handler-binary-input-port name
                      (make-input-handler h (closer in-entry void #f))
                      ;; Chez's buffer: its size is set to 0 below, before
                      ;; the port is seen, and stays 0 (Chez's file ports
                      ;; keep at least one byte; so do we)
                      (make-bytevector 1) in-entry))]
           [out (and out?
                     (make-handler-binary-output-port name
                       (make-output-handler h (closer out-entry shut-write #t))
                       #vu8() out-entry))])
      ;; Chez's buffers are kept out of the way (see the top of the file)
      (when in
        (set-binary-port-input-size! in 0)
        (set-port-flags! in block-buffered-flags))
      (when out (set-port-flags! out line-buffered-flag))
      (guard-handle! h)
      ;; the ports belong to the current custodian (a shut-down one refuses
      ;; them: the descriptor is closed and the error raised)
      (guard (c [#t (close-handle! h) (raise c)])
        (when in (custody-register! in fd-port-kind 'make-fd-ports custodian))
        (when out (custody-register! out fd-port-kind 'make-fd-ports custodian)))
      (values in out)))

  ;; A custodian closes a port's descriptor first, so that a thread waiting
  ;; in a read or write wakes with "port is closed", then the port itself
  ;; (dropping unflushed output: it could only fail).
  (define fd-port-kind
    (make-custody-kind
      (lambda (p)
        (let ([h (fd-port-handle p)])
          (when h (close-handle! h))
          (guard (c [#t (void)]) (close-port p))))
      port-closed?))

  ;; Closes p; an output port of a socket sends no FIN (Racket's
  ;; tcp-abandon-port), so the peer sees the end only when the socket closes.
  (define (abandon-port! p)
    (let ([e (fd-port-entry p)])
      (when (and e (eq? (fd-entry-dir e) 'out)) (handle-abandoned?-set! (fd-entry-handle e) #t))
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

  ;; Ready (with result v) when a write of `need` bytes to p would not
  ;; block, checked with the kernel each time it is tried (need 1:
  ;; poll(2); more: the buffer's free space, descriptor-output-room), or
  ;; when p is closed or failed (a write raises at once).  While not ready
  ;; it waits for the descriptor's next write edge and looks again.
  (define (fd-port-output-ready-evt p v need)
    (let* ([h (fd-port-handle p)] [rec (handle-rec h)])
      (define (check)
        (let ([seq (fd-seq rec 'write)])
          (if (or (port-closed? p) (handle-out-closed? h)
                  (let ([r (handle-call h (lambda (fd)
                                            (and (descriptor-writable? fd)
                                                 (or (fx<= need 1)
                                                     (let ([room (descriptor-output-room fd (handle-kind h))])
                                                       (or (not room) (fx>= room need)))))))])
                    ;; #f from handle-call: closed
                    (or r (handle-closed? h))))
              (wrap-evt always-evt (lambda (_) v))
              (begin
                (fd-idle! rec 'write seq)
                (replace-evt (fd-ready-evt rec 'write #t) (lambda (_) (check)))))))
      (guard-evt check)))

  ;; Every port is an evt: spindle's descriptor ports are ready when a
  ;; read (or write) would not block, other ports at once.  Result: the port.
  (register-evt-kind! port?
    (lambda (p)
      (let ([e (fd-port-entry p)])
        (cond
          [(not e) (wrap-evt always-evt (lambda (_) p))]
          [(eq? (fd-entry-dir e) 'in) (fd-port-input-ready-evt p p)]
          [else (fd-port-output-ready-evt p p 1)])))))
