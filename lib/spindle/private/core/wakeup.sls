#!chezscheme
;;; How idle workers sleep and are woken: a pool's semaphore sleepers, and
;;; the one worker of the process that may sleep in the I/O poller (the
;;; poll role), and a pool's timers, which bound a sleeper's wait.  The
;;; scheduler's next-runnable is the only sleeper; wakers are enqueue!, a
;;; new timer and pool shutdown.
(library (spindle private core wakeup)
  (export set-io-hooks! poller-installed? take-poll-role! release-poll-role!
          poll-wait poll-dispatch! poll-io-now! hand-off-poll-role!
          wake-one! wake-all! add-timer! next-deadline fire-due-timers!)
  (import (chezscheme) (spindle private core atomic) (spindle private core pools)
          (spindle private core timers) (only (spindle private core clock) monotonic-ms)
          (only (spindle private os threads) os-semaphore-post!))

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
    (set! io-wait! wait))

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

  ;; A pool's timers (the heap: (spindle private core timers)).
  (define (add-timer! p deadline action)
    (with-atomic
      (with-spin-lock (pool-lock p)
        (let ([tm (timer-heap-add! (pool-timers p) deadline action)])
          ;; an idle worker may be sleeping past this deadline
          (wake-one! p)
          tm))))

  (define (next-deadline p) (timer-heap-next-deadline (pool-timers p)))

  ;; Called with interrupts disabled and no lock held.
  (define (fire-due-timers! p)
    (unless (timer-heap-empty? (pool-timers p))
      (let ([actions (with-spin-lock (pool-lock p) (timer-heap-take-due! (pool-timers p) (monotonic-ms)))])
        (for-each (lambda (a) (a)) actions)))))
