;;; Pools and workers: the records the scheduler runs on, the time-slice
;;; and poller-look constants, and the weak registries behind
;;; system-idle-evt.  Only (spindle private core scheduler) changes them,
;;; under the rule of (spindle private core atomic).
(library (spindle private core pools)
  (export check-ticks checks-per-slice quantum-ticks slice-ms poll-interval pool make-pool pool?
          make-own-pool pool-size pool-main? pool-own? pool-lock pool-wakeup pool-run-queue
          pool-members pool-workers pool-workers-set! pool-idle pool-idle-set! pool-threads
          pool-threads-set! pool-closed? pool-closed?-set! pool-timers pool-posted pool-posted-set!
          pool-poll-sleeper? pool-poll-sleeper?-set! pool-poll-kicked? pool-poll-kicked?-set! worker
          make-worker worker? worker-pool worker-tid worker-base worker-base-set! worker-base-winders
          worker-base-winders-set! worker-current worker-current-set! worker-switches-left
          worker-switches-left-set! worker-slice-checks worker-slice-checks-set! worker-slice-start
          worker-slice-start-set! worker-clock worker-clock-set! worker-tc worker-unarmed
          pool-unarmed pool-unarmed-set! all-pools all-workers register-weakly! other-threads-busy?)
  (import (chezscheme) (spindle private core queue) (spindle private core timers)
          (only (spindle private os threads) make-os-semaphore))

  ;; A time slice is quantum-ticks Chez ticks (about 0.3-0.7 ms of Scheme
  ;; code) or slice-ms of real time, whichever ends first.  Ticks do not
  ;; advance during system calls, so a thread doing many of them (reads of
  ;; a flooded socket, say) could run 30-70 ms on one quantum, and every
  ;; timer of its pool would wait for it.  So the timer fires every
  ;; check-ticks, and on-timer ends the slice once checks-per-slice checks
  ;; have passed or slice-ms have passed since the slice's first check.
  ;; The clock is read only at checks (real-time: ~40 ns, no allocation),
  ;; never at a switch; the stretch before the first check is not timed.
  (define check-ticks 10000)
  (define checks-per-slice 10)
  (define quantum-ticks (* check-ticks checks-per-slice))
  (define slice-ms 2)

  ;; Idle workers sleep on wakeup, an OS semaphore; posted counts the posts
  ;; not yet taken by a sleeper, so wakers post only while idle > posted.
  ;; One idle worker of the process may sleep in the I/O poller instead
  ;; (see (spindle private core wakeup)): its pool then has poll-sleeper? set, and a waker with
  ;; no semaphore sleeper to post kicks the poller (once: poll-kicked?).
  ;; An own pool (a thread's #:pool 'own) closes itself when its thread
  ;; count drops to 0, so it stays open for siblings while its thread runs.
  ;; threads counts the pool's live threads: its workers exit once it is
  ;; closed and that count is 0.  So a thread of a parallel pool must not
  ;; vanish uncounted: members holds each of them strongly until it ends
  ;; (a thread parked on an event nobody else holds would otherwise be
  ;; collected, and its pool's worker would wait for it for ever).  The
  ;; main pool's workers never exit: its threads are not held (a parked
  ;; coroutine thread that nothing can wake is garbage).
  (define-record-type pool
    (fields size main? own? lock wakeup run-queue members
            (mutable workers) (mutable idle) (mutable threads) (mutable closed?)
            timers (mutable posted)
            (mutable poll-sleeper?) (mutable poll-kicked?)
            (mutable unarmed))      ; its workers running with no timer (see run-unarmed?)
    (protocol
      (lambda (new)
        (case-lambda
          [(size main?) (new-pool new size main? #f)]
          [(size main? own?) (new-pool new size main? own?)])))
    (nongenerative spindle-pool-v5) (sealed #t))

  (define (new-pool new size main? own?)
    (register-weakly! all-pools
      (new size main? own? (box #f) (make-os-semaphore main?) (make-queue) (and (not main?) (make-queue))
           0 0 0 #f (make-timer-heap) 0 #f #f '())))

  (define (make-own-pool) (make-pool 1 #f #t))

  ;; switches-left counts down the switches until the worker next looks at
  ;; the I/O poller: threads that yield to each other reset the timer, so
  ;; without it they could keep ready descriptors waiting for ever.
  ;; slice-checks counts down the timer checks left in the running slice
  ;; (see check-ticks); slice-start is the real-time of its first check.
  ;; clock is a coarse real-time (ms) for the park times dump-threads
  ;; shows: set where the worker reads the clock or makes a system call
  ;; anyway (slice checks, looks at the poller, wake-ups), so a park costs
  ;; no clock reading; it lags real time by at most a slice or
  ;; poll-interval switches, unless a thread sat in a long system call.
  ;; tc: the worker's OS thread context, for a poke (#f: never unarmed);
  ;; unarmed: a box, #f, or #t while the worker runs a thread with no
  ;; timer, 'poking while a poker writes tc, 'poked after (see the
  ;; scheduler's run-unarmed?).
  (define-record-type worker
    (fields pool tid (mutable base) (mutable base-winders) (mutable current) (mutable switches-left)
            (mutable slice-checks) (mutable slice-start) (mutable clock) tc unarmed)
    (protocol (lambda (new)
                (lambda (pool tc)
                  (register-weakly! all-workers
                    (new pool (get-thread-id) #f '() #f poll-interval checks-per-slice 0 (real-time) tc (box #f))))))
    (nongenerative spindle-worker-v5) (sealed #t))

  ;; ---- for system-idle-evt: every pool and worker of the process, held
  ;; weakly (a box of weak pairs, pushed with a CAS; rare: pools and workers
  ;; are made seldom).  Dead entries are dropped as a push finds them.
  (define all-pools (box '()))
  (define all-workers (box '()))
  (define (register-weakly! registry x)
    (let loop ()
      (let ([old (unbox registry)])
        (unless (box-cas! registry old
                  (cons (weak-cons x #f)
                        (filter (lambda (wp) (not (bwp-object? (car wp)))) old)))
          (loop))))
    x)

  ;; #t if a thread other than self runs on some worker or waits in some
  ;; pool's run queue.  Racy reads, without locks: an answer for an idle
  ;; check, never for correctness.  A worker's current is #f while it looks
  ;; for work or sleeps.
  (define (other-threads-busy? self)
    (or (exists (lambda (wp)
                  (let ([w (car wp)])
                    (and (not (bwp-object? w))
                         (let ([t (worker-current w)]) (and t (not (eq? t self)))))))
                (unbox all-workers))
        (exists (lambda (wp)
                  (let ([p (car wp)])
                    (and (not (bwp-object? p)) (not (queue-empty? (pool-run-queue p))))))
                (unbox all-pools))))

  ;; Switches between two looks at the I/O poller by a worker whose threads
  ;; keep switching (see switches-left).  A look is a system call
  ;; (epoll_wait with no wait), the cost of dozens of switches, so it is
  ;; made every few dozen; a prime, so that it does not fall in step with
  ;; a program's cycle of threads.
  (define poll-interval 61)

  (record-writer (record-type-descriptor pool)
    (lambda (p port wr)
      (display (if (pool-main? p) "#<main-pool>" "#<parallel-thread-pool ") port)
      (unless (pool-main? p) (display (pool-size p) port) (display ">" port)))))
