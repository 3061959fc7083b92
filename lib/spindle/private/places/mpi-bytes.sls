#!chezscheme
;;; Point-to-point messages of raw bytes, in place: rmpi-send-bytes sends
;;; a range of a bytevector or shared vector without copying it, and
;;; rmpi-recv-bytes! receives straight into the caller's buffer (no
;;; allocation, no decoding) and returns the byte count.  The fast path
;;; of (spindle mpi) for data that is already bytes.
;;;
;;; These messages travel on tag + bytes-tag-base, a stream of their own:
;;; rmpi-recv never sees them and rmpi-recv-bytes! never sees rmpi-send's
;;; (which carry a kind byte).
;;;
;;; A receive is a matched probe (MPI_Improbe) then MPI_Mrecv of exactly
;;; the probed size into the buffer, not an MPI_Irecv posted into it:
;;; Open MPI 4.1.4 writes a truncated rendezvous message (one over the
;;; eager limit, 4 KiB over shared memory) past the end of the receive
;;; buffer, over shared memory (cma) and over TCP (bench/MPI.md has the C
;;; reproduction), so a message larger than the buffer must be known
;;; before it is received.  It is then received into scratch memory and
;;; dropped, and the receive raises.
;;;
;;; MPI reads a send buffer until the send completes, from whichever OS
;;; thread makes an MPI call: a bytevector is locked (lock-object) unless
;;; the send completes while interrupts are still disabled after its
;;; address was taken (no collection can move it meanwhile).
;;;
;;; Waiting: the common message arrives within microseconds, so a receive
;;; first probes with interrupts disabled (first-looks probes, ~2 us),
;;; then probes yielding every 8 looks for spin-us, then parks on its
;;; evt, whose registration the progress thread probes (mpi-engine's
;;; probers).  A send that MPI does not complete at once (a rendezvous)
;;; is tested the same way, for spin-us plus a nanosecond per byte, then
;;; parks while the progress thread tests it.
;;;
;;; A message received for an evt whose sync another branch won is
;;; copied to `early` and is the next receive's for its (comm, source,
;;; tag): none is lost.
(library (spindle private places mpi-bytes)
  (export rmpi-send-bytes rmpi-recv-bytes! rmpi-recv-bytes!-evt)
  (import (except (chezscheme) sleep make-parameter parameterize)
          (spindle private os mpi)
          (only (spindle private os memory) malloc free foreign->bytevector! bytevector->foreign!)
          (only (spindle private os libc) bytes-at)
          (only (spindle private core atomic) with-atomic with-os-mutex assert-atomic)
          (only (spindle private core evt-core) prim-evt commit-one! commit-partner! make-latch latch-fire!
                record-prints-as! evt-trace-reason!)
          (only (spindle private core scheduler) yield! current-gthread gthread-cleanup-set!)
          (only (spindle private core sync) sync wrap-evt current-inexact-monotonic-milliseconds)
          (only (spindle private places shared-vector) shared-vector? shared-vector-kind shared-vector-length
                shared-vector-address)
          (spindle private places mpi-world)
          (only (spindle private places mpi-engine) handle->pending add-request! test! poke! add-prober! remove-prober!))

  (define bytes-tag-base 32768)   ; Open MPI's MPI_TAG_UB is 2^31-1
  (define spin-us 30.)
  ;; When a thread that has tested its request since now stops and parks.
  (define (spin-end n) (+ (current-inexact-monotonic-milliseconds) (/ (+ spin-us (/ n 1000.)) 1000.)))
  ;; Buffers above this are tested with a __collect_safe MPI_Test: a test
  ;; may copy the whole message (single-copy cma), which must not hold up
  ;; other threads' collections.
  (define large-buffer 65536)

  ;; ------------------------------------------------------------ buffers
  (define (buffer-size who buf)
    (cond
      [(bytevector? buf) (bytevector-length buf)]
      [(shared-vector? buf)
       (if (eq? (shared-vector-kind buf) 'bytes) (shared-vector-length buf) (fx* 8 (shared-vector-length buf)))]
      [else (assertion-violation who "expected a bytevector or a shared vector" buf)]))

  ;; The address of byte i of buf; for a bytevector, valid only until the
  ;; next collection (interrupts disabled, no __collect_safe call since).
  (define-syntax buffer-address
    (syntax-rules ()
      [(_ buf i) (if (bytevector? buf) (bytes-at buf i) (+ (shared-vector-address buf) i))]))

  (define (lock! buf) (when (bytevector? buf) (lock-object buf)))
  (define (unlock! buf) (when (bytevector? buf) (unlock-object buf)))

  ;; (values start n): the byte range of buf given by the optional
  ;; arguments (start [end]).
  (define (byte-range who buf opt)
    (let* ([size (buffer-size who buf)]
           [start (if (pair? opt) (car opt) 0)]
           [end (if (and (pair? opt) (pair? (cdr opt))) (cadr opt) size)])
      (unless (and (fixnum? start) (fx<= 0 start size))
        (assertion-violation who (format "expected a start in [0, ~a]" size) start))
      (unless (and (fixnum? end) (fx<= start end size))
        (assertion-violation who (format "expected an end in [~a, ~a]" start size) end))
      (unless (fx<= (fx- end start) max-message)
        (error who (format "a range of ~a bytes is too large (at most ~a)" (fx- end start) max-message)))
      (values start (fx- end start))))

  ;; Scratch foreign memory: flag, request, matched message, status, at
  ;; base sc.  The locked paths (the evt, cancelling) use locked-scratch,
  ;; under engine-lock; the fast paths, which make their MPI calls without
  ;; the lock (with-mpi-call), use their OS thread's own, with interrupts
  ;; disabled (so no other green thread runs on that OS thread meanwhile).
  (define-syntax flag (syntax-rules () [(_ sc) sc]))
  (define-syntax req (syntax-rules () [(_ sc) (fx+ sc 8)]))
  (define-syntax msg (syntax-rules () [(_ sc) (fx+ sc 16)]))
  (define-syntax status (syntax-rules () [(_ sc) (fx+ sc 24)]))
  (define scratch-size (fx+ 24 mpi-status-size))
  (define locked-sc #f)
  (define (locked-scratch) (or locked-sc (begin (set! locked-sc (malloc scratch-size)) locked-sc)))
  (define thread-sc (make-thread-parameter #f))   ; one per OS thread, never freed
  (define (thread-scratch) (or (thread-sc) (let ([sc (malloc scratch-size)]) (thread-sc sc) sc)))

  ;; ------------------------------------------------------------ results
  ;; A receive's result: its byte count (a fixnum), or why it failed:
  ;; (too-small size . capacity), (mpi . rc) or (finalized); raised by
  ;; the receiving thread (check-result), never under the lock.
  (define (completion rc st cap)
    (if (eqv? rc 0) (mpi-status-bytes st) (cons 'mpi rc)))

  (define (check-result who r)
    (if (fixnum? r)
        r
        (case (car r)
          [(too-small) (error who (format "a message of ~a bytes does not fit in the buffer's ~a bytes (it is dropped)" (cadr r) (cddr r)))]
          [(finalized) (error who "MPI has been finalised")]
          [else (error who (mpi-error-string (cdr r)))])))

  ;; ------------------------------------------------------------ early messages
  (define early '())              ; #(comm source tag payload), oldest first; payload: bytes or a failure

  ;; Under engine-lock: keeps what MPI wrote into buf (result r, from the
  ;; source in status st) for the next receive.
  (define (keep-early! comm tag buf start r st)
    (set! early
      (append early
        (list (vector comm (mpi-status-source st) tag
                      (if (fixnum? r)
                          (let ([b (make-bytevector r)])
                            (if (bytevector? buf)
                                (bytevector-copy! buf start b 0 r)
                                (foreign->bytevector! (+ (shared-vector-address buf) start) b 0 r))
                            b)
                          r))))))

  ;; Under engine-lock: the first early message for (comm src tag) copied
  ;; into buf, as a result; or #f.
  (define (take-early! comm src tag buf start n)
    (let loop ([l early] [prev #f])
      (cond
        [(null? l) #f]
        [(let ([m (car l)]) (and (eq? comm (vector-ref m 0)) (or (not src) (eqv? src (vector-ref m 1))) (eqv? tag (vector-ref m 2))))
         (if prev (set-cdr! prev (cdr l)) (set! early (cdr l)))
         (let ([p (vector-ref (car l) 3)])
           (cond
             [(not (bytevector? p)) p]
             [(fx> (bytevector-length p) n) (cons* 'too-small (bytevector-length p) n)]
             [else
              (if (bytevector? buf)
                  (bytevector-copy! p 0 buf start (bytevector-length p))
                  (bytevector->foreign! p 0 (+ (shared-vector-address buf) start) (bytevector-length p)))
              (bytevector-length p)]))]
        [else (loop (cdr l) l)])))

  ;; ------------------------------------------------------------ requests
  ;; MPI_Test of request handle h (scratch sc): the result once it
  ;; completed, else #f.  A test may copy a whole message, so a large
  ;; buffer's is __collect_safe (the buffer is locked).
  (define (test-handle sc h cap)
    (foreign-set! 'uptr (req sc) 0 h)
    (foreign-set! 'int (flag sc) 0 0)
    (let ([rc (if (fx> cap large-buffer) (mpi-test-safe (req sc) (flag sc) (status sc)) (mpi-test (req sc) (flag sc) (status sc)))])
      (and (or (not (eqv? rc 0)) (not (eqv? 0 (foreign-ref 'int (flag sc) 0))))
           (completion rc (status sc) cap))))

  ;; Probes up to `looks` times for a message of (comm src tag) and
  ;; receives the first into buf: its result, or #f if none came.  A
  ;; message larger than buf goes to scratch memory and is dropped.
  (define (probe-recv! sc comm src tag buf start n looks)
    (let look ([k 1])
      (foreign-set! 'int (flag sc) 0 0)
      (let ([rc (mpi-improbe (or src mpi-any-source) (fx+ tag bytes-tag-base) (rmpi-comm-handle comm) (flag sc) (msg sc) (status sc))])
        (cond
          [(not (eqv? rc 0)) (cons 'mpi rc)]
          [(not (eqv? 0 (foreign-ref 'int (flag sc) 0))) (receive-matched! sc buf start n)]
          [(fx< k looks) (look (fx+ k 1))]
          [else #f]))))

  ;; The matched message (msg sc, its status in status sc) into buf.
  ;; A large one is received __collect_safe (the transfer may be long),
  ;; buf locked meanwhile.
  (define (receive-matched! sc buf start n)
    (let ([m (mpi-status-bytes (status sc))])
      (if (fx> m n)
          (let* ([tmp (malloc (fxmax m 1))] [rc (mpi-mrecv tmp m (mpi-byte) (msg sc) (status sc))])
            (free tmp)
            (if (eqv? rc 0) (cons* 'too-small m n) (cons 'mpi rc)))
          (let ([rc (if (fx> m large-buffer)
                        (begin
                          (lock! buf)
                          (let ([rc (mpi-mrecv (buffer-address buf start) m (mpi-byte) (msg sc) (status sc))])
                            (unlock! buf)
                            rc))
                        (mpi-mrecv-small (buffer-address buf start) m (mpi-byte) (msg sc) (status sc)))])
            (completion rc (status sc) n)))))

  ;; The blocking receive's first probes, before it lets other threads
  ;; run: about 2 us, time enough for most answers of a peer that runs.
  (define first-looks 32)

  ;; ------------------------------------------------------------ the receive evt
  ;; The token of a registration is its prober (mpi-engine).
  (define-record-type recv-evt
    (parent prim-evt)
    (fields comm src tag buf start n)
    (protocol (lambda (new) (lambda (c s t b st n) ((new recv-attempt recv-cancel) c s t b st n))))
    (sealed #t))
  (define recv-evt-registered
    (begin
      (record-prints-as! (record-type-descriptor recv-evt) "rmpi-recv-bytes!-evt")
      (evt-trace-reason! (record-type-descriptor recv-evt) 'io
        (lambda (e) (list 'rmpi-recv-bytes! (or (recv-evt-src e) 'any) (recv-evt-tag e))))))

  (define (recv-attempt e s branch register?)
    (assert-atomic 'recv-attempt)
    (let ([comm (recv-evt-comm e)] [src (recv-evt-src e)] [tag (recv-evt-tag e)]
          [buf (recv-evt-buf e)] [start (recv-evt-start e)] [n (recv-evt-n e)])
      ;; Under engine-lock: one probe; #t once a message (or a failure) is
      ;; committed, 'lost if a partner committed s first (the message is
      ;; then kept early), #f if none came.
      (define (look! commit)
        (let* ([sc (locked-scratch)] [r (probe-recv! sc comm src tag buf start n 1)])
          (and r
               (or (commit s branch (list r))
                   (begin (when (fixnum? r) (keep-early! comm tag buf start r (status sc))) 'lost)))))
      (with-os-mutex engine-lock
        (cond
          [(world-finalized?) (commit-one! s branch (list '(finalized)))]
          [(and (pair? early) (take-early! comm src tag buf start n)) => (lambda (r) (commit-one! s branch (list r)))]
          [(look! commit-one!) => (lambda (x) (eq? x #t))]
          [register?
           (let ([p (lambda () (and (look! commit-partner!) #t))])
             (add-prober! p)
             p)]
          [else #f]))))

  (define (recv-cancel e p)
    (assert-atomic 'recv-cancel)
    (with-os-mutex engine-lock (remove-prober! p)))

  ;; ------------------------------------------------------------ the procedures
  (define (check-recv who comm src tag)
    (check-comm who comm)
    (when src (check-rank who comm src))
    (check-tag who tag))

  ;; (rmpi-recv-bytes! comm src buf [tag [start [end]]]) -> byte count
  (define (rmpi-recv-bytes! comm src buf . opt)
    (let ([tag (if (pair? opt) (car opt) 0)])
      (check-recv 'rmpi-recv-bytes! comm src tag)
      (let-values ([(start n) (byte-range 'rmpi-recv-bytes! buf (if (pair? opt) (cdr opt) '()))])
        (check-result 'rmpi-recv-bytes! (recv-bytes! comm src tag buf start n)))))

  ;; Takes an early message, or probes (no lock: with-mpi-call), then
  ;; syncs on a receive evt.
  (define (recv-bytes! comm src tag buf start n)
    (or (and (pair? early) (with-engine-lock (take-early! comm src tag buf start n)))
        (with-mpi-call '(finalized) (probe-recv! (thread-scratch) comm src tag buf start n first-looks))
        (let ([end (+ (current-inexact-monotonic-milliseconds) (/ spin-us 1000.))])
          (let loop ([k 1])
            (when (fx= 0 (fxand k 7)) (yield!))
            (or (with-mpi-call '(finalized) (probe-recv! (thread-scratch) comm src tag buf start n 1))
                (if (or (not (fx= 0 (fxand k 15))) (< (current-inexact-monotonic-milliseconds) end))
                    (loop (fx+ k 1))
                    (sync (make-recv-evt comm src tag buf start n))))))))

  (define (rmpi-recv-bytes!-evt comm src buf . opt)
    (let ([tag (if (pair? opt) (car opt) 0)])
      (check-recv 'rmpi-recv-bytes!-evt comm src tag)
      (let-values ([(start n) (byte-range 'rmpi-recv-bytes!-evt buf (if (pair? opt) (cdr opt) '()))])
        (wrap-evt (make-recv-evt comm src tag buf start n)
                  (lambda (r) (check-result 'rmpi-recv-bytes! r))))))

  ;; (rmpi-send-bytes comm dest buf [tag [start [end]]]): returns once MPI
  ;; is done with buf's bytes.
  (define (rmpi-send-bytes comm dest buf . opt)
    (let ([tag (if (pair? opt) (car opt) 0)] [who 'rmpi-send-bytes])
      (check-comm who comm) (check-rank who comm dest) (check-tag who tag)
      (let-values ([(start n) (byte-range who buf (if (pair? opt) (cdr opt) '()))])
        (let* ([result 0] [latch #f]
               [r (with-interrupts-disabled
                    (let ([r (with-mpi-call 'finalized (post-send! (thread-scratch) comm dest tag buf start n))])
                      (if (and (fixnum? r) (fx< r 0))
                          ;; MPI reads buf until the request completes: the
                          ;; progress machinery owns it (and buf, locked);
                          ;; the progress thread is woken only if this
                          ;; thread stops testing it itself
                          (with-engine-lock
                            (set! latch (make-latch (lambda (l) (void))))
                            (let ([p (handle->pending (fx- 0 r) (list buf)
                                       (lambda (rc st) (set! result rc) (latch-fire! latch)))])
                              (add-request! p #f)
                              p))
                          r)))])
          (cond
            [(eq? r 'finalized) (error who "MPI has been finalised")]
            [(fixnum? r) (check-rc who r)]
            [else (await-send r latch n) (check-rc who result)])))))

  ;; MPI_Isend of buf's bytes, tested once: 0 when sent, MPI's error
  ;; code, or the request handle negated, buf then locked.
  (define (post-send! sc comm dest tag buf start n)
    (let ([early-lock? (fx> n large-buffer)])
      (when early-lock? (lock! buf))
      (let ([rc (mpi-isend (buffer-address buf start) n (mpi-byte) dest (fx+ tag bytes-tag-base) (rmpi-comm-handle comm) (req sc))])
        (if (not (eqv? rc 0))
            (begin (when early-lock? (unlock! buf)) rc)
            (let* ([h (foreign-ref 'uptr (req sc) 0)] [r (test-handle sc h n)])
              (cond
                [r (when early-lock? (unlock! buf)) (if (fixnum? r) 0 (cdr r))]
                [else (unless early-lock? (lock! buf)) (fx- 0 h)]))))))

  ;; Tests the send's pending request p until it completes, then parks on
  ;; its latch (fired by whoever completes it).  A thread broken or killed
  ;; here leaves p to the progress thread, woken for it.
  (define (await-send p latch n)
    (let ([end (spin-end n)] [t (current-gthread)] [done #f])
      (define (wake-progress!) (with-engine-lock (poke!)))
      (dynamic-wind
        (lambda () (gthread-cleanup-set! t wake-progress!))
        (lambda ()
          (let loop ([k 1])
            (when (fx= 0 (fxand k 7)) (yield!))
            (cond
              [(with-engine-lock (or (world-finalized?) (test! p))) (set! done #t)]
              [(or (not (fx= 0 (fxand k 15))) (< (current-inexact-monotonic-milliseconds) end)) (loop (fx+ k 1))]
              [else (wake-progress!) (sync latch) (set! done #t)])))
        (lambda () (gthread-cleanup-set! t #f) (unless done (wake-progress!)))))))
