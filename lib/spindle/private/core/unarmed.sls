;;; Workers that run a thread with no timer armed.  With a timer armed,
;;; Chez runs its whole event handler at the end of every critical section
;;; (number->string has two), which costs conversion-heavy code a few
;;; percent.  A worker whose thread is alone (its pool's run queue empty,
;;; no timer in its pool, no request pending, no cancel scope, no I/O
;;; poller, not traced or simulated) runs it unarmed; whatever changes
;;; that pokes the worker, which then arms its timer again:
;;; - a thread enqueued on the pool, a timer added to it (under the pool's
;;;   lock: poke-pool!);
;;; - a kill, break, suspend or cancellation check for a thread
;;;   (poke-thread!);
;;; - the I/O poller's installation (poke-all!);
;;; - the thread entering a cancel scope (arm-current!).
;;; A poke writes the worker's OS thread context so that it runs on-poke
;;; (its keyboard-interrupt-handler) at its next event check.
;;;
;;; Invariant: a worker's unarmed box moves from #f to #t (unarm), from #t
;;; to 'poked (a poke) and back to #f only under its pool's lock, and the
;;; pool's unarmed list holds its workers that are not #f.  So a
;;; poker, holding the lock, writes the context of a worker that cannot
;;; leave its thread (leave-unarmed! takes the lock), whose OS thread
;;; therefore cannot exit; and an unarm, which looks at the queue, the
;;; timers and the requests under the lock, and an enqueue, timer or
;;; request, which looks at the list under the lock after its store,
;;; never miss each other.
(library (spindle private core unarmed)
  (export try-unarm! leave-unarmed! on-poke poke-pool! poke-thread! poke-all! arm-current!
          worker-unarmed?)
  (import (chezscheme) (spindle private core atomic) (spindle private core pools)
          (spindle private core queue) (only (spindle private core timers) timer-heap-empty?)
          (only (spindle private core gthread) gthread-pool gthread-cancel gthread-requests-pending?)
          (only (spindle private host chez-threads) poke-thread-context!))

  ;; #t if w runs its thread unarmed (or a poke is on its way).
  (define (worker-unarmed? w) (and (unbox (worker-unarmed w)) #t))

  ;; Called by w's OS thread as it starts a slice of t, with interrupts
  ;; disabled and no lock held.  needs-timer?: what outside this library
  ;; needs the timer (tracing, a simulation, the I/O poller), looked at
  ;; under the lock too (the poller's installation pokes after its store).
  ;; #t: run t unarmed.
  (define (try-unarm! w t needs-timer?)
    (let ([u (worker-unarmed w)] [p (worker-pool w)])
      (case (unbox u)
        [(#t) #t]          ; still alone: a change would have poked
        [(poked) #f]       ; armed until on-poke or leave-unarmed! clears it
        [else
         (and (worker-tc w)
              (not (gthread-cancel t))
              (not (needs-timer?))
              ;; unlocked first looks: most slices start with company
              (queue-empty? (pool-run-queue p))
              (timer-heap-empty? (pool-timers p))
              (begin
                (spin-lock! (pool-lock p))
                (let ([alone (and (not (needs-timer?))
                                  (queue-empty? (pool-run-queue p))
                                  (timer-heap-empty? (pool-timers p))
                                  (not (gthread-requests-pending? t)))])
                  (when alone
                    (set-box! u #t)
                    (pool-unarmed-set! p (cons w (pool-unarmed p))))
                  (spin-unlock! (pool-lock p))
                  alone)))])))

  ;; w stops running its thread (a switch, a park, the thread's end).
  ;; Interrupts disabled.
  (define (leave-unarmed! w)
    (when (unbox (worker-unarmed w)) (clear-locked! w)))

  ;; w's state back to #f, under its pool's lock.  Interrupts disabled.
  (define (clear-locked! w)
    (let ([p (worker-pool w)])
      (spin-lock! (pool-lock p))
      (clear! w p)
      (spin-unlock! (pool-lock p))))

  ;; Under p's lock.
  (define (clear! w p)
    (let ([u (worker-unarmed w)])
      (when (unbox u)
        (set-box! u #f)
        (pool-unarmed-set! p (remq w (pool-unarmed p))))))

  ;; The keyboard-interrupt-handler of every worker spindle starts: a poke
  ;; arms the timer at once (its next check sees what the poke was for).
  (define (on-poke w)
    (when (eq? (unbox (worker-unarmed w)) 'poked)
      (with-interrupts-disabled (clear-locked! w))
      (set-timer 1)))

  ;; Under p's lock: pokes p's unarmed workers.  A worker that pokes its
  ;; own pool (its thread woke a neighbour) arms itself at once.
  (define (poke-pool! p)
    (for-each
      (lambda (w)
        (when (eq? (unbox (worker-unarmed w)) #t)
          (if (fx= (worker-tid w) (get-thread-id))
              (begin (clear! w p) (set-timer check-ticks))
              (begin
                (set-box! (worker-unarmed w) 'poked)
                (poke-thread-context! (worker-tc w))))))
      (pool-unarmed p)))

  ;; After a request for t is stored: pokes the workers of t's pool that
  ;; run unarmed (t may be one's thread).  Interrupts disabled.
  (define (poke-thread! t)
    (let ([p (gthread-pool t)])
      (spin-lock! (pool-lock p))
      (poke-pool! p)
      (spin-unlock! (pool-lock p))))

  ;; Every unarmed worker of the process (the poller was installed).
  (define (poke-all!)
    (with-interrupts-disabled
      (for-each
        (lambda (pp)
          (let ([p (car pp)])
            (unless (bwp-object? p)
              (spin-lock! (pool-lock p))
              (poke-pool! p)
              (spin-unlock! (pool-lock p)))))
        (unbox all-pools))))

  ;; The running thread of w entered a cancel scope: a preemption must be
  ;; able to deliver its cancellation.  Interrupts enabled.
  (define (arm-current! w)
    (when (and w (unbox (worker-unarmed w)))
      (with-interrupts-disabled (clear-locked! w))
      (set-timer check-ticks))))
