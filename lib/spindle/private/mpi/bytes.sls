#!chezscheme
;;; Over 450 lines: one protocol (headers, sequence tags, early and held messages) shared by its send and receive halves.
;;; Point-to-point messages of raw bytes, in place: rmpi-send-bytes sends
;;; a range of a bytevector or shared vector without copying it, and
;;; rmpi-recv-bytes! receives straight into the caller's buffer (MPI_Irecv
;;; posted into it: no probe, no allocation, no decoding) and returns the
;;; byte count.  The fast path of (spindle mpi) for data that is already
;;; bytes.
;;;
;;; Tags: a message of tag t travels on direct-tag (t + 32768) or, when
;;; large, as a header there and its bytes on a data tag of its own
;;; (data-tag): streams of their own, never mixed with rmpi-send's.
;;;
;;; Why headers: Open MPI 4.1.4 writes a truncated rendezvous message (one
;;; over the transport's eager limit) past the end of the receive buffer,
;;; over shared memory (cma) and over TCP (bench/MPI.md has the C
;;; reproduction); a truncated eager message it cuts correctly (checked
;;; with guard bytes on self, vader and tcp), reporting MPI_ERR_TRUNCATE
;;; and the whole size.  So only messages under header-size bytes (eager
;;; on every transport: self's limit is 1 KiB with headers) go direct; a
;;; larger one sends a header of exactly header-size bytes, then its
;;; bytes.  A receive posted into the caller's range thus meets only eager
;;; messages: a header (header-size bytes, cut short if the range is
;;; smaller), or a direct message (an error if larger than the range).
;;; After a header it takes the bytes with a matched probe (MPI_Improbe,
;;; then MPI_Mrecv of exactly the probed size, into the range; into
;;; scratch memory, dropped, and an error when larger).
;;;
;;; Which bytes: several receives of one stream (comm, source, tag) may
;;; hold headers at once (threads of a rank; a receive suspended, broken
;;; or killed after MPI matched its header), and MPI gives a probe the
;;; oldest message that matches it, whoever probes first.  So a header
;;; names its bytes exactly: the sender numbers a stream's large messages
;;; (seq, from 0, under engine-lock), puts seq first in the header, and
;;; sends the bytes on (data-tag t seq), one of 65536 tags per user tag
;;; (seq modulo 65536); the receiver reads seq from its range (a range
;;; under 8 bytes receives through a bounce buffer) and probes that tag
;;; from the header's source.  The tags repeat every 65536 messages of a
;;; stream, so it probes only once the bytes of seq - 65536 were taken
;;; (`streams` records what was taken): otherwise a receive holding that
;;; old header for long would lose its bytes to this one.
;;;
;;; MPI writes a receive buffer until the request completes, from
;;; whichever OS thread makes an MPI call: a bytevector is locked
;;; (lock-object) unless the request completes while interrupts are still
;;; disabled after its address was taken (no collection can move it
;;; meanwhile).  A send gives MPI a copy of its bytes (rmpi-send-bytes).
;;;
;;; Waiting: the common message arrives within microseconds, so a receive
;;; first tests its request with interrupts disabled (first-looks tests,
;;; ~2 us), then tests it yielding every 8 tests for spin-us, then parks:
;;; it hands its posted request to a receive evt (`adopted`) and syncs on
;;; it, and the progress thread tests it from then on.  A send that MPI
;;; does not complete at once (a rendezvous) is tested the same way, for
;;; spin-us plus a nanosecond per byte, then parks.  While the receiving
;;; thread owns a posted request, a break or kill cancels it
;;; (dynamic-wind, and the thread's kill cleanup).
;;;
;;; A message MPI wrote for a receive whose sync another branch won, or
;;; that was cancelled too late, is copied to `early` and is the next
;;; receive's for its (comm, source, tag): none is lost.  A header whose
;;; bytes a blocking receive had not taken when it was broken or killed
;;; goes back there too (its `hold`), and bytes taken for a data sync
;;; that lost wait there for that header's next receive.  The one gap: a
;;; thread killed between a sync choosing rmpi-recv-bytes!-evt and the
;;; evt's wrapper taking the bytes (a few instructions) loses that large
;;; message, as a killed thread loses any evt's result; its bytes stay in
;;; MPI, and the stream's message 65536 later then never completes.
(library (spindle private mpi bytes)
  (export rmpi-send-bytes rmpi-recv-bytes! rmpi-recv-bytes!-evt)
  (import (except (chezscheme) sleep make-parameter parameterize)
          (spindle private os mpi)
          (only (spindle private os memory) malloc free memmove! foreign->bytevector! bytevector->foreign!)
          (only (spindle private places buffer-pool) buffer-alloc buffer-free)
          (only (spindle private os libc) bytes-at)
          (only (spindle private core atomic) with-atomic with-os-mutex assert-atomic)
          (only (spindle private core evt-core) prim-evt commit-one! commit-partner! make-latch latch-fire!
                record-prints-as! evt-trace-reason!)
          (only (spindle private core scheduler) yield! current-gthread gthread-cleanup-set!)
          (only (spindle private core sync) sync wrap-evt current-inexact-monotonic-milliseconds)
          (only (spindle private places shared-vector) shared-vector? shared-vector-kind shared-vector-length
                shared-vector-address)
          (spindle private mpi world)
          (only (spindle private mpi progress) handle->pending add-request! remove-request! cancel-pending!
                test! poke! add-prober! remove-prober!))

  ;; MPI tags: direct-tag in [32768, 65535); the data tags of user tag t
  ;; (below 32767, check-tag) are the 65536 from (t + 1) * 65536, one per
  ;; sequence number modulo 65536: at most 2^31 - 1, Open MPI's MPI_TAG_UB.
  (define (direct-tag t) (fx+ t 32768))
  (define seq-mask #xffff)
  (define (data-tag t seq) (fx+ (fxsll (fx+ t 1) 16) (fxand seq seq-mask)))
  ;; The key in `early` of the bytes of message seq of tag t, taken for a
  ;; receive that did not keep them: never a tag (negative), one per seq.
  (define (data-key t seq) (fx- -1 (fx+ t (fx* 32768 seq))))
  (define header-size 512)
  ;; A header is cut to the receive's range; its sequence number, its
  ;; first 8 bytes, is read from there, so a smaller range receives
  ;; through a bounce buffer of min-range bytes.
  (define min-range 8)
  (define spin-us 30.)
  ;; Buffers above this are tested with a __collect_safe MPI_Test: a test
  ;; may copy the whole message (single-copy cma), which must not hold up
  ;; other threads' collections.
  (define large-buffer 65536)
  ;; The blocking receive's first tests, before it lets other threads
  ;; run: about 2 us, time enough for most answers of a peer that runs.
  (define first-looks 32)

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

  ;; Binds s and n to the start and length of the byte range [start, end)
  ;; of buf (end #f: its end), checked; the common call, a whole
  ;; bytevector, is checked inline (14 ns of a 0.4 us send and receive).
  (define-syntax let-byte-range
    (syntax-rules ()
      [(_ who buf start end (s n) body ...)
       (let-values ([(s n) (if (and (bytevector? buf) (eqv? start 0) (not end) (fx<= (bytevector-length buf) max-message))
                               (values 0 (bytevector-length buf))
                               (byte-range who buf start end))])
         body ...)]))

  ;; (values start n): the byte range [start, end) of buf (end #f: its
  ;; end).
  (define (byte-range who buf start end)
    (let* ([size (buffer-size who buf)] [end (or end size)])
      (unless (and (fixnum? start) (fx<= 0 start size))
        (assertion-violation who (format "expected a start in [0, ~a]" size) start))
      (unless (and (fixnum? end) (fx<= start end size))
        (assertion-violation who (format "expected an end in [~a, ~a]" start size) end))
      (unless (fx<= (fx- end start) max-message)
        (error who (format "a range of ~a bytes is too large (at most ~a)" (fx- end start) max-message)))
      (values start (fx- end start))))

  ;; The optional arguments [tag 0 [start 0 [end #f]]] of the procedures.
  (define-syntax define-with-range
    (syntax-rules ()
      [(_ (name a ...) body)
       (define name
         (case-lambda
           [(a ...) (body a ... 0 0 #f)]
           [(a ... tag) (body a ... tag 0 #f)]
           [(a ... tag start) (body a ... tag start #f)]
           [(a ... tag start end) (body a ... tag start end)]))]))

  ;; Scratch foreign memory: flag, request, matched message, status, and
  ;; a header to send, at base sc.  The locked paths (the evts, cancelling)
  ;; use locked-scratch, under engine-lock; the fast paths, which make
  ;; their MPI calls without the lock (with-mpi-call), use their OS
  ;; thread's own, with interrupts disabled (so no other green thread runs
  ;; on that OS thread meanwhile).
  (define-syntax flag (syntax-rules () [(_ sc) sc]))
  (define-syntax req (syntax-rules () [(_ sc) (fx+ sc 8)]))
  (define-syntax msg (syntax-rules () [(_ sc) (fx+ sc 16)]))
  (define-syntax status (syntax-rules () [(_ sc) (fx+ sc 24)]))
  (define-syntax header (syntax-rules () [(_ sc) (fx+ sc 64)]))
  (define-syntax send-area (syntax-rules () [(_ sc) (fx+ sc (fx+ 64 header-size))]))
  (define scratch-size (fx+ 64 (fx* 2 header-size)))
  (define locked-sc #f)
  (define (locked-scratch) (or locked-sc (begin (set! locked-sc (malloc scratch-size)) locked-sc)))
  ;; One per OS thread, never freed (but by the send that takes it):
  ;; (OS thread id . address).  A thread
  ;; parameter's value is inherited by the OS threads fork-thread makes
  ;; (a parallel thread's, a pool's workers), so it is believed only on the
  ;; OS thread that made it: else two OS threads would share the memory.
  (define thread-sc (make-thread-parameter #f))
  (define (thread-scratch)
    (let ([p (thread-sc)] [id (get-thread-id)])
      (if (and p (fx= (car p) id))
          (cdr p)
          (new-thread-scratch!))))
  ;; (Also when a small send takes this OS thread's scratch with it.)
  (define (new-thread-scratch!)
    (let ([sc (malloc scratch-size)]) (thread-sc (cons (get-thread-id) sc)) sc))


  ;; ------------------------------------------------------------ results
  ;; A receive's result: its byte count (a fixnum); (header source . seq):
  ;; a large message's header, its bytes still to take from
  ;; (data-tag tag seq); or why
  ;; it failed: (too-small size . capacity), (mpi . rc) or (finalized),
  ;; raised by the receiving thread (check-result), never under a lock.
  (define (header? r) (and (pair? r) (eq? (car r) 'header)))

  (define (check-result who r)
    (if (fixnum? r)
        r
        (case (car r)
          [(too-small) (error who (format "a message of ~a bytes does not fit in the buffer's ~a bytes (it is dropped)" (cadr r) (cddr r)))]
          [(finalized) (error who "MPI has been finalised")]
          [else (error who (mpi-error-string (cdr r)))])))

  ;; The result of a completed direct-tag receive (rc, status st) into
  ;; buf's range of n bytes (n >= min-range) from start.
  (define (direct-result rc st buf start n)
    (let ([c (mpi-status-bytes st)])
      (cond
        [(not (or (eqv? rc 0) (eqv? rc mpi-err-truncate))) (cons 'mpi rc)]
        [(fx= c header-size) (cons* 'header (mpi-status-source st) (read-seq buf start))]
        [(eqv? rc mpi-err-truncate) (cons* 'too-small c n)]
        [else c])))

  ;; A header's sequence number, from buf's range at start.
  (define (read-seq buf start)
    (if (bytevector? buf)
        (bytevector-u64-native-ref buf start)
        (foreign-ref 'unsigned-64 (+ (shared-vector-address buf) start) 0)))

  ;; ------------------------------------------------------------ early messages
  ;; #(comm source key payload), oldest first: key a tag, or a data-key;
  ;; payload bytes, a failure, or a header (header source . seq)
  (define early '())

  ;; Under engine-lock: keeps result r of a receive that no sync takes
  ;; (from the source in status st; the bytes, if any, in buf) for the
  ;; next receive.
  (define (keep-early! comm tag buf start r st)
    (set! early
      (append early
        (list (vector comm (mpi-status-source st) tag
                      (if (fixnum? r)
                          (let ([b (make-bytevector r)])
                            (cond
                              [(fx= r 0)]     ; see copy-bytes!
                              [(bytevector? buf) (bytevector-copy! buf start b 0 r)]
                              [else (foreign->bytevector! (+ (shared-vector-address buf) start) b 0 r)])
                            b)
                          r))))))

  ;; Under engine-lock: the first early message for (comm src tag) (tag:
  ;; a key) copied into buf, as a result; or #f.
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
                  (copy-bytes! p buf start (bytevector-length p))
                  (bytevector->foreign! p 0 (+ (shared-vector-address buf) start) (bytevector-length p)))
              (bytevector-length p)]))]
        [else (loop (cdr l) l)])))

  ;; ------------------------------------------------------------ requests
  ;; MPI_Test of request handle h (scratch sc): #t once it completed (its
  ;; status in sc), an MPI error code, or #f.  A test may copy a whole
  ;; message, so a large buffer's is __collect_safe (the buffer is locked).
  (define (test-handle sc h cap)
    (foreign-set! 'uptr (req sc) 0 h)
    (foreign-set! 'int (flag sc) 0 0)
    (let ([rc (if (fx> cap large-buffer) (mpi-test-safe (req sc) (flag sc) (status sc)) (mpi-test (req sc) (flag sc) (status sc)))])
      (cond
        [(not (eqv? rc 0)) rc]
        [(eqv? 0 (foreign-ref 'int (flag sc) 0)) #f]
        [else #t])))

  ;; A posted direct-tag receive: its request handle, and whether buf is
  ;; locked for it.
  (define-record-type posted (fields h locked?) (sealed #t))

  ;; Under with-mpi-call or engine-lock: posts a receive on direct-tag
  ;; into buf's range and tests it up to `looks` times, interrupts
  ;; disabled throughout (so no collection moves buf meanwhile): a result
  ;; once it completed, else the posted receive, buf then locked.  A
  ;; buffer tested __collect_safe is locked before.
  (define (post-recv! sc comm src tag buf start n looks)
    (let ([early-lock? (fx> n large-buffer)])
      (when early-lock? (lock! buf))
      (let ([rc (mpi-irecv (buffer-address buf start) n (mpi-byte) (or src mpi-any-source) (direct-tag tag)
                           (rmpi-comm-handle comm) (req sc))])
        (if (not (eqv? rc 0))
            (begin (when early-lock? (unlock! buf)) (cons 'mpi rc))
            (let ([h (foreign-ref 'uptr (req sc) 0)])
              (let look ([k 1])
                (let ([t (test-handle sc h n)])
                  (cond
                    [t (when early-lock? (unlock! buf)) (direct-result (if (eq? t #t) 0 t) (status sc) buf start n)]
                    [(fx< k looks) (look (fx+ k 1))]
                    [else (unless early-lock? (lock! buf)) (make-posted h #t)]))))))))

  ;; The result of posted receive p once its test gave t (status in sc).
  (define (posted-result p t sc buf start n)
    (let ([r (direct-result (if (eq? t #t) 0 t) (status sc) buf start n)])
      (when (posted-locked? p) (unlock! buf))
      r))

  ;; Under engine-lock: cancels posted receive p; what it had received
  ;; all the same becomes early.
  (define (cancel-posted! comm tag buf start n p)
    (unless (world-finalized?)
      (let ([sc (locked-scratch)])
        (foreign-set! 'uptr (req sc) 0 (posted-h p))
        (mpi-cancel (req sc))
        (let ([rc (mpi-wait (req sc) (status sc))])
          (unless (and (eqv? rc 0) (mpi-status-cancelled? (status sc)))
            (keep-early! comm tag buf start (direct-result rc (status sc) buf start n) (status sc))))))
    (when (posted-locked? p) (unlock! buf)))

  ;; Under engine-lock: probes once for the bytes of large message seq
  ;; from src (after its header) and receives them into buf: a result, or
  ;; #f if they have not come, or may not be taken yet (an earlier
  ;; message's of the same tag are still in MPI).  Bytes larger than buf
  ;; go to scratch memory and are dropped.
  (define (probe-data! sc comm src tag seq buf start n)
    (foreign-set! 'int (flag sc) 0 0)
    (let ([rc (if (may-take? comm src tag seq)
                  (mpi-improbe src (data-tag tag seq) (rmpi-comm-handle comm) (flag sc) (msg sc) (status sc))
                  0)])
      (cond
        [(not (eqv? rc 0)) (cons 'mpi rc)]
        [(eqv? 0 (foreign-ref 'int (flag sc) 0)) #f]
        [else
         (taken! comm src tag seq)
         (let ([m (mpi-status-bytes (status sc))])
           (if (fx> m n)
               (let* ([tmp (malloc (fxmax m 1))] [rc (mpi-mrecv tmp m (mpi-byte) (msg sc) (status sc))])
                 (free tmp)
                 (if (eqv? rc 0) (cons* 'too-small m n) (cons 'mpi rc)))
               (let ([rc (if (fx> m large-buffer)
                             ;; the transfer may be long: __collect_safe, buf locked
                             (begin
                               (lock! buf)
                               (let ([rc (mpi-mrecv (buffer-address buf start) m (mpi-byte) (msg sc) (status sc))])
                                 (unlock! buf)
                                 rc))
                             (mpi-mrecv-small (buffer-address buf start) m (mpi-byte) (msg sc) (status sc)))])
                 (if (eqv? rc 0) m (cons 'mpi rc)))))])))

  ;; ------------------------------------------------------------ taken bytes
  ;; The data tag of message seq is shared with seq - 65536, seq - 2 *
  ;; 65536, ...: MPI's probe matches the oldest of them still there.  So
  ;; the bytes of seq are probed only once those of seq - 65536 (and so,
  ;; by induction, every earlier one of the tag) have been taken, which
  ;; makes the probe exact under any interleaving: a receive that holds an
  ;; old header for long (its thread suspended, say) holds back only the
  ;; receive of the message 65536 later.  (The sender sends a stream's
  ;; bytes in seq order, under engine-lock.)  Per stream (comm, source,
  ;; tag), under engine-lock: low, every seq below it taken; above, the
  ;; seqs taken at or above low, each dropped once the one 65536 later is
  ;; taken (the only one that asks for it).
  (define-record-type stream (fields (mutable low) above) (sealed #t))
  (define streams (make-weak-eq-hashtable))   ; comm -> eqv hashtable: source * 32768 + tag -> stream

  (define last-stream (vector #f #f #f))   ; comm, key, stream: the last looked up
  (define (stream-of comm src tag)
    (let ([k (fx+ (fx* src 32768) tag)] [c last-stream])
      (if (and (eq? comm (vector-ref c 0)) (eqv? k (vector-ref c 1)))
          (vector-ref c 2)
          (let ([st (stream-lookup comm k)])
            (set! last-stream (vector comm k st))
            st))))
  (define (stream-lookup comm k)
    (let ([t (or (hashtable-ref streams comm #f)
                 (let ([t (make-eqv-hashtable)]) (hashtable-set! streams comm t) t))])
      (or (hashtable-ref t k #f)
          (let ([st (make-stream 0 (make-eqv-hashtable))]) (hashtable-set! t k st) st))))

  (define (may-take? comm src tag seq)
    (or (fx<= seq seq-mask)
        (let ([st (stream-of comm src tag)] [prev (fx- seq (fx+ seq-mask 1))])
          (or (fx< prev (stream-low st)) (hashtable-contains? (stream-above st) prev)))))

  (define (taken! comm src tag seq)
    (let ([st (stream-of comm src tag)])
      (let ([above (stream-above st)])
        (unless (fx= 0 (hashtable-size above)) (hashtable-delete! above (fx- seq (fx+ seq-mask 1))))
        (if (fx= seq (stream-low st))
            (let absorb ([low (fx+ seq 1)])
              (if (and (not (fx= 0 (hashtable-size above))) (hashtable-contains? above low))
                  (begin (hashtable-delete! above low) (absorb (fx+ low 1)))
                  (stream-low-set! st low)))
            (hashtable-set! above seq #t)))))

  ;; ------------------------------------------------------------ the receive evts
  ;; What a blocking receive holds: a header whose bytes it has not taken,
  ;; or #f.  Set under the lock or with-mpi-call section that takes the
  ;; header (or commits it to the receive's sync), cleared in the one that
  ;; takes its bytes: so a break or kill, which comes only with interrupts
  ;; enabled, finds in it exactly the header to give back (owe!).
  ;; (evt: its receive evt once it posted a receive; thread: its thread.)
  (define-record-type hold (fields (mutable header) evt thread) (sealed #t))

  ;; recv-evt: a receive on direct-tag.  adopted: a receive the blocking
  ;; receive posted and hands over, or #f; hold: the blocking receive's
  ;; hold (set once made), or #f (rmpi-recv-bytes!-evt).  The token of a
  ;; registration is its pending request.
  (define-record-type recv-evt
    (parent prim-evt)
    (fields comm src tag buf start n (mutable adopted) (mutable hold))
    (protocol (lambda (new) (lambda (c s t b st n a h) ((new recv-attempt recv-cancel) c s t b st n a h))))
    (sealed #t))
  ;; data-evt: the bytes of large message seq from src, for the blocking
  ;; receive of hold h (or #f).  The token of a registration is its prober
  ;; (the engine).
  (define-record-type data-evt
    (parent prim-evt)
    (fields comm src tag seq buf start n hold)
    (protocol (lambda (new) (lambda (c s t q b st n h) ((new data-attempt data-cancel) c s t q b st n h))))
    (sealed #t))

  ;; Under engine-lock, or with interrupts disabled for a hold only this
  ;; OS thread's green thread uses: r, given to the receive of hold h.
  (define (held! h r)
    (when (and h (header? r)) (hold-header-set! h r))
    r)
  (define evts-registered
    (begin
      (record-prints-as! (record-type-descriptor recv-evt) "rmpi-recv-bytes!-evt")
      (evt-trace-reason! (record-type-descriptor recv-evt) 'io
        (lambda (e) (list 'rmpi-recv-bytes! (or (recv-evt-src e) 'any) (recv-evt-tag e))))
      (record-prints-as! (record-type-descriptor data-evt) "rmpi-recv-bytes!-evt")
      (evt-trace-reason! (record-type-descriptor data-evt) 'io
        (lambda (e) (list 'rmpi-recv-bytes! (data-evt-src e) (data-evt-tag e))))))

  (define (recv-attempt e s branch register?)
    (assert-atomic 'recv-attempt)
    (let ([comm (recv-evt-comm e)] [src (recv-evt-src e)] [tag (recv-evt-tag e)]
          [buf (recv-evt-buf e)] [start (recv-evt-start e)] [n (recv-evt-n e)])
      ;; commits r; a message lost to a partner's commit stays early
      (define (commit! r st)
        (or (and (commit-one! s branch (list r)) (begin (held! (recv-evt-hold e) r) #t))
            (begin (when st (keep-early! comm tag buf start r st)) #f)))
      ;; posted receive p, registered for the progress thread
      (define (register! p)
        (let ([pp (handle->pending (posted-h p) (if (posted-locked? p) (list buf) '())
                    (lambda (rc st)
                      (let ([r (direct-result rc st buf start n)])
                        (if (commit-partner! s branch (list r))
                            (held! (recv-evt-hold e) r)
                            (keep-early! comm tag buf start r st)))))])
          (add-request! pp #t)
          pp))
      (with-os-mutex engine-lock
        (let ([sc (locked-scratch)])
          (cond
            [(world-finalized?) (commit! '(finalized) #f)]
            [(recv-evt-adopted e)
             => (lambda (p)
                  (let ([t (test-handle sc (posted-h p) n)])
                    (cond
                      [t (recv-evt-adopted-set! e #f) (commit! (posted-result p t sc buf start n) (status sc))]
                      [register? (recv-evt-adopted-set! e #f) (register! p)]
                      [else #f])))]
            [(and (pair? early) (take-early! comm src tag buf start n)) => (lambda (r) (commit! r #f))]
            [register?
             ;; first-looks tests before it registers (its sync would
             ;; park): an answer that comes within ~2 us needs no wake-up
             (let ([r (post-recv! sc comm src tag buf start n first-looks)])
               (cond
                 [(posted? r) (register! r)]
                 [(and (pair? r) (eq? (car r) 'mpi)) (commit! r #f)]
                 [else (commit! r (status sc))]))]
            [else
             ;; a poll: a matched probe, so that nothing is left posted
             (foreign-set! 'int (flag sc) 0 0)
             (let ([rc (mpi-improbe (or src mpi-any-source) (direct-tag tag) (rmpi-comm-handle comm) (flag sc) (msg sc) (status sc))])
               (cond
                 [(not (eqv? rc 0)) (commit! (cons 'mpi rc) #f)]
                 [(eqv? 0 (foreign-ref 'int (flag sc) 0)) #f]
                 [else
                  (commit! (direct-result (mpi-mrecv-small (buffer-address buf start) n (mpi-byte) (msg sc) (status sc)) (status sc) buf start n)
                           (status sc))]))])))))

  (define (recv-cancel e p)
    (assert-atomic 'recv-cancel)
    (with-os-mutex engine-lock
      (when (remove-request! p) (cancel-pending! p))))

  (define (data-attempt e s branch register?)
    (assert-atomic 'data-attempt)
    (let ([comm (data-evt-comm e)] [src (data-evt-src e)] [tag (data-evt-tag e)] [seq (data-evt-seq e)]
          [buf (data-evt-buf e)] [start (data-evt-start e)] [n (data-evt-n e)])
      ;; #t once committed: the bytes (the receive's: its hold is cleared),
      ;; or an older header given back, which its hold now holds
      ;; (older-owed!); 'lost if a partner committed s first (bytes are then
      ;; kept early; the hold's header is given back by its thread); #f if
      ;; neither has come
      (define (look! commit)
        (let* ([sc (locked-scratch)] [h (data-evt-hold e)]
               [r (or (probe-data! sc comm src tag seq buf start n) (older-owed! comm tag h))])
          (cond
            [(not r) #f]
            [(header? r) (or (commit s branch (list r)) 'lost)]
            [(commit s branch (list r)) (hold-header-set! h #f) #t]
            [else
             ;; kept under the data's key, for the header given back
             (when (fixnum? r) (keep-early! comm (data-key tag seq) buf start r (status sc)))
             'lost])))
      (with-os-mutex engine-lock
        (cond
          [(world-finalized?) (commit-one! s branch (list '(finalized)))]
          [(look! commit-one!) => (lambda (x) (eq? x #t))]
          [register?
           (let ([p (lambda () (and (look! commit-partner!) #t))])
             (add-prober! p)
             p)]
          [else #f]))))

  (define (data-cancel e p)
    (assert-atomic 'data-cancel)
    (with-os-mutex engine-lock (remove-prober! p)))

  ;; ------------------------------------------------------------ receiving
  ;; (rmpi-recv-bytes! comm src buf [tag [start [end]]]) -> byte count
  (define-with-range (rmpi-recv-bytes! comm src buf)
    (lambda (comm src buf tag start end)
      (check-peer 'rmpi-recv-bytes! comm src tag)
      (let-byte-range 'rmpi-recv-bytes! buf start end (start n)
        (check-result 'rmpi-recv-bytes!
          (if (fx< n min-range)
              (let ([b (make-bytevector min-range)])
                (bounced (recv! comm src tag b 0 min-range) b buf start n))
              (recv! comm src tag buf start n))))))

  ;; r bytes of `from` into bytevector buf from start.  No copy of 0 bytes:
  ;; an empty bytevector (make-bytevector 0 gives one) is Chez's one
  ;; immutable #vu8(), which bytevector-copy! refuses at optimize-level 2.
  (define (copy-bytes! from buf start r)
    (unless (fx= r 0) (bytevector-copy! from 0 buf start r)))

  ;; Result r of a receive into bounce buffer b, for buf's range of n
  ;; bytes from start (n < min-range): the bytes copied there.
  (define (bounced r b buf start n)
    (cond
      [(fixnum? r)
       (cond
         [(fx> r n) (cons* 'too-small r n)]
         [(bytevector? buf) (copy-bytes! b buf start r) r]
         [else (bytevector->foreign! b 0 (+ (shared-vector-address buf) start) r) r])]
      [(eq? (car r) 'too-small) (cons* 'too-small (cadr r) n)]
      [else r]))

  ;; The blocking receive: takes an early message, or posts the receive;
  ;; if that does not complete at once, tests it itself (spin-recv!), then
  ;; hands it to a receive evt and syncs; after a header, takes its bytes
  ;; (recv-data!).  The common message, a small one that completes at
  ;; once, returns here with nothing outstanding: no hold, no dynamic-wind.
  ;; Interrupts stay disabled from the first look until recv-held! has
  ;; installed its cleanup, so no break comes between.
  (define (recv! comm src tag buf start n)
    (disable-interrupts)
    (let ([r (or (and (pair? early) (with-engine-lock (take-early! comm src tag buf start n)))
                 (counted-mpi-call '(finalized)
                   (post-recv! (thread-scratch) comm src tag buf start n first-looks)))])
      (if (or (posted? r) (header? r))
          (recv-held! comm src tag buf start n r)
          (begin (enable-interrupts) r))))

  ;; Called with interrupts disabled (recv!), r a posted receive or a
  ;; header: a break or kill from here on cancels the receive still posted
  ;; (abandon!) and gives back the header whose bytes it has not taken
  ;; (owe!).
  (define (recv-held! comm src tag buf start n r)
    (let ([h (make-hold #f (and (posted? r) (make-recv-evt comm src tag buf start n r #f)) (current-gthread))])
      (when (hold-evt h) (recv-evt-hold-set! (hold-evt h) h))
      (gthread-cleanup-set! (hold-thread h) (lambda () (cleanup! comm tag h)))
      (held! h r)
      (dynamic-wind
        void
        (lambda ()
          (enable-interrupts)
          (let ([r (if (posted? r) (spin-recv! (hold-evt h) h buf start n) r)])
            (if (header? r) (recv-data! comm tag r h buf start n) r)))
        (lambda () (gthread-cleanup-set! (hold-thread h) #f) (cleanup! comm tag h)))))

  ;; A break or kill of the blocking receive of hold h.
  (define (cleanup! comm tag h)
    (let ([e (hold-evt h)])
      ;; (adopted is only cleared by this thread: read unlocked)
      (when (and e (recv-evt-adopted e)) (abandon! e)))
    (when (hold-header h) (owe! comm tag h)))

  ;; Tests the receive e adopted (for hold h) itself (no lock:
  ;; with-mpi-call), yielding every 8 tests, for spin-us; then syncs on e.
  (define (spin-recv! e h buf start n)
    (let loop ([k 1] [end #f])
      (when (fx= 0 (fxand k 7)) (yield!))
      (or (with-mpi-call '(finalized)
            (let* ([sc (thread-scratch)] [p (recv-evt-adopted e)] [t (test-handle sc (posted-h p) n)])
              (and t (begin (recv-evt-adopted-set! e #f) (held! h (posted-result p t sc buf start n))))))
          (cond
            [(not (fx= 0 (fxand k 15))) (loop (fx+ k 1) end)]
            [(not end) (loop (fx+ k 1) (spin-end 0))]
            [(< (current-inexact-monotonic-milliseconds) end) (loop (fx+ k 1) end)]
            [else (sync e)]))))

  ;; Cancels the receive the blocking receive still owns (a break or kill
  ;; during its spin); nothing once the evt's registration took it.
  (define (abandon! e)
    (with-atomic
      (with-os-mutex engine-lock
        (let ([p (recv-evt-adopted e)])
          (when p
            (recv-evt-adopted-set! e #f)
            (cancel-posted! (recv-evt-comm e) (recv-evt-tag e) (recv-evt-buf e) (recv-evt-start e) (recv-evt-n e) p))))))

  ;; Gives back the header that hold h holds: early, the next receive's.
  (define (owe! comm tag h)
    (with-atomic
      (with-os-mutex engine-lock
        (let ([r (hold-header h)])
          (when r
            (hold-header-set! h #f)
            (set! early (cons (vector comm (cadr r) tag r) early)))))))

  ;; The bytes of large message r (a header, held in h): the exact probe
  ;; of their tag (data-tag tag seq) from the header's source.  They
  ;; follow the header at once, so this probes until they come, then
  ;; parks.  Taking them clears h in the same section.  An older header
  ;; of the stream given back meanwhile (owe!) is taken instead (so its
  ;; bytes, which may hold back these, are taken), this one given back.
  (define (recv-data! comm tag r h buf start n)
    (let ([end (spin-end n)])
      (define (got! x) (when x (hold-header-set! h #f)) x)
      (let loop ([k 1] [r r])
        (when (fx= 0 (fxand k 7)) (yield!))
        (let* ([src (cadr r)] [seq (cddr r)]
               [x (or (and (pair? early) (with-engine-lock (got! (take-early! comm src (data-key tag seq) buf start n))))
                      (with-engine-lock
                        (cond
                          [(world-finalized?) '(finalized)]
                          [(probe-data! (locked-scratch) comm src tag seq buf start n) => got!]
                          [else (older-owed! comm tag h)]))
                      (and (fx= 0 (fxand k 15)) (>= (current-inexact-monotonic-milliseconds) end)
                           (sync (make-data-evt comm src tag seq buf start n h))))])
          (cond
            [(header? x) (loop (fx+ k 1) x)]
            [x x]
            [else (loop (fx+ k 1) r)])))))

  ;; Under engine-lock: if `early` holds a header of the stream of the one
  ;; hold h holds, older than it, h takes the oldest such (returned) and
  ;; gives its own back in its place; else #f.
  (define (older-owed! comm tag h)
    (and (pair? early)
         (let* ([r (hold-header h)] [src (cadr r)])
           (let loop ([l early] [best #f])
             (if (pair? l)
                 (let ([m (car l)])
                   (loop (cdr l)
                         (if (and (eq? comm (vector-ref m 0)) (eqv? src (vector-ref m 1)) (eqv? tag (vector-ref m 2))
                                  (header? (vector-ref m 3)) (fx< (cddr (vector-ref m 3)) (cddr (or (and best (vector-ref best 3)) r))))
                             m
                             best)))
                 (and best
                      (let ([older (vector-ref best 3)])
                        (vector-set! best 3 r)
                        (hold-header-set! h older)
                        older)))))))

  (define-with-range (rmpi-recv-bytes!-evt comm src buf)
    (lambda (comm src buf tag start end)
      (check-peer 'rmpi-recv-bytes!-evt comm src tag)
      (let-byte-range 'rmpi-recv-bytes!-evt buf start end (start n)
        (if (fx< n min-range)
            (let ([b (make-bytevector min-range)])
              (wrap-evt (make-recv-evt comm src tag b 0 min-range #f #f)
                        (lambda (r) (check-result 'rmpi-recv-bytes! (bounced (evt-finish comm tag r b 0 min-range) b buf start n)))))
            (wrap-evt (make-recv-evt comm src tag buf start n #f #f)
                      (lambda (r) (check-result 'rmpi-recv-bytes! (evt-finish comm tag r buf start n))))))))

  ;; After a sync on rmpi-recv-bytes!-evt: a header's bytes, given back
  ;; if the thread is broken or killed first.
  (define (evt-finish comm tag r buf start n)
    (if (header? r)
        (let* ([t (current-gthread)] [h (make-hold r #f t)])
          (dynamic-wind
            (lambda () (gthread-cleanup-set! t (lambda () (owe! comm tag h))))
            (lambda () (recv-data! comm tag r h buf start n))
            (lambda () (gthread-cleanup-set! t #f) (when (hold-header h) (owe! comm tag h)))))
        r))

  ;; When a thread that has tested its request since now stops and parks.
  (define (spin-end n) (+ (current-inexact-monotonic-milliseconds) (/ (+ spin-us (/ n 1000.)) 1000.)))

;; ------------------------------------------------------------ sending
  ;; (rmpi-send-bytes comm dest buf [tag [start [end]]]): returns once MPI
  ;; is done with the message.  The bytes are copied first, into memory
  ;; the send owns: Open MPI cannot cancel a send, so a send whose thread
  ;; leaves before MPI is done (a deadline, a break, a kill) leaves the
  ;; request to the progress thread, and the caller may change buf at once.
  ;; A small message goes from its OS thread's scratch memory (send-area),
  ;; which a send MPI does not complete at once takes with it, the thread
  ;; getting new scratch; a large one from a buffer of the pool.
  (define-with-range (rmpi-send-bytes comm dest buf)
    (lambda (comm dest buf tag start end)
     (let ([who 'rmpi-send-bytes])
      (check-peer who comm dest tag)
      (let-byte-range who buf start end (start n)
        (let* ([copy (and (fx>= n header-size)
                          (let ([p (buffer-alloc n)]) (with-interrupts-off (copy-range! p buf start n)) p))]
               [r (with-interrupts-off
                    (let ([r (if copy
                                 ;; under the lock: the stream's sequence numbers
                                 (with-engine-lock
                                   (if (world-finalized?)
                                       'finalized
                                       (let* ([sc (locked-scratch)] [seq (next-seq! comm dest tag)]
                                              [rc (send-header! sc comm dest tag seq n)])
                                         (if (eqv? rc 0)
                                             (let ([r (post-send! sc copy n comm dest (data-tag tag seq))])
                                               (if (fx< r 0) (cons (fx- 0 r) (cons copy n)) r))
                                             rc))))
                                 (counted-mpi-call 'finalized
                                   (let ([sc (thread-scratch)])
                                     (copy-range! (send-area sc) buf start n)
                                     (let ([r (post-send! sc (send-area sc) n comm dest (direct-tag tag))])
                                       (if (fx< r 0) (begin (new-thread-scratch!) (cons (fx- 0 r) sc)) r)))))])
                      (if (pair? r)
                          ;; the progress machinery owns the request and
                          ;; its memory; the progress thread is woken only
                          ;; if this thread stops testing it itself
                          (with-engine-lock
                            (let* ([result (box 0)] [latch (make-latch (lambda (l) (void)))]
                                   [p (handle->pending (car r) (list (cdr r))
                                        (lambda (rc st) (set-box! result rc) (latch-fire! latch)))])
                              (add-request! p #f)
                              (vector p latch result)))
                          r)))])
          (when (and copy (not (vector? r))) (buffer-free copy n))
          (cond
            [(eq? r 'finalized) (error who "MPI has been finalised")]
            [(fixnum? r) (check-rc who r)]
            [else (await-send (vector-ref r 0) (vector-ref r 1) n) (check-rc who (unbox (vector-ref r 2)))]))))))

  ;; n bytes of buf from start into foreign memory at `to`; interrupts
  ;; disabled (buffer-address).
  (define (copy-range! to buf start n)
    (memmove! to (buffer-address buf start) n))

  ;; MPI_Isend of the n bytes at addr (foreign memory the send owns),
  ;; tested once: 0 when sent, MPI's error code, or the request handle
  ;; negated (handles are addresses, never 0) when MPI has not completed it.
  (define (post-send! sc addr n comm dest mtag)
    (let ([rc (mpi-isend addr n (mpi-byte) dest mtag (rmpi-comm-handle comm) (req sc))])
      (if (not (eqv? rc 0))
          rc
          (let* ([h (foreign-ref 'uptr (req sc) 0)] [t (test-handle sc h n)])
            (cond
              [t (if (eq? t #t) 0 t)]
              [else (fx- 0 h)])))))

  ;; Under engine-lock: the sequence number of the next large message to
  ;; dest with tag on comm (a stream's count of them, from 0).
  (define seqs (make-weak-eq-hashtable))   ; comm -> eqv hashtable: dest * 32768 + tag -> count
  (define (next-seq! comm dest tag)
    (let ([t (or (hashtable-ref seqs comm #f)
                 (let ([t (make-eqv-hashtable)]) (hashtable-set! seqs comm t) t))]
          [k (fx+ (fx* dest 32768) tag)])
      (let ([b (or (hashtable-ref t k #f) (let ([b (box 0)]) (hashtable-set! t k b) b))])
        (let ([q (unbox b)]) (set-box! b (fx+ q 1)) q))))

  ;; Large message seq's header (header-size bytes: seq, then the length
  ;; n), from scratch memory sc: MPI_Send semantics through MPI_Isend and
  ;; tests (it is eager, so MPI copies it at once; waiting is a fallback,
  ;; with interrupts disabled, for MPI only).
  (define (send-header! sc comm dest tag seq n)
    (foreign-set! 'integer-64 (header sc) 0 seq)
    (foreign-set! 'integer-64 (header sc) 8 n)
    (let ([rc (mpi-isend (header sc) header-size (mpi-byte) dest (direct-tag tag) (rmpi-comm-handle comm) (req sc))])
      (if (not (eqv? rc 0))
          rc
          (let ([h (foreign-ref 'uptr (req sc) 0)])
            (let wait ()
              (let ([t (test-handle sc h 0)])
                (cond [(eq? t #t) 0] [t t] [else (wait)])))))))

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
