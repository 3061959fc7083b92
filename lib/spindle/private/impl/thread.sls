#!chezscheme
;;; Over 450 lines: threads, pools, mailboxes, kill, break, suspend and the dump's view all share the thread-life record.
;;; Threads: coroutine threads (main pool) and parallel threads (parallel
;;; thread pools), with mailboxes, kill, break and suspend.
(library (spindle private impl thread)
  (export thread thread? current-thread current-thread-pool
          make-parallel-thread-pool parallel-thread-pool? parallel-thread-pool-close
          thread-wait kill-thread break-thread thread-suspend thread-resume
          thread-running? thread-dead? sleep yield
          thread-dead-evt thread-suspend-evt thread-resume-evt
          thread-send thread-receive thread-try-receive thread-receive-evt
          thread-rewind-receive
          processor-count memory-order-acquire memory-order-release
          &break break-condition? &break-hang-up break-hang-up-condition?
          &break-terminate break-terminate-condition?
          break-enabled parameterize-break srfi-18-thread-pool
          box-cas! vector-cas!
          dump-threads thread-state thread-waits
          ;; for spindle's own libraries ((spindle thread) leaves them out)
          register-dump-kind! thread-procedure
          make-thread* start-thread! thread-name thread-outcome thread-results
          thread-data-specific thread-data-specific-set! thread-add-exit-hook!)
  (import (except (chezscheme) sleep thread?) (only (spindle private core atomic) with-os-mutex)
          (spindle private host memory-order)
          (only (spindle private host dynamic-state) make-exception-state)
          (spindle private core queue) (spindle private core scheduler) (spindle private core thread-requests)
          (spindle private core clock) (spindle private core processors)
          (spindle private core evt-core) (spindle private core sync)
          (spindle private core keywords) (spindle private impl async-channel)
          (only (spindle private core owner-lock) set-owner-death-evt!)
          (only (spindle private impl parameter) snapshot-parameterization empty-parameterization)
          (only (spindle private impl custodian) current-custodian custodian-register! custodian-try-register! make-custodian-kind
                all-managed-objects all-managed-owners)
          (only (spindle private os signals) sigquit)
          (only (spindle private diagnostics thread-dump) dump-text)
          (only (spindle private core wait-targets) thread-wait-list)
          (only (spindle private core sim-hooks) sim-here? sim-next-name!)
          (only (spindle private core gthread) gthread-kill-requested?-set!)
          (only (spindle private impl deadlock) set-deadlock-dumper!)
          (only (spindle private impl synchronized-port) with-port-lock)
          ;; invoked with this library (see console-installed below)
          (only (spindle private impl console) stdout-port))

  ;; Chez invokes an imported library only if a variable of it is
  ;; referenced: this reference makes every program that uses threads
  ;; install spindle's parking console ports.
  (define console-installed (lambda () (stdout-port)))

  ;; The thread layer's per-thread record (gthread-data): a thread's life as
  ;; this layer sees it: outcome, results, death, mailbox, suspension, hooks.
  (define-record-type thread-life
    (fields (mutable outcome)        ; running, ok, failed or killed
            (mutable results)        ; list of values, or the raised object
            keep? quiet?             ; keep results; print nothing on failure
            death                    ; box: #f, then the death latch or 'dead (see dead-latch)
            (mutable thread)
            ;; until it starts: the thunk, or (starter . thunk) (see
            ;; make-thread*); its escape while it runs; then #f
            (mutable body)
            ;; made on first use, under data-lock: most threads never need them
            (mutable mailbox) (mutable suspend-latch) (mutable resume-latch)
            (mutable specific)       ; SRFI-18 thread-specific
            (mutable exit-hooks))    ; thunks run as the thread ends (mutex abandonment)
    (nongenerative spindle-thread-life-v1) (sealed #t))

  (define (latch-itself l) l)

  (define (new-thread-life keep? quiet? t thunk)
    (make-thread-life 'running '() keep? quiet? (box #f) t thunk #f #f #f #f '()))

  ;; The death latch is made only when someone waits (a million parked
  ;; threads nobody waits for keep no latch).  death moves by CAS from #f to
  ;; a latch (a waiter came first: the thread's end fires it) or to 'dead
  ;; (the thread ended first: a waiter then makes a fired latch).  CAS on
  ;; both sides: neither can miss the other.
  (define (dead-latch d)
    (let ([b (thread-life-death d)])
      (let loop ()
        (let ([v (unbox b)])
          (cond
            [(latch? v) v]
            [else
             (let ([l (make-owned-latch latch-itself (thread-life-thread d))])
               (when (eq? v 'dead) (latch-fire! l))
               (if (box-cas! b v l) l (loop)))])))))

  (define (fire-death! d)
    (let ([b (thread-life-death d)])
      (let loop ()
        (let ([v (unbox b)])
          (cond
            [(latch? v) (latch-fire! v)]
            [(not (box-cas! b v 'dead)) (loop)])))))

  ;; Guards the lazily made parts of every thread-life and their suspend state
  ;; (held as every Chez mutex in spindle is: see with-os-mutex).
  (define data-lock (make-mutex))
  (define-syntax with-data-lock
    (syntax-rules ()
      [(_ body1 body ...) (with-os-mutex data-lock body1 body ...)]))

  (define (thread-life-mailbox* d)
    (or (thread-life-mailbox d)
        (with-data-lock
          (or (thread-life-mailbox d)
              (let ([mb (make-buffer-channel)]) (thread-life-mailbox-set! d mb) mb)))))

  ;; A suspend evt is ready while the thread is suspended, a resume evt while
  ;; it runs; each is replaced by a fresh one when the state changes.
  (define (state-latch d get set ready?)
    (with-data-lock
      (or (get d)
          (let ([l (let ([t (thread-life-thread d)]) (make-latch (lambda (l) t)))])
            (when (ready? (thread-life-thread d)) (latch-fire! l))
            (set d l)
            l))))

  ;; Threads spindle did not create (the program's main thread, adopted OS
  ;; threads) get their record on first use.
  (define (thread-life-of t)
    (or (gthread-data t)
        (with-data-lock
          (or (gthread-data t)
              (let ([d (new-thread-life #f #f t #f)])
                (gthread-finisher-set! t
                  (if (eq? (gthread-name t) 'main)
                      (lambda (outcome) (exit 0))
                      ;; an adopted OS thread cannot be reused: it stays parked
                      (lambda (outcome)
                        (finish-data! t d outcome '())
                        (disable-interrupts)
                        (let forever () (park!) (forever)))))
                (gthread-data-set! t d)
                d)))))

  (define (thread? v) (gthread? v))
  (define (current-thread) (let ([t (current-gthread)]) (thread-life-of t) t))

  (define (check-thread who v)
    (unless (gthread? v) (assertion-violation who "expected a thread" v)))

  ;; ---------------------------------------------------------------- pools
  (define make-parallel-thread-pool
    (case-lambda
      [() (make-parallel-thread-pool (processor-count))]
      [(n)
       (unless (and (integer? n) (exact? n) (> n 0))
         (assertion-violation 'make-parallel-thread-pool "expected an exact positive integer" n))
       (make-pool n #f)]))

  (define (parallel-thread-pool? v) (and (pool? v) (not (eq? v main-pool))))

  ;; The pool the current thread runs on: #f for the main (coroutine) pool,
  ;; so that (thread thunk #:pool (current-thread-pool)) starts a sibling.
  ;; A thread made with #:pool 'own gets its own pool, open until its last
  ;; thread ends: siblings started on it share its one OS thread.
  (define (current-thread-pool)
    (let ([p (gthread-pool (current-gthread))])
      (if (eq? p main-pool) #f p)))

  (define (parallel-thread-pool-close p)
    (unless (parallel-thread-pool? p)
      (assertion-violation 'parallel-thread-pool-close "expected a parallel thread pool" p))
    (pool-close! p))

  ;; ---------------------------------------------------------------- creation
  ;; One report is one contiguous block on the (synchronized) error port,
  ;; formatted before it is written: a condition whose display raises
  ;; cannot leave half a report.
  (define (report-failure t c)
    (let ([p (current-error-port)]
          [text (call-with-string-output-port
                  (lambda (s)
                    (fprintf s "thread ~a: " (gthread-name t))
                    (guard (e [#t (fprintf s "a condition that could not be displayed (~a)"
                                           (if (condition? e) (condition-message-text e) e))])
                      (if (condition? c) (display-condition c s) (fprintf s "non-condition object raised: ~s" c)))
                    (newline s)))])
      (guard (e [#t (void)])
        (with-port-lock p
          (put-string p text)
          (flush-output-port p)))))

  (define (condition-message-text e)
    (if (message-condition? e) (condition-message e) "?"))

  (define (finish-data! t d outcome results)
    (thread-life-results-set! d results)
    (thread-life-outcome-set! d outcome)
    (for-each (lambda (h) (guard (e [#t (void)]) (h))) (thread-life-exit-hooks d))
    ;; dead before the latch fires: a waiter that wakes must see it dead
    (gthread-dead?-set! t #t)
    (fire-death! d))

  ;; Ends the current thread t; never returns.
  (define (finish-thread! t d outcome results)
    ;; a kill, a break or a cancellation that comes while t ends (at a
    ;; preemption in an exit hook) must not end it again: the hooks would
    ;; run twice, or stop half done (a task scope's child would not be
    ;; counted ended)
    (gthread-finisher-set! t finishing)
    (gthread-break-enabled?-set! t #f)
    (when (eq? outcome 'killed)
      (let ([c (gthread-cleanup t)]) (when c (gthread-cleanup-set! t #f) (c))))
    (finish-data! t d outcome results)
    (exit-current-thread!))

  ;; The finisher of a thread that is ending: a kill request is dropped.
  (define (finishing outcome) (gthread-kill-requested?-set! (current-gthread) #f))

  ;; The finisher of every thread made here (one shared procedure, not a
  ;; closure per thread); finishers run in the ending thread.
  (define (finish-current-thread! outcome)
    (let ([t (current-gthread)]) (finish-thread! t (gthread-data t) outcome '())))

  ;; Every thread made here starts with this procedure and shares the
  ;; handler of thread-exception-state: a parked thread keeps few objects (a
  ;; million of them are copied by each collection that moves them).
  (define (run-thread-body t)
    (let ([d (gthread-data t)])
      ;; The thunk runs in tail position inside call/cc, and its values come
      ;; back to the receiver below: one frame fewer in every parked thread.
      ;; A failure escapes with failed-tag and the condition.
      (call-with-values
        (lambda ()
          (call/cc
            (lambda (k)
              (let ([body (thread-life-body d)])
                (thread-life-body-set! d k)
                ;; the handler is in place before interrupts are enabled:
                ;; a break that came before the start (or a preemption
                ;; that delivers one) must end this thread, not reach the
                ;; OS thread's base handler; a starter's handler is in
                ;; place too
                (current-exception-state thread-exception-state)
                (if (pair? body)
                    ((car body) (lambda () (enable-interrupts) (check-requests!) ((cdr body))))
                    (begin (enable-interrupts) (check-requests!) (body)))))))
        (lambda vals
          (thread-life-body-set! d #f)
          (if (and (pair? vals) (eq? (car vals) failed-tag))
              (finish-thread! t d 'failed (cadr vals))
              (finish-thread! t d 'ok (if (thread-life-keep? d) vals (list (void)))))))))

  ;; Only the escape of a failing thread returns it (never user code).
  (define failed-tag (list 'failed))

  ;; A raise that no handler of the thread's takes ends the thread (through
  ;; its escape, so that dynamic-wind exits run).  Shared by every thread.
  (define thread-exception-state
    (make-exception-state
      (lambda (c)
        (let* ([t (current-gthread)] [d (gthread-data t)] [k (thread-life-body d)])
          (unless (thread-life-quiet? d) (report-failure t c))
          (if (procedure? k)
              (k failed-tag c)
              (finish-thread! t d 'failed c))))))   ; raised while ending

  (define name-counter (box 0))
  (define (next-name)
    (if (sim-here?) (sim-next-name!) (next-process-name)))
  (define (next-process-name)
    (let loop ()
      (let ([n (unbox name-counter)])
        (if (box-cas! name-counter n (+ n 1)) (+ n 1) (loop)))))

  ;; Makes a thread on pool (#f = main pool, 'own, or a pool).  Not started
  ;; unless start?.  starter: #f, or (lambda (start) ...) called with
  ;; interrupts disabled as the thread starts; it must call start, which
  ;; enables interrupts, acts on requests that came before the start (a
  ;; cancellation, a break) and runs thunk: what these raise reaches the
  ;; starter's handlers (a task scope's, for its children).
  (define (make-thread* who thunk pool keep? quiet? name start? starter)
    (unless (and (procedure? thunk) (logbit? 0 (procedure-arity-mask thunk)))
      (assertion-violation who "expected a procedure of no arguments" thunk))
    (let* ([p (cond
                [(not pool) main-pool]
                [(eq? pool 'own) (make-own-pool)]
                [(parallel-thread-pool? pool) pool]
                [else (assertion-violation who "expected #f, 'own or a parallel thread pool" pool)])]
           [d (new-thread-life keep? quiet? #f (if starter (cons starter thunk) thunk))]
           [creator (current-gthread)]
           [t (spawn! p (or name (next-name))
                      (snapshot-parameterization
                        (or (gthread-params creator) empty-parameterization))
                      run-thread-body #f)])
      (thread-life-thread-set! d t)
      (gthread-data-set! t d)
      (gthread-finisher-set! t finish-current-thread!)
      ;; the thread belongs to the creator's current custodian; a shut-down
      ;; one refuses it, and the thread, never run, ends at once
      (unless (custodian-try-register! t thread-kind)
        (request-kill! t)
        (start-gthread! t)
        (custodian-register! t thread-kind who))   ; raises: shut down
      (when start? (start-gthread! t))
      t))

  (define (start-thread! t) (start-gthread! t))

  ;; How a custodian shuts a thread down: every thread's kill is requested
  ;; before anything of the custodian is closed, then each is waited for.
  (define thread-kind
    (make-custodian-kind (lambda (t) (kill-thread t)) gthread-dead?
                         (lambda (t) (unless (gthread-dead? t) (request-kill! t)))))

  (define thread-procedure
    (case-lambda
      [(thunk) (thread-procedure thunk #f #f)]
      [(thunk pool) (thread-procedure thunk pool #f)]
      [(thunk pool keep)
       (unless (memq keep '(#f results))
         (assertion-violation 'thread
           (if (eq? keep 'result)
               "expected #f or 'results for keep (did you mean 'results?)"
               "expected #f or 'results for keep")
           keep))
       (make-thread* 'thread thunk pool (eq? keep 'results) #f #f #t #f)]))

  (define-keyword-procedure thread thread-procedure (thunk #f) (pool #f) (keep #f))

  (define (thread-name t) (gthread-name t))
  (define (thread-outcome t) (thread-life-outcome (thread-life-of t)))
  (define (thread-results t) (thread-life-results (thread-life-of t)))
  (define (thread-data-specific t) (thread-life-specific (thread-life-of t)))
  (define (thread-data-specific-set! t v) (thread-life-specific-set! (thread-life-of t) v))
  (define (thread-add-exit-hook! t thunk)
    (let ([d (thread-life-of t)])
      (with-data-lock (thread-life-exit-hooks-set! d (cons thunk (thread-life-exit-hooks d))))))

  ;; ---------------------------------------------------------------- control
  (define thread-wait
    (case-lambda
      [(t) (thread-wait t void)]
      [(t fail-k)
       (check-thread 'thread-wait t)
       (unless (procedure? fail-k) (assertion-violation 'thread-wait "expected a procedure" fail-k))
       (let ([d (thread-life-of t)])
         (unless (gthread-dead? t) (sync (dead-latch d)))
         (if (eq? (thread-life-outcome d) 'ok)
             (if (thread-life-keep? d) (apply values (thread-life-results d)) (void))
             (fail-k)))]))

  (define (kill-thread t)
    (check-thread 'kill-thread t)
    (let ([d (thread-life-of t)])
      (cond
        [(gthread-dead? t) (void)]
        [(eq? t (current-gthread)) ((gthread-finisher t) 'killed)]
        [else
         (request-kill! t)
         (sync (dead-latch d))
         (void)])))

  (define break-thread
    (case-lambda
      [(t) (break-thread t #f)]
      [(t kind)
       (check-thread 'break-thread t)
       (unless (memq kind '(#f hang-up terminate))
         (assertion-violation 'break-thread "expected #f, 'hang-up or 'terminate" kind))
       (request-break! t kind)
       (when (eq? t (current-gthread)) (check-requests!))]))

  (define (thread-suspend t)
    (check-thread 'thread-suspend t)
    (let ([d (thread-life-of t)])
      (unless (or (gthread-dead? t) (gthread-suspended? t))
        (with-data-lock
          (thread-life-resume-latch-set! d #f)
          (let ([l (thread-life-suspend-latch d)]) (when l (latch-fire! l)))
          (request-suspend! t))
        (when (eq? t (current-gthread)) (check-requests!)))))

  (define thread-resume
    (case-lambda
      [(t) (thread-resume t #f)]
      [(t benefactor)
       (check-thread 'thread-resume t)
       (when (and benefactor (not (gthread? benefactor)))
         (assertion-violation 'thread-resume "expected a thread or #f" benefactor))
       (let ([d (thread-life-of t)])
         (when (and (not (gthread-dead? t)) (gthread-suspended? t))
           (with-data-lock
             (thread-life-suspend-latch-set! d #f)
             (let ([l (thread-life-resume-latch d)]) (when l (latch-fire! l)))
             (request-resume! t)))
         (void))]))

  (define (thread-running? t)
    (check-thread 'thread-running? t)
    (and (not (gthread-dead? t)) (not (gthread-suspended? t))))

  (define (thread-dead? t)
    (check-thread 'thread-dead? t)
    (gthread-dead? t))

  (define (thread-dead-evt t)
    (check-thread 'thread-dead-evt t)
    (dead-latch (thread-life-of t)))

  (define (thread-suspend-evt t)
    (check-thread 'thread-suspend-evt t)
    (if (gthread-dead? t)
        never-evt
        (state-latch (thread-life-of t) thread-life-suspend-latch thread-life-suspend-latch-set! gthread-suspended?)))

  (define (thread-resume-evt t)
    (check-thread 'thread-resume-evt t)
    (if (gthread-dead? t)
        never-evt
        (state-latch (thread-life-of t) thread-life-resume-latch thread-life-resume-latch-set!
                     (lambda (t) (not (gthread-suspended? t))))))

  (define sleep
    (case-lambda
      [() (yield)]
      [(secs)
       (let ([secs (cond
                     [(and (time? secs) (eq? (time-type secs) 'time-duration))
                      (+ (time-second secs) (/ (time-nanosecond secs) 1e9))]
                     [(and (real? secs) (>= secs 0)) secs]
                     [else (assertion-violation 'sleep "expected a non-negative real number of seconds" secs)])])
         (if (zero? secs)
             (yield)
             ;; on the monotonic clock: a wall-clock step never changes the wait
             (begin (sync (alarm-evt (fl+ (monotonic-ms) (* 1000. secs)) #t)) (void))))]))

  (define (yield) (yield!))

  ;; ---------------------------------------------------------------- mailboxes
  (define (raise-not-running t)
    (assertion-violation 'thread-send "target thread is not running" t))

  (define thread-send
    (case-lambda
      [(t v) (thread-send t v raise-not-running)]
      [(t v fail)
       (check-thread 'thread-send t)
       (unless (or (not fail) (procedure? fail))
         (assertion-violation 'thread-send "expected a procedure or #f" fail))
       (if (gthread-dead? t)
           (cond
             [(eq? fail raise-not-running) (raise-not-running t)]
             [fail (fail)]
             [else #f])
           (async-channel-put (thread-life-mailbox* (thread-life-of t)) v))]))

  (define (my-mailbox) (thread-life-mailbox* (thread-life-of (current-gthread))))
  (define (thread-receive) (async-channel-get (my-mailbox)))
  (define (thread-try-receive) (async-channel-try-get (my-mailbox)))

  ;; Ready when the syncing thread has mail; resolved when sync runs.
  (define the-receive-evt
    (guard-evt (lambda () (wrap-evt (async-channel-peek-evt (my-mailbox)) (lambda (e) the-receive-evt)))))
  (define (thread-receive-evt) the-receive-evt)

  (define (thread-rewind-receive lst)
    (unless (list? lst) (assertion-violation 'thread-rewind-receive "expected a list" lst))
    (let ([mb (my-mailbox)])
      (for-each (lambda (v) (async-channel-push-front! mb v)) lst)))

  ;; ---------------------------------------------------------------- breaks
  (define break-enabled
    (case-lambda
      [() (and (gthread-break-enabled? (current-thread)) #t)]
      [(on?)
       (let ([t (current-thread)])
         (gthread-break-enabled?-set! t (and on? #t))
         (when on? (check-requests!)))]))

  (define-syntax parameterize-break
    (syntax-rules ()
      [(_ on? body1 body ...) (call-with-break-enabled (and on? #t) (lambda () body1 body ...))]))

  ;; SRFI-18 make-thread's pool: #f, 'own or a parallel thread pool.
  (define srfi-18-thread-pool (make-parameter 'own))

  ;; ---------------------------------------------------------------- dump-threads
  ;; Every live thread: those some custodian holds (every thread made by
  ;; make-thread*, coroutine or parallel, SRFI-18 and future workers too)
  ;; and the adopted OS threads (the main one among them).  Both are held
  ;; weakly: listing threads costs a spawn nothing.  Everything is read
  ;; racily, without locks, and the text is made before it is written:
  ;; no lock is held while the port may block.

  (define (thread-state t)
    (check-thread 'thread-state t)
    (gthread-state t))

  (define (thread-waits t)
    (check-thread 'thread-waits t)
    (thread-wait-list t))

  ;; Other kinds of custodian-held objects that the dump lists (places):
  ;; (pred . describe), describe: object -> a line of text.
  (define dump-kinds '())
  (define (register-dump-kind! pred describe)
    (with-data-lock (set! dump-kinds (cons (cons pred describe) dump-kinds))))

  (define dump-threads
    (case-lambda
      [() (dump-threads (current-error-port))]
      [(port)
       (unless (and (output-port? port) (textual-port? port))
         (assertion-violation 'dump-threads "expected a textual output port" port))
       (put-string port (dump-text (adopted-gthreads) (all-managed-objects) (all-managed-owners) dump-kinds))
       (flush-output-port port)]))

  ;; SIGQUIT prints the dump to the error port, and the program goes on.
  ;; Every OS thread spindle starts blocks SIGQUIT (fork-os-thread), so
  ;; Chez runs this handler on the main OS thread, at its next interrupt
  ;; check, wherever it is (in a thread's code or a worker's wait): it
  ;; only starts a thread on a pool of its own, which writes the dump, so
  ;; a busy or stuck main pool is dumped too.
  (define (on-sigquit sig)
    (let ([t (spawn! (make-own-pool) 'dump-threads #f dump-from-signal #f)])
      (gthread-finisher-set! t (lambda (outcome) (exit-current-thread!)))
      (start-gthread! t)))

  (define (dump-from-signal t)
    (enable-interrupts)
    (guard (c [#t (void)]) (dump-threads (console-error-port)))
    (exit-current-thread!))

  (define sigquit-installed (begin (register-signal-handler sigquit on-sigquit) #t))

  ;; The deadlock report ends with the dump (and this reference makes
  ;; every program that uses threads invoke (spindle private impl deadlock): its watch).
  (define deadlock-dumper-installed (begin (set-deadlock-dumper! dump-threads) #t))

  (register-evt-kind! gthread? (lambda (t) (wrap-evt (dead-latch (thread-life-of t)) (lambda (l) t))))
  (set-owner-death-evt! (lambda (t) (dead-latch (thread-life-of t)))))
