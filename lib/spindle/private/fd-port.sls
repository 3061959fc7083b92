#!chezscheme
;;; Chez binary ports over non-blocking descriptors (sockets, pipes) whose
;;; reads and writes park the calling thread, not its OS thread, when the
;;; descriptor is not ready.
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
          port-input-buffered? port-fill! raise-os-error reclaim-unreachable-handles!)
  (import (chezscheme) (spindle private poller) (spindle private posix-io)
          (only (spindle private sync) always-evt wrap-evt guard-evt port-evt-proc-set!)
          (only (spindle custodian) custodian-register! make-custodian-kind current-custodian))

  (define-record-type handle
    (fields fd rec name kind            ; kind: socket or pipe
            users                       ; box: 2 x calls in flight + closing bit
            (mutable open-ports)        ; ports still open (under interrupts disabled)
            (mutable on-close)          ; thunks run once the descriptor is closed
            (mutable abandoned?)        ; the output port closes without a FIN
            (mutable in-closed?) (mutable out-closed?))
    (protocol
      (lambda (new)
        (lambda (fd name kind open-ports)
          (new fd (fd-watch fd) name kind (box 0) open-ports '() #f #f #f))))
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

  ;; At least one byte, or 0 at end of file; parks while none is there.
  (define (read-some! h bv start n)
    (let loop ()
      (let* ([seq (fd-seq (handle-rec h) 'read)]
             [r (handle-call h (lambda (fd) (sys-read fd bv start n)))])
        (cond
          [(or (not r) (handle-in-closed? h)) (closed-error 'read h)]
          [(fx>= r 0) r]
          [(fx= r (fx- 0 errno-again)) (handle-wait-read! h seq) (loop)]
          ;; a reset peer reads as an error, as in Racket
          [else (raise-os-error 'read r 'read (handle-name h))]))))

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
  ;; Unreachable handles close their descriptor.
  (define reclaim (make-guardian))

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

  (define buffer-size 16384)

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
                    (make-custom-binary-input-port name
                      (lambda (bv start n) (read-some! h bv start n))
                      #f #f
                      (lambda () (port-closed! h void #f))))]
           [out (and out?
                     (make-custom-binary-output-port name
                       (lambda (bv start n) (write-some! h bv start n))
                       #f #f
                       (lambda () (port-closed! h shut-write #t))))])
      (when in
        (set-binary-port-input-buffer! in (make-bytevector buffer-size))
        (set-binary-port-input-size! in 0))
      (when out (set-binary-port-output-buffer! out (make-bytevector buffer-size)))
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

  (define (port-input-buffered? p)
    (fx< (binary-port-input-index p) (binary-port-input-size p)))

  ;; Reads what the descriptor has now into the end of p's buffer, without
  ;; blocking: 'data, 'again (nothing now: the direction is marked idle, so
  ;; its ready evt waits for the next edge), 'full, or 'end (end of file,
  ;; an error or a closed port: a read returns at once).
  (define (port-fill! p)
    (let ([h (fd-port-handle p)])
      (if (or (port-closed? p) (handle-closed? h))
          'end
          (let* ([buf (binary-port-input-buffer p)] [i (binary-port-input-index p)]
                 [n (binary-port-input-size p)])
            (when (and (fx> i 0) (fx< i n))           ; move what is left to the start
              (bytevector-copy! buf i buf 0 (fx- n i)))
            (let ([n (fx- n i)])
              (set-binary-port-input-size! p n)
              (if (fx= n (bytevector-length buf))
                  'full
                  (let* ([seq (fd-seq (handle-rec h) 'read)]
                         [r (handle-call h (lambda (fd) (sys-read fd buf n (fx- (bytevector-length buf) n))))])
                    (cond
                      [(and r (fx> r 0)) (set-binary-port-input-size! p (fx+ n r)) 'data]
                      [(and r (fx= r (fx- 0 errno-again))) (fd-idle! (handle-rec h) 'read seq) 'again]
                      [else 'end]))))))))

  ;; Ready (with result v) when a read from p would not block: bytes are
  ;; buffered, or the descriptor has bytes or end of file (checked by
  ;; filling p's buffer, without blocking), or p is closed.
  (define (fd-port-input-ready-evt p v)
    (guard-evt
      (lambda ()
        (if (and (not (port-closed? p)) (port-input-buffered? p))
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
