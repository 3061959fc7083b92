#!chezscheme
;;; How idle workers sleep and are woken: a pool's semaphore sleepers, and
;;; the one worker of the process that may sleep in the I/O poller (the
;;; poll role), and a pool's timers, which bound a sleeper's wait.  The
;;; scheduler's next-runnable is the only sleeper; wakers are enqueue!, a
;;; new timer and pool shutdown.
(library (spindle private core wakeup)
  (export set-io-hooks! poller-installed? take-poll-role! release-poll-role!
          poll-wait poll-dispatch! poll-io-now! hand-off-poll-role!
          wake-one! wake-all! add-timer! next-deadline fire-due-timers!
          interrupt-window! idle-wait sleep-on-wakeup
          set-idle-check! quiet-limit idle-check-after!)
  (import (chezscheme) (spindle private core atomic) (spindle private core pools)
          (spindle private core timers) (only (spindle private core clock) monotonic-ms)
          (only (spindle private os threads) os-semaphore-post! os-semaphore-wait!)
          (only (spindle private os signals) hold-main-signals! release-main-signals!)
          (only (spindle private core sim-hooks) sim-here? current-sim-hooks sim-hooks-add-timer)
          (only (spindle private core unarmed) poke-pool! poke-all!))

  ;; (spindle private io poller) installs its hooks when the first descriptor
  ;; is watched; until then workers sleep on their semaphores only.
  ;; (io-wait! ms sigmask): waits in epoll_wait at most ms milliseconds (a
  ;; flonum; #f = no limit, 0. = just look) with the collector released and
  ;; the signal mask at address sigmask (0: the thread's own), and returns
  ;; what it found.  (io-dispatch! found): wakes the threads waiting for it
  ;; (of any pool).  (io-kick!): makes a waiting io-wait! return.
  (define io-wait! #f)
  (define io-dispatch! #f)
  (define io-kick! #f)
  (define (set-io-hooks! wait dispatch kick)
    (set! io-kick! kick)
    (set! io-dispatch! dispatch)
    (set! io-wait! wait)
    ;; busy workers look at the poller at their timer checks: none unarmed
    (poke-all!))

  (define (poller-installed?) (and io-wait! #t))
  (define (poll-wait ms sigmask) (io-wait! ms sigmask))
  (define (poll-dispatch! found) (io-dispatch! found))

  ;; The poll role.  At most one worker of the process waits in epoll_wait
  ;; at a time: the one that set this box from #f to #t (in next-runnable,
  ;; when it has nothing to run), and it gives the role back as soon as
  ;; epoll_wait returns.  The other idle workers sleep on their pool's
  ;; semaphore; busy workers look at the poller on each timer tick, and
  ;; every worker looks before it goes idle, so ready descriptors are seen
  ;; within a time slice while any worker runs, and at once while one
  ;; waits in the poller.  The state to avoid is every worker asleep on a
  ;; semaphore with the role free: nobody would see a descriptor again.
  ;; A worker going idle takes the role if it is free, so only a worker
  ;; that stops for good can leave it there.  The rule:
  ;; - a holder dispatches what it found before it gives the role back
  ;;   (the dispatch drains the kick eventfd: see poll-io-now!);
  ;; - an idle worker tries to take the role before it sleeps on its
  ;;   semaphore, under its pool's lock, after counting itself idle;
  ;; - a worker that exits (its pool closed and empty), after giving up its
  ;;   pool, wakes one semaphore sleeper of any pool if the role is free
  ;;   (hand-off-poll-role!), and that worker takes the role as it goes
  ;;   idle again.
  ;; The exiting worker reads the sleeper counts under each pool's lock
  ;; after the role was freed, and a sleeper counts itself idle and tries
  ;; the role under the same lock, so one of the two always sees the other.
  (define poll-role (box #f))

  ;; #t if the poller is installed and this worker now holds the role.
  (define (take-poll-role!) (and io-wait! (box-cas! poll-role #f #t)))
  (define (release-poll-role!) (set-box! poll-role #f))

  ;; With interrupts disabled and no lock held.
  (define (hand-off-poll-role!)
    (when (and io-wait! (not (unbox poll-role)))
      (let loop ([ps (unbox all-pools)])
        (unless (null? ps)
          (let ([p (car (car ps))])
            (if (and (not (bwp-object? p))
                     (with-spin-lock (pool-lock p)
                       (and (fx> (pool-idle p) (pool-posted p))
                            (begin (wake-one! p) #t))))
                (void)
                (loop (cdr ps))))))))

  ;; With interrupts disabled and no lock held: dispatch what the poller has
  ;; now, unless another worker is already waiting in it.  #t if it found
  ;; anything.
  ;; The role is given back after the dispatch: it drains the kick
  ;; eventfd, and a kick written for the next holder (a sleeper of another
  ;; pool) must not be drained by this one's dispatch, or that sleeper
  ;; would wait in epoll_wait with its pool marked kicked for ever.
  (define (poll-io-now!)
    (and (take-poll-role!)
         (let ([any? (io-dispatch! (io-wait! 0. 0))])
           (release-poll-role!)
           any?)))

  ;; With the pool lock held: wake one sleeping worker / all of them.
  (define (wake-one! p)
    (cond
      [(fx> (pool-idle p) (pool-posted p))
       (pool-posted-set! p (fx+ (pool-posted p) 1))
       (os-semaphore-post! (pool-wakeup p))]
      [(and (pool-poll-sleeper? p) (not (pool-poll-kicked? p)))
       (pool-poll-kicked?-set! p #t)
       (io-kick!)]))

  (define (wake-all! p)
    (let loop () (when (fx> (pool-idle p) (pool-posted p)) (wake-one! p) (loop)))
    (wake-one! p))

  ;; A pool's timers (the heap: (spindle private core timers)); in a
  ;; simulation, the simulation's (on its virtual clock).
  (define (add-timer! p deadline action)
    (if (sim-here?)
        (with-atomic ((sim-hooks-add-timer (current-sim-hooks)) deadline action))
        (add-pool-timer! p deadline action)))

  (define (add-pool-timer! p deadline action)
    (with-atomic
      (with-spin-lock (pool-lock p)
        (let ([tm (timer-heap-add! (pool-timers p) deadline action)])
          ;; an idle worker may be sleeping past this deadline, a busy one
          ;; running unarmed
          (wake-one! p)
          (poke-pool! p)
          tm))))

  ;; Under the pool's lock: it drops cancelled timers.
  (define (next-deadline p) (timer-heap-next-deadline (pool-timers p)))

  ;; Called with interrupts disabled and no lock held.
  (define (fire-due-timers! p)
    (unless (timer-heap-empty? (pool-timers p))
      (let ([actions (with-spin-lock (pool-lock p) (timer-heap-take-due! (pool-timers p) (monotonic-ms)))])
        (for-each (lambda (a) (a)) actions))))

  ;; ---------------------------------------------------------------- sleeping
  ;; In next-runnable, with interrupts disabled once and no lock held, no
  ;; thread current and the timer off: lets a pending keyboard interrupt
  ;; (or collect request) run.
  (define-syntax interrupt-window!
    (syntax-rules () [(_) (begin (enable-interrupts) (disable-interrupts))]))

  ;; (idle-wait w mask wait): evaluates wait, an idle worker's sleep, with
  ;; mask bound to the signal mask it is to sleep with.  The main OS thread
  ;; takes Ctrl-C and SIGQUIT: it holds them from its last interrupt window
  ;; to the sleep, which lets them in atomically (see hold-main-signals!).
  ;; Every other OS thread of spindle blocks them: it sleeps with its own.
  (define-syntax idle-wait
    (syntax-rules ()
      [(_ w mask wait)
       (if (fx= (worker-tid w) 0)
           (let* ([mask (hold-main-signals!)] [_ (interrupt-window!)] [r wait])
             (release-main-signals!)
             r)
           (let ([mask 0]) wait))]))

  ;; Sleeps on p's wakeup until a post, deadline dl, or (no deadline) quiet
  ;; ms from t0 (#f: no limit), with the signal mask at sigmask; #t if it
  ;; took a post.
  (define (sleep-on-wakeup p dl quiet t0 sigmask)
    (if dl
        (let ([ms (fl- dl t0)])
          (and (fl> ms 0.) (os-semaphore-wait! (pool-wakeup p) ms sigmask)))
        (os-semaphore-wait! (pool-wakeup p) quiet sigmask)))

  ;; The deadlock watch ((spindle deadlock)).  A worker about to sleep
  ;; with no deadline (no timer of its pool) sleeps at most quiet-limit ms
  ;; instead, and if that passes with nothing to do, calls (idle-check),
  ;; which looks whether every thread of the process is blocked for ever
  ;; (and then ends the program).  idle-check returns #t to be asked again
  ;; later (it was unsure for a reason that may pass), #f if not.  checks
  ;; counts the looks of this idle stretch: the wait doubles at each, and
  ;; after max-idle-checks the worker sleeps with no limit until woken.
  ;; Any other end of a sleep (a wake-up, a descriptor, a timer) starts a
  ;; new stretch: what made the answer "no" may have gone.
  ;; No cost while the worker has threads to run or timers to wait for.
  (define idle-check #f)
  (define (set-idle-check! proc) (set! idle-check proc))
  (define idle-quiet-ms 100.)
  (define max-idle-checks 6)
  (define (quiet-limit checks)
    (and idle-check (fx< checks max-idle-checks)
         (fl* idle-quiet-ms (fixnum->flonum (fxsll 1 checks)))))
  ;; After a limited wait (from t0) that found nothing: the next checks.
  ;; A wait cut short (a signal) is no quiet stretch.
  (define (idle-check-after! quiet t0 checks)
    (cond
      [(fl< (fl- (monotonic-ms) t0) quiet) checks]
      [(idle-check) (fx+ checks 1)]
      [else max-idle-checks])))
