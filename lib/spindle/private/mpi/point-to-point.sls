#!chezscheme
;;; Point-to-point messages of (spindle mpi): rmpi-send (small messages
;;; from the OS thread's own memory, large ones as a header then their
;;; bytes on the communicator's twin), rmpi-recv and the receive evt, and
;;; freeing a group's communicator.  What completes them is the progress
;;; engine, (spindle private mpi progress).
(library (spindle private mpi point-to-point)
  (export send-message recv-internal rmpi-send rmpi-recv rmpi-recv-evt comm-free!)
  (import (except (chezscheme) sleep make-parameter parameterize)
          (spindle private os mpi)
          (only (spindle private os memory) malloc free memcpy-from-bytevector!)
          (only (spindle private os libc) bytes-at)
          (only (spindle private places buffer-pool) buffer-alloc buffer-free)
          (only (spindle private core atomic) with-os-mutex assert-atomic)
          (only (spindle private core evt-core) prim-evt commit-one! record-prints-as! evt-trace-reason!)
          (spindle private mpi data)
          (spindle private mpi world)
          (spindle private mpi progress)
          (only (spindle private core scheduler) yield!)
          (only (spindle private core sync) sync wrap-evt current-inexact-monotonic-milliseconds))
  ;; ------------------------------------------------------------ messages
  ;; A message is one kind byte then its body (private/mpi/data), in foreign memory:
  ;; the reused send-buffer when small, else a malloc'ed copy.  A send
  ;; never waits for the receiver, as Racket's rmpi-send does not (so two
  ;; ranks that send each other large messages before receiving do not
  ;; deadlock): a request MPI does not complete at once keeps its memory
  ;; and the progress thread completes it.  A message of more than
  ;; large-message bytes goes as a header (a kind byte alone: 2, a
  ;; bytevector's bytes follow; 3, an encoded value's; 5, an fxvector's) and then its bytes
  ;; alone, which the receiver takes straight into a new bytevector; an
  ;; immutable bytevector is not even copied (a mutable one is, as the
  ;; caller may change it once rmpi-send returns), nor an encoded value
  ;; or an fxvector's bytes:
  ;; MPI reads it in place, locked (lock-object) against the collector until
  ;; the send completes.  The bytes go on the communicator's twin (a
  ;; duplicate, so no receive on the communicator itself matches them and
  ;; takes them for a message), with the message's tag; a header and its
  ;; bytes are sent in one engine-lock section, so a stream's bytes follow
  ;; in the order of its headers.  So every message on a communicator
  ;; itself has at most large-message bytes, and a receive may post a
  ;; buffer of that size (post-raw!): Open MPI writes a truncated
  ;; rendezvous message past the end of its buffer (private/mpi/bytes).

  (define (send-message who comm dest tag v)
    (let-values ([(body form) (encode-body who v)])
      (let ([n (fx+ 1 (bytevector-length body))])
        (when (> n max-message)
          (error who (format "message of ~a bytes is too large (at most ~a)" (fx- n 1) (fx- max-message 1))))
        ;; completes earlier sends first: a sender that never waits may
        ;; not let the progress thread run, and their buffers are wanted
        ;; back (requests read unlocked: a hint)
        (when (requests-pending?) (with-engine-lock (unless (world-finalized?) (reap!))))
        (let ([rc (if (fx<= n small-message)
                   (send-small-fast! comm dest tag (form-kind form) body n)
                   (with-engine-lock
                    (cond
                      [(world-finalized?) 'finalized]
                      [(fx> n large-message)
                       (let ([rc (send-small! comm dest tag (header-kind form) #f)] [len (fx- n 1)])
                         (if (not (sent? rc))
                             rc
                             ;; an encoded value's or fxvector's bytes are this send's own
                             (if (or (not (eq? form 'raw)) (immutable-bytevector? body))
                                 (begin
                                   (lock-object body)
                                   (let ([rc (post-send! (bytes-at body 0) len (rmpi-comm-twin comm) dest tag body)])
                                     (unless (eq? rc 'pending) (unlock-object body))
                                     rc))
                                 ;; from the buffer pool: a fresh malloc of
                                 ;; this size is an mmap, whose page faults
                                 ;; cost more than the copy
                                 (let ([buf (buffer-alloc len)])
                                   (memcpy-from-bytevector! buf body len)
                                   (let ([rc (post-send! buf len (rmpi-comm-twin comm) dest tag (cons buf len))])
                                     (unless (eq? rc 'pending) (buffer-free buf len))
                                     rc)))))]
                      [(fx<= n small-message) (send-small! comm dest tag (form-kind form) body)]
                      [else
                       (let ([buf (malloc n)])
                         (fill! buf (form-kind form) body)
                         (let ([rc (post-send! buf n (rmpi-comm-handle comm) dest tag buf)])
                           (unless (eq? rc 'pending) (free buf))
                           rc))])))])
          (when (eq? rc 'finalized) (error who "MPI has been finalised"))
          (unless (sent? rc) (check-rc who rc))))))

  ;; A message of n <= small-message bytes (kind, then body) from this OS
  ;; thread's send buffer, MPI_Isend and one MPI_Test without the lock;
  ;; one MPI does not complete at once keeps the buffer and goes to the
  ;; progress thread.  MPI's error code, 0, or 'finalized.
  (define (send-small-fast! comm dest tag kind body n)
    (with-interrupts-off
      (let ([r (counted-mpi-call 'finalized
                 (let* ([m (own-memory)] [a (area-of m)] [buf (send-buffer-of m)])
                   (fill! buf kind body)
                   (let ([rc (mpi-isend buf n (mpi-byte) dest tag (rmpi-comm-handle comm) (+ a 48))])
                     (if (not (eqv? rc 0))
                         rc
                         (begin
                           (foreign-set! 'int a 0 0)
                           (let ([rc (mpi-test (+ a 48) a (+ a 56))])
                             (cond
                               [(not (eqv? rc 0)) rc]
                               [(not (eqv? 0 (foreign-ref 'int a 0))) 0]
                               [else (vector-set! m 2 #f) (cons (foreign-ref 'uptr (+ a 48) 0) buf)])))))))])
        (if (pair? r)
            (with-engine-lock (add-request! (handle->pending (car r) (list (cdr r)) ignore-completion) #t) 0)
            r))))

  (define (sent? rc) (or (eqv? rc 0) (eq? rc 'pending)))

  (define (fill! buf kind body)
    (foreign-set! 'unsigned-8 buf 0 kind)
    (memcpy-from-bytevector! (+ buf 1) body (bytevector-length body)))

  (define send-buffer #f)         ; handed to a send that did not complete at once
  ;; Under engine-lock: a message of at most small-message bytes from
  ;; send-buffer (kind then body; body #f: the kind alone).
  (define (send-small! comm dest tag kind body)
    (let ([buf (or send-buffer (begin (set! send-buffer (malloc small-message)) send-buffer))])
      (if body
          (fill! buf kind body)
          (foreign-set! 'unsigned-8 buf 0 kind))
      (let ([rc (post-send! buf (if body (fx+ 1 (bytevector-length body)) 1) (rmpi-comm-handle comm) dest tag buf)])
        (when (eq? rc 'pending) (set! send-buffer #f))
        rc)))

  ;; Under engine-lock: MPI_Isend of the n bytes at buf on MPI
  ;; communicator h (a communicator's handle or twin), then one MPI_Test.
  ;; Returns MPI's error code (0: sent) when done; else 'pending, the
  ;; request then owning `owned` (foreign memory or a locked bytevector,
  ;; released when the progress thread sees it complete) and 0 on failure.
  (define (post-send! buf n h dest tag owned)
    (let ([req (scratch-at (+ 24 mpi-status-size))] [st (scratch-at (+ 32 mpi-status-size))] [flag (scratch-at 0)])
      (let ([rc (mpi-isend buf n (mpi-byte) dest tag h req)])
        (if (not (eqv? rc 0))
            rc
            (begin
              (foreign-set! 'int flag 0 0)
              (let ([rc (mpi-test req flag st)])
                (if (or (not (eqv? rc 0)) (not (eqv? 0 (foreign-ref 'int flag 0))))
                    rc
                    (begin
                      (add-request! (handle->pending (foreign-ref 'uptr req 0) (list owned) ignore-completion) #t)
                      'pending))))))))

  (define rmpi-send
    (case-lambda
      [(comm dest v) (rmpi-send comm dest v 0)]
      [(comm dest v tag)
       (check-peer 'rmpi-send comm dest tag)
       (send-message 'rmpi-send comm dest tag v)]))

  ;; The receive evt: its attempt looks in early, then asks MPI; if neither
  ;; has a message it registers a receiver for the progress thread.
  (define-record-type recv-evt
    (parent prim-evt)
    (fields comm src tag)
    (protocol (lambda (new) (lambda (c s t) ((new recv-attempt recv-cancel) c s t))))
    (sealed #t))
  (define recv-evt-registered
    (begin
      (record-prints-as! (record-type-descriptor recv-evt) "rmpi-recv-evt")
      (evt-trace-reason! (record-type-descriptor recv-evt) 'io
        (lambda (e) (list 'rmpi-recv (or (recv-evt-src e) 'any) (recv-evt-tag e))))))

  (define (recv-attempt e s branch register?)
    (assert-atomic 'recv-attempt)
    (let ([comm (recv-evt-comm e)] [src (recv-evt-src e)] [tag (recv-evt-tag e)])
      (with-os-mutex engine-lock
        ;; before it registers (the sync would park), a posted first look:
        ;; an answer that comes within ~2 us is taken with no wake-up of
        ;; the progress thread and of this one (7 us a round trip)
        (let ([m (or (take-early! comm src tag)
                     (and (world-finalized?) (cons* comm src tag finalized-marker))
                     (and (rmpi-comm-freed? comm) (cons* comm src tag freed-marker))
                     (probe! 'rmpi-recv comm src tag)
                     (and register?
                          (let* ([a (area)] [r (post-raw! a (+ a 128) comm src tag first-looks)])
                            (and r (raw->message 'rmpi-recv comm tag r)))))])
          (cond
            [(and m (or (eq? (cdddr m) finalized-marker) (eq? (cdddr m) freed-marker))) (commit-one! s branch (list (cdddr m)))]
            [m (or (commit-one! s branch (list (cdddr m)))
                   (begin (return-early! m) #f))]
            [register? (add-receiver! comm src tag s branch)]
            [else #f])))))

  (define (recv-cancel e w)
    (assert-atomic 'recv-cancel)
    (with-os-mutex engine-lock (remove-receiver! w)))

  ;; A receive evt's result once MPI is finalised (rmpi-finish), or its
  ;; communicator freed: its receiver raises.
  (define (received who v)
    (cond
      [(eq? v finalized-marker) (error who "MPI has been finalised")]
      [(eq? v freed-marker) (error who "the communicator has been freed (its fork-join has returned)")]
      [else v]))

  ;; Frees comm's MPI communicators (its handle and twin) once the rank is
  ;; done with it (a fork-join group's, at its end): a receive parked on it
  ;; raises, its early messages are dropped, and a later operation on it
  ;; raises (check-comm).  Requests still pending on it complete in MPI
  ;; as usual.  (A thread still inside a call on it, past its checks,
  ;; would use a freed communicator: its group's threads are done.)
  (define (comm-free! comm)
    (with-engine-lock
      (rmpi-comm-freed?-set! comm #t)
      (drop-comm-receivers! comm)
      (unless (world-finalized?)
        (mpi-comm-free! (rmpi-comm-handle comm))
        (mpi-comm-free! (rmpi-comm-twin comm)))))

  (define rmpi-recv-evt
    (case-lambda
      [(comm src) (rmpi-recv-evt comm src 0)]
      [(comm src tag)
       (check-comm 'rmpi-recv-evt comm)
       (when src (check-rank 'rmpi-recv-evt comm src))
       (check-tag 'rmpi-recv-evt tag)
       (wrap-evt (make-recv-evt comm src tag) (lambda (v) (received 'rmpi-recv-evt v)))]))

  (define rmpi-recv
    (case-lambda
      [(comm src) (rmpi-recv comm src 0)]
      [(comm src tag)
       (check-peer 'rmpi-recv comm src tag)
       (let ([m (spin-for-message comm src tag)])
         (if m (cdddr m) (received 'rmpi-recv (sync (make-recv-evt comm src tag)))))]))

  ;; A ping-pong's answer usually comes within microseconds: rmpi-recv looks
  ;; for up to spin-recv-us before it parks (parking and the progress
  ;; thread's wake-up cost more than that), yielding between looks so
  ;; the worker's other threads run.  (cons* comm src tag value) or #f.
  (define spin-recv-us 30.)
  (define first-looks 32)
  (define (spin-for-message comm src tag)
    ;; (early read unlocked: a hint; an early message is taken under the
    ;; lock, MPI probed without it)
    ;; first?: the first look, a posted receive tested first-looks times
    ;; (about 2 us: the common answer comes meanwhile)
    (define (look first?)
      (let ([r (or (and (early-pending?) (with-engine-lock (take-early! comm src tag)))
                   (with-mpi-call 'finalized
                     (let ([a (area)])
                       (if first?
                           (post-raw! a (+ a 128) comm src tag first-looks)
                           (probe-raw! a (+ a 128) comm src tag)))))])
        (cond
          [(eq? r 'finalized) (error 'rmpi-recv "MPI has been finalised")]
          [(or (not r) (rmpi-comm? (car r))) r]    ; nothing, or an early message
          [else (raw->message 'rmpi-recv comm tag r)])))
    (or (look #t)
        (let ([end (+ (current-inexact-monotonic-milliseconds) (/ spin-recv-us 1000.))])
          ;; a yield every 8 looks: often enough for the other threads,
          ;; rarely enough that an answer is seen soon; the clock every
          ;; 16: it costs as much as a look
          (let loop ([k 1])
            (when (fx= 0 (fxand k 7)) (yield!))
            (or (look #f)
                (and (or (not (fx= 0 (fxand k 15))) (< (current-inexact-monotonic-milliseconds) end))
                     (loop (fx+ k 1))))))))


  ;; The next message from src on the internal tag (collectives' own traffic).
  (define (recv-internal comm src)
    (let ([m (spin-for-message comm src internal-tag)])
      (if m (cdddr m) (received 'rmpi-recv (sync (make-recv-evt comm src internal-tag)))))))
