#!chezscheme
;;; Over 450 lines: switching, parking and run queues share one set of invariants; pools, timers, wakeup and requests are apart.
;;; The M:N scheduler: pools of OS workers running green threads.
;;;
;;; A green thread is a record plus, while it is switched out, a one-shot
;;; continuation.  Voluntary switches (park, yield) capture it with call/cc
;;; (a full continuation: it keeps only the frames in use, where call/1cc
;;; keeps a whole stack segment, about 10 KB a parked thread);
;;; preemption comes from the per-OS-thread Chez timer, whose handler yields.
;;; Every scheduler data structure is touched only with interrupts disabled,
;;; so a green thread is never preempted, killed or broken inside it.
;;;
;;; Invariants:
;;; - A thread is in at most one run queue, and only while its park state is
;;;   running and its continuation (or start procedure) is set.
;;; - A worker never returns into a thread's stack bottom: fresh threads start
;;;   on the worker's base continuation, and a finished thread schedules the
;;;   next one from its dead stack, which invoking the next continuation (or
;;;   the base) drops, so stacks never chain across threads.
;;; - Switching never runs dynamic-wind thunks: the winders list is set to the
;;;   target's own before its continuation is invoked.
(library (spindle private core scheduler)
  (export
    ;; pools
    make-pool make-own-pool pool? pool-close! main-pool
    ;; threads
    gthread? gthread-name gthread-pool gthread-data gthread-data-set!
    gthread-params gthread-params-set! gthread-syncer gthread-syncer-set!
    gthread-kill-requested? gthread-break-pending
    gthread-break-enabled? gthread-break-enabled?-set!
    gthread-suspended? gthread-finisher gthread-finisher-set! gthread-dead? gthread-dead?-set!
    gthread-cleanup gthread-cleanup-set!
    gthread-waits gthread-waits-set! gthread-parked-at
    spawn! start-gthread! current-gthread
    ;; dump-threads
    gthread-state adopted-gthreads
    ;; switching
    park! unpark! yield! exit-current-thread! set-worker-exit-handler!
    may-park? raise-park-disabled
    set-resume-check! main-gthread running-here? arm-for-cancel!
    ;; timers
    add-timer! cancel-timer!
    ;; system-idle-evt
    other-threads-busy?
    ;; the deadlock watch
    set-idle-check! main-adoption-exn-state
    ;; (spindle simulation)
    run-simulation! sim-point!
    ;; misc
    &break break-condition?
    &break-hang-up break-hang-up-condition?
    &break-terminate break-terminate-condition?)
  (import (chezscheme) (spindle private core atomic) (spindle private core queue)
          (only (spindle private host dynamic-state) current-winders)
          (only (spindle private os signals) fork-os-thread)
          (spindle private core pools) (spindle private core gthread)
          (spindle private diagnostics trace) (spindle private core clock) (spindle private core timers)
          (spindle private core gc-policy) (spindle private core exit-hooks)
          (only (spindle private core unarmed) try-unarm! leave-unarmed! on-poke poke-pool! arm-current!)
          (only (spindle private host chez-threads) current-thread-context)
          (spindle private core wakeup)
          (spindle private core sim-hooks)
          (only (spindle private diagnostics watchdog) watchdog-note-spawn!))

  ;; Starts a time slice for the thread w runs: with the timer armed, or
  ;; unarmed while the thread is alone (see (spindle private core unarmed)).
  (define-syntax start-slice!
    (syntax-rules ()
      [(_ w) (begin (worker-slice-checks-set! w checks-per-slice)
                    (set-timer (if (and (worker-tc w) (try-unarm! w (worker-current w) needs-timer?)) 0 check-ticks)))]))
  (define (needs-timer?) (or tracing? (sim-here?) (poller-installed?)))

  ;; The current thread entered a cancel scope: a preemption must be able
  ;; to deliver its cancellation.
  (define (arm-for-cancel!) (arm-current! (current-worker)))

  ;; A scheduling point of a simulation (sync, semaphores, a thread's
  ;; start, yield): the simulation's scheduler picks the next thread,
  ;; which may be the current one.  Outside a simulation: one test.
  (define-syntax sim-point!
    (syntax-rules () [(_) (when (sim-here?) (set-box! sim-yield-reason 'point) (yield!))]))

  ;; The trace names a thread and its pool through these.
  (define trace-namer-set (and tracing? (begin (set-trace-namer! gthread-name gthread-pool) #t)))

  ;; The main pool: one worker, the OS thread with id 0 (the program's own).
  (define main-pool (make-pool 1 #t))

  ;; Thread parameters are inherited by fork-thread, so a worker record is
  ;; only believed on the OS thread that made it.
  (define worker-param (make-thread-parameter #f))

  (define (current-worker)
    (let ([w (worker-param)])
      (if (and w (fx= (worker-tid w) (get-thread-id))) w (adopt-os-thread!))))

  (define (current-gthread) (worker-current (current-worker)))

  ;; An OS thread spindle did not start becomes the only worker of a pool:
  ;; the main pool for OS thread 0, a private size-1 pool for any other.
  ;; Its running computation becomes a green thread with no continuation.
  (define (adopt-os-thread!)
    (disable-interrupts)
    (let* ([main? (fx= (get-thread-id) 0)]
           [p (if main? main-pool (make-pool 1 #f))]
           [w (make-worker p #f)]
           [t (make-gthread (if main? 'main 'adopted) p '(() . ()))])
      (worker-param w)
      (worker-current-set! w t)
      (when main?
        (set! the-main-adoption-exn-state (current-exception-state))
        (set! the-main-gthread t))
      (register-weakly! adopted t)
      (with-spin-lock (pool-lock p)
        (pool-workers-set! p (fx+ (pool-workers p) 1))
        (pool-threads-set! p (fx+ (pool-threads p) 1))
        (when (not main?) (pool-closed?-set! p #t)))
      (gthread-finisher-set! t (lambda (outcome) (exit-current-thread!)))
      (timer-interrupt-handler on-timer)
      (start-slice! w)
      (enable-interrupts)
      w))

  ;; The main thread's exception state when it was adopted, for the
  ;; deadlock watch (has a handler been installed since?).
  (define the-main-adoption-exn-state #f)
  (define (main-adoption-exn-state) the-main-adoption-exn-state)

  ;; Adopted OS threads (the main one too), held weakly, for dump-threads.
  (define adopted (box '()))
  (define (adopted-gthreads)
    (fold-left (lambda (acc wp) (let ([t (car wp)]) (if (bwp-object? t) acc (cons t acc))))
               '() (unbox adopted)))

  ;; What t is doing, for dump-threads: dead, suspended, parked, running
  ;; (on a worker now) or runnable.  Racy reads: t may change meanwhile.
  (define (gthread-state t)
    (cond
      [(gthread-dead? t) 'dead]
      [(gthread-suspended? t) 'suspended]
      [(eq? (unbox (gthread-park t)) 'parked) 'parked]
      [(exists (lambda (wp) (let ([w (car wp)]) (and (not (bwp-object? w)) (eq? (worker-current w) t))))
               (unbox all-workers))
       'running]
      [else 'runnable]))

  ;; ---------------------------------------------------------------- pools
  (define (pool-close! p)
    (with-interrupts-disabled
      (with-spin-lock (pool-lock p)
        (pool-closed?-set! p #t)
        (wake-all! p))))

  ;; Makes t runnable on its pool, waking or starting a worker.
  (define (enqueue! t)
    (assert-atomic 'enqueue!)
    (unless (and (sim-here?) ((sim-hooks-enqueue (current-sim-hooks)) t))
      (enqueue-on-pool! t)))

  (define (enqueue-on-pool! t)
    (let ([p (gthread-pool t)])
      (spin-lock! (pool-lock p))
      (queue-push! (pool-run-queue p) t)
      (cond
        [(or (fx> (pool-idle p) 0) (pool-poll-sleeper? p)) (wake-one! p)]
        [(and (not (pool-main? p)) (fx< (pool-workers p) (pool-size p)))
         (pool-workers-set! p (fx+ (pool-workers p) 1))
         (start-worker! p)]
        [else (poke-pool! p)])
      (spin-unlock! (pool-lock p))))

  ;; exit in any thread ends the process, as in Racket: every worker takes
  ;; exit-process (see (spindle private core exit-hooks)), or the handler a
  ;; place sets.
  (define worker-exit-handler #f)
  (define (set-worker-exit-handler! h) (set! worker-exit-handler h))

  ;; See (spindle private core gc-policy).
  (define libraries-collected (collect-libraries!))
  (define gc-policy-installed (begin (install-gc-policy!) #t))

  ;; See flush-exit-ports.
  (define flush-at-exit (begin (add-exit-hook! flush-exit-ports) #t))

  (define (start-worker! p)
    (fork-os-thread
      (lambda ()
        (exit-handler (or worker-exit-handler exit-process))
        (disable-interrupts)
        (let ([w (make-worker p (current-thread-context))])
          (worker-param w)
          (timer-interrupt-handler on-timer)
          (keyboard-interrupt-handler (lambda () (on-poke w)))
          (enter-base! w 'schedule))
        ;; enter-base! returns only when the pool is done with this worker.
        (set-timer 0)
        (enable-interrupts))))

  ;; Runs in a frame that never returns (a worker's root, or a receiver
  ;; frame of call/1cc).  Returns only when the worker must exit.
  ;; first: 'schedule, or a fresh thread to start.
  (define (enter-base! w first)
    (let ([msg (call/cc
                 (lambda (k)
                   (worker-base-set! w k)
                   (worker-base-winders-set! w (current-winders))
                   first))])
      (cond
        [(eq? msg 'schedule) (schedule-next w)]
        [(eq? msg 'exit) 'exit]
        [else (start-fresh! w msg)])))

  (define (invoke-base! w msg)
    (current-winders (worker-base-winders w))
    ((worker-base w) msg))

  ;; ---------------------------------------------------------------- running
  (define (save-context! t k)
    (gthread-cont-set! t k)
    (gthread-winders-set! t (current-winders))
    (gthread-exn-state-set! t (current-exception-state))
    (gthread-in-set! t (current-input-port))
    (gthread-out-set! t (current-output-port))
    (gthread-err-set! t (current-error-port)))

  ;; Setting a port parameter checks its argument (~15 ns each); most
  ;; threads share their ports, so only changed ones are set.
  (define-syntax restore-param!
    (syntax-rules ()
      [(_ param v) (let ([x v]) (unless (eq? (param) x) (param x)))]))

  ;; Setting current-exception-state takes Chez 9.5.8's global thread
  ;; mutex (a thread parameter there); most threads share one state.
  (define (restore-context! t)
    (restore-param! current-exception-state (gthread-exn-state t))
    (restore-param! current-input-port (gthread-in t))
    (restore-param! current-output-port (gthread-out t))
    (restore-param! current-error-port (gthread-err t)))

  ;; About 20-50 us of polling an idle pool's run queue.
  (define spin-iterations 20000)

  ;; Picks the next runnable thread of w's pool, sleeping while none.
  ;; Returns #f when the worker should exit.
  (define (next-runnable w)
    (if (sim-here?)
        ((sim-hooks-next (current-sim-hooks)) w)
        (next-runnable-of-pool w)))

  (define (next-runnable-of-pool w)
    (let* ([p (worker-pool w)] [lock (pool-lock p)] [rq (pool-run-queue p)])
      (let loop ([spins 0] [checks 0])
        (fire-due-timers! p)
        (spin-lock! lock)
        (let ([t (queue-pop! rq #f)])
          (cond
            [t (spin-unlock! lock) t]
            [(and (pool-closed? p) (fx= (pool-threads p) 0) (not (pool-main? p)))
             (pool-workers-set! p (fx- (pool-workers p) 1))
             (spin-unlock! lock)
             (hand-off-poll-role!)
             #f]
            [(fx< spins 1)
             ;; Spin briefly before sleeping, so that hand-offs from other OS
             ;; threads stay fast; without the lock, and with interrupts
             ;; enabled so that a collection need not wait for the spinner
             ;; (the timer is off here: nothing else can switch us).
             ;; Ready descriptors come first.
             (spin-unlock! lock)
             (if (poll-io-now!)
                 (loop spins checks)
                 (begin
                   (enable-interrupts)
                   (let spin ([i 0])
                     (when (and (fx< i spin-iterations) (queue-empty? rq)) (spin (fx+ i 1))))
                   (disable-interrupts)
                   (loop (fx+ spins 1) checks)))]
            [(take-poll-role!)
             ;; Sleep in the poller, until a descriptor is ready, the next
             ;; timer of this pool is due, or a waker kicks it.
             (pool-poll-sleeper?-set! p #t)
             (let* ([dl (next-deadline p)] [quiet (and (not dl) (quiet-limit checks))]
                    [t0 (if (or dl quiet) (monotonic-ms) 0.)])
               (spin-unlock! lock)
               (let* ([found (idle-wait w mask (poll-wait (if dl (flmax 0. (fl- dl t0)) quiet) mask))]
                      [checks (if (and quiet (null? found)) (idle-check-after! quiet t0 checks) 0)])
                 (spin-lock! lock)
                 (pool-poll-sleeper?-set! p #f)
                 (pool-poll-kicked?-set! p #f)
                 (spin-unlock! lock)
                 (poll-dispatch! found)             ; before the role goes (see poll-io-now!)
                 (release-poll-role!)
                 (worker-clock-set! w (real-time))
                 (interrupt-window!)
                 (loop 1 checks)))]
            [else
             ;; Sleep without the lock, deactivated (see (spindle private
             ;; ffi)): a condition-wait here, interrupts being disabled,
             ;; would block every collection while this worker is idle.
             (pool-idle-set! p (fx+ (pool-idle p) 1))
             (let* ([dl (next-deadline p)] [quiet (and (not dl) (quiet-limit checks))]
                    [t0 (if (or dl quiet) (monotonic-ms) 0.)])
               (spin-unlock! lock)
               (let* ([woken? (idle-wait w mask (sleep-on-wakeup p dl quiet t0 mask))]
                      ;; checked while still counted idle
                      [checks (if (and quiet (not woken?)) (idle-check-after! quiet t0 checks) 0)])
                 (spin-lock! lock)
                 (pool-idle-set! p (fx- (pool-idle p) 1))
                 (when woken? (pool-posted-set! p (fx- (pool-posted p) 1)))
                 (spin-unlock! lock)
                 (worker-clock-set! w (real-time))
                 (interrupt-window!)
                 (loop 1 checks)))])))))

  (define (count-switch! w)
    (let ([n (fx- (worker-switches-left w) 1)])
      (if (fx= n 0)
          (begin (worker-switches-left-set! w poll-interval) (worker-clock-set! w (coarse-ms)) (poll-io-now!))
          (worker-switches-left-set! w n))))

  ;; Never returns (except through the base, to exit the worker).
  (define (schedule-next w)
    (leave-thread! w)
    (run-thread! w (next-runnable w)))

  ;; The current thread's context is saved (or it has ended): w runs none.
  (define (leave-thread! w)
    (set-timer 0)
    (leave-unarmed! w)
    (when tracing? (trace-run-end!))
    (worker-current-set! w #f)
    (count-switch! w))

  ;; Runs t on w (t from next-runnable: #f makes the worker exit).
  (define (run-thread! w t)
    (cond
      [(not t) (invoke-base! w 'exit)]
      [(gthread-cont t)
       => (lambda (k)
            (worker-current-set! w t)
            (gthread-cont-set! t #f)
            (when tracing? (trace-run-start! t))
            (restore-context! t)
            (current-winders (gthread-winders t))
            (start-slice! w)
            (k (void)))]
      [(worker-base w) (invoke-base! w t)]
      [else (enter-base! w t)]))

  (define (start-fresh! w t)
    (worker-current-set! w t)
    (when tracing? (trace-run-start! t))
    (current-winders '())
    (restore-context! t)
    (start-slice! w)
    (let ([start (gthread-start t)])
      (gthread-start-set! t #f)
      (start t)))

  ;; ---------------------------------------------------------------- threads
  ;; Creates a thread on pool p that runs (start thread) with interrupts
  ;; disabled; start must end with exit-current-thread!.
  (define (spawn! p name params start enqueue?)
    (watchdog-note-spawn! (pool-main? p))
    (let ([t (make-gthread name p params)])
      (when (sim-here?) ((sim-hooks-spawned (current-sim-hooks)) t))
      (gthread-start-set! t start)
      (disable-interrupts)
      (spin-lock! (pool-lock p))
      (when (and (pool-closed? p) (not (pool-main? p)))
        (spin-unlock! (pool-lock p))
        (enable-interrupts)
        (assertion-violation 'thread "the parallel thread pool has been closed" p))
      (pool-threads-set! p (fx+ (pool-threads p) 1))
      (unless (pool-main? p) (gthread-member-set! t (queue-push! (pool-members p) t)))
      (spin-unlock! (pool-lock p))
      (when tracing? (trace-spawn! t))
      (when enqueue? (enqueue! t))
      (enable-interrupts)
      t))

  ;; Makes a thread made with enqueue? #f runnable.
  (define (start-gthread! t)
    (with-interrupts-disabled (enqueue! t))
    (sim-point!))

  ;; Ends the current thread (its finisher has already run); never returns.
  ;; A thread that ends inside its own with-interrupts-disabled (killing
  ;; itself there) never runs the region's exit: the depth goes back to
  ;; the scheduler's 1, or the next thread would run with interrupts off.
  (define (exit-current-thread!)
    (let drop ([d (disable-interrupts)])
      (when (fx> d 1) (enable-interrupts) (drop (fx- d 1))))
    (let* ([w (current-worker)] [t (worker-current w)] [p (worker-pool w)])
      (gthread-dead?-set! t #t)
      (when tracing? (trace-finish! t))
      (with-spin-lock (pool-lock p)
        (pool-threads-set! p (fx- (pool-threads p) 1))
        (let ([n (gthread-member t)])
          (when n (queue-remove! (pool-members p) n) (gthread-member-set! t #f)))
        (when (fx= (pool-threads p) 0)
          (when (pool-own? p) (pool-closed?-set! p #t))
          (when (pool-closed? p) (wake-all! p))))
      ;; Straight on to the next thread: invoking its continuation (or the
      ;; base, for a fresh one) drops this dead stack, so nothing chains;
      ;; a worker with no base yet makes one first.
      (if (worker-base w)
          (schedule-next w)
          (call/1cc (lambda (k) (enter-base! w 'schedule))))))

  ;; Parking with interrupts disabled by the thread's own code.  A parked
  ;; thread's disable depth is not saved with it: the OS thread keeps its
  ;; depth, so the next thread of the worker would run with interrupts
  ;; disabled (no preemption, no collection) and the parked one would
  ;; resume with them enabled inside its with-interrupts-disabled.  So
  ;; spindle parks only at depth 1, its own: every parker disables
  ;; interrupts once and calls may-park? before it registers anywhere
  ;; (sync does), and park! checks again.  At a higher depth the operation
  ;; raises instead of blocking, as Racket does in atomic mode; an
  ;; operation that completes without blocking is allowed.
  ;; may-park?: called with interrupts disabled once by the caller.
  (define (may-park?) (fx= (interrupt-depth) 1))

  ;; Switches away until unpark!.  Returns at once if an unpark came first.
  ;; Must be called with interrupts disabled once (see may-park?); returns
  ;; with them disabled.
  (define (park!)
    (let* ([w (current-worker)] [t (worker-current w)] [b (gthread-park t)])
      (unless (may-park?) (enable-interrupts) (raise-park-disabled 'park 'wait '()))
      (unless (box-cas! b 'notified 'running)
        (call/cc
          (lambda (k)
            (save-context! t k)
            (gthread-parked-at-set! t (worker-clock w))
            (if (box-cas! b 'running 'parked)
                (begin (when tracing? (trace-park! t)) (schedule-next w))
                ;; notified while saving: keep running
                (begin (gthread-cont-set! t #f) (set-box! b 'running))))))))

  ;; Wakes t if parked, else makes its next park! return at once.
  ;; The first access to the park box must be a CAS, not a plain read: the
  ;; CAS is a full fence, so the waker's earlier stores (the commit of the
  ;; syncer) are visible before it decides, and a parker that consumed a
  ;; stale 'notified then sees them.  A plain load may pass those stores
  ;; (x86 store->load reordering) and lose the wake-up.
  (define (unpark! t)
    (assert-atomic 'unpark!)
    (let ([b (gthread-park t)])
      (let loop ()
        (cond
          [(box-cas! b 'running 'notified) (void)]
          [(box-cas! b 'parked 'running) (when tracing? (trace-wake! t)) (enqueue! t)]
          [(eq? (unbox b) 'notified) (void)]
          [else (loop)]))))

  ;; Lets other runnable threads of the pool go first.  Does nothing where
  ;; the thread has disabled interrupts itself (see may-park?).
  (define (yield!)
    (if (fx= (disable-interrupts) 1)
        (if (sim-here?) (sim-yield-now!) (yield-now!))
        (enable-interrupts)))

  (define (yield-now!)
    (let* ([w (current-worker)] [t (worker-current w)] [p (worker-pool w)])
      (fire-due-timers! p)
      (if (queue-empty? (pool-run-queue p))
          (begin (count-switch! w) (start-slice! w))
          ;; one lock round for both: t goes to the back, the front runs
          ;; (the queue's length is unchanged, so no idle worker is woken)
          (call/cc
            (lambda (k)
              (save-context! t k)
              (let ([lock (pool-lock p)] [rq (pool-run-queue p)])
                (spin-lock! lock)
                (queue-push! rq t)
                (let ([next (queue-pop! rq #f)])
                  (spin-unlock! lock)
                  ;; leave-thread! without what run-thread! redoes at once
                  ;; (the timer and the worker's current thread)
                  (leave-unarmed! w)
                  (when tracing? (trace-run-end!))
                  (count-switch! w)
                  (run-thread! w next))))))
      (enable-interrupts)
      ;; t is still the current thread: a thread resumes as itself.  The
      ;; test keeps the call out of the common path (no request pending).
      (when (gthread-requests-pending? t) (resume-check t))))

  ;; In a simulation the simulation chooses the next thread: t goes back
  ;; to its runnable set and may be chosen at once.
  (define (sim-yield-now!)
    (let* ([w (current-worker)] [t (worker-current w)])
      (unless (unbox sim-yield-reason) (set-box! sim-yield-reason 'yield))
      (call/cc (lambda (k) (save-context! t k) (enqueue! t) (schedule-next w)))
      (enable-interrupts)
      (when (gthread-requests-pending? t) (resume-check t))))

  (define (on-timer)
    (let ([w (worker-param)])
      (if (and w (fx= (worker-tid w) (get-thread-id)) (worker-current w))
          (if (if (sim-here?) (sim-slice-over? w) (slice-over? w))
              (begin
                (when (poller-installed?) (with-interrupts-disabled (poll-io-now!)))
                (yield!))
              (set-timer check-ticks))
          (set-timer 0))))

  ;; At a timer check: #t if the running slice is used up (see check-ticks).
  (define (slice-over? w)
    (let ([left (fx- (worker-slice-checks w) 1)] [now (real-time)])
      (worker-slice-checks-set! w left)
      (worker-clock-set! w now)
      (cond
        [(fx= left (fx- checks-per-slice 1)) (worker-slice-start-set! w now) #f]
        [(fx<= left 0) #t]
        [else (fx>= (fx- now (worker-slice-start w)) slice-ms)])))

  ;; In a simulation a thread is preempted only when it computes for
  ;; about sim-slice-checks timer checks (some 10^6 Chez ticks) without a
  ;; scheduling point: Chez's timer is not exact, so such a point is not a
  ;; function of the seed; the simulation's own points are (sim-point!).
  (define sim-slice-checks 100)
  (define (sim-slice-over? w)
    (let ([left (fx- (worker-slice-checks w) 1)])
      (worker-slice-checks-set! w left)
      (fx<= left (fx- checks-per-slice sim-slice-checks))))

  ;; ---------------------------------------------------------------- simulation
  ;; Runs a simulation on this OS thread: (prepare! worker thread), with
  ;; interrupts disabled, installs the hooks (sim-install!) and makes the
  ;; first threads; then this thread is switched out, and its worker runs
  ;; what the simulation's next hook picks until that hook removes the
  ;; hooks and returns this thread.  Called with interrupts enabled.
  (define (run-simulation! prepare!)
    (unless (fx= (disable-interrupts) 1)
      (enable-interrupts)
      (assertion-violation 'simulate "cannot start a simulation with interrupts disabled"))
    (let* ([w (current-worker)] [t (worker-current w)])
      (call/cc (lambda (k) (prepare! w t) (save-context! t k) (schedule-next w)))
      (enable-interrupts)))

  ;; ---------------------------------------------------------------- for requests
  ;; (spindle private core thread-requests) acts on kill, break and suspend
  ;; requests; a preempted or yielding thread resumes through this hook.
  (define resume-check (lambda (t) (void)))
  (define (set-resume-check! proc) (set! resume-check proc))

  ;; The program's main thread, adopting OS thread 0 if this is it; #f
  ;; elsewhere before that.
  (define the-main-gthread #f)
  (define (main-gthread)
    (or the-main-gthread
        (and (fx= (get-thread-id) 0) (begin (current-worker) the-main-gthread))))

  ;; #t if t is the thread running on this OS thread.
  (define (running-here? t)
    (let ([w (worker-param)])
      (and w (fx= (worker-tid w) (get-thread-id)) (eq? (worker-current w) t)))))
