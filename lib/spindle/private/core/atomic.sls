#!chezscheme
;;; The concurrency rule of the whole core, in one place (see "The rule" in
;;; doc/internals.md):
;;;
;;;   Shared scheduler state is touched, and a Chez mutex is held, only with
;;;   interrupts disabled.  A spin lock is held only with interrupts
;;;   disabled, for a bounded stretch: never across a blocking call, a Chez
;;;   mutex wait, user code, or an allocation-heavy loop.
;;;
;;; - (with-atomic e ...): an interrupts-disabled region (no preemption,
;;;   kill, break or suspend reaches the green thread inside).  Regions nest.
;;; - (with-os-mutex m e ...): holds the Chez mutex m inside such a region.
;;;   A Chez mutex belongs to an OS thread, and green threads move between
;;;   OS threads only at switches: a green thread switched out while it held
;;;   m would hold it "for" whatever runs next on its worker.
;;; - spin-lock!, spin-unlock!, with-spin-lock: below.
;;; - (assert-atomic who): raises an internal error when interrupts are
;;;   enabled.  Put at the top of every procedure whose contract says
;;;   "called with interrupts disabled".  Compiled in only when the calling
;;;   library is compiled below optimize-level 3 (SPINDLE_SAFE=1 compiles
;;;   at 0); at level 3 it expands to nothing.
;;;   atomic-checks? is #t where this library was compiled that way.
;;; - (internal-error who msg irritant ...): raises a condition saying that
;;;   spindle itself broke a rule (never a user error).
(library (spindle private core atomic)
  (export with-atomic with-os-mutex interrupt-depth atomic?
          assert-atomic atomic-checks? internal-error
          spin-lock! spin-unlock! with-spin-lock)
  (import (chezscheme) (only (spindle private os threads) os-yield!)
          (only (spindle private host objects) interrupt-depth))

  (define-syntax with-atomic
    (syntax-rules () [(_ e1 e2 ...) (with-interrupts-disabled e1 e2 ...)]))

  (define-syntax with-os-mutex
    (syntax-rules () [(_ m e1 e2 ...) (with-interrupts-disabled (with-mutex m e1 e2 ...))]))

  (define-syntax atomic?
    (syntax-rules () [(_) (fx> (interrupt-depth) 0)]))

  (define (internal-error who msg . irritants)
    (raise
      (condition
        (make-assertion-violation) (make-who-condition who)
        (make-message-condition (string-append "spindle internal error: " msg))
        (make-irritants-condition irritants))))

  ;; The optimize level is read when the using library is expanded: every
  ;; library of a run is compiled at the same level (see bin/spindle).
  (define atomic-checks? (meta-cond [(fx< (optimize-level) 3) #t] [else #f]))
  (define-syntax assert-atomic
    (lambda (x)
      (syntax-case x ()
        [(_ who)
         (if (fx< (optimize-level) 3)
             #'(unless (atomic?) (internal-error who "called with interrupts enabled"))
             #'(void))])))

  ;; Spin locks (a box CAS'd from #f to #t or 'enabled) guard the scheduler's and the
  ;; events' shared state: a pool's run queue, a channel's queues, a
  ;; custodian's list.  A Chez mutex costs ~30 ns a round trip, and a
  ;; switch takes two.  After spin-polls busy polls the waiter yields its
  ;; CPU: the holder may have been descheduled by the OS (more workers than
  ;; cores).
  ;;
  ;; The rule, because of the collector: a collection starts only when
  ;; every active OS thread has reached the collect rendezvous, and a
  ;; thread reaches it only at an interrupt check with interrupts enabled.
  ;; A waiter spins with interrupts disabled (it may already hold another
  ;; spin lock or be inside the scheduler), so it never reaches the
  ;; rendezvous until it gets the lock: if the holder stops at the
  ;; rendezvous, or waits for anything that waits for a collection, every
  ;; thread hangs.  So a holder
  ;; - keeps interrupts disabled from lock to unlock (callers disable them
  ;;   first; for one that forgot, spin-lock! disables them itself and
  ;;   spin-unlock! enables them again, marked in the lock box, so that it
  ;;   cannot be preempted or collected while holding);
  ;; - runs a bounded stretch of spindle code: no user code, no parking,
  ;;   no blocking or __collect_safe foreign call (its return waits for a
  ;;   running collection), no wait for a Chez mutex (its holder may be
  ;;   one that does), no allocation that grows with the data (it delays
  ;;   every collection; a queue node or a waiter is fine);
  ;; - takes nested spin locks only in one order (a custodian before its
  ;;   children, an event's lock before a pool's lock).
  (define spin-polls 1000)   ; busy polls before the waiter gives its CPU up
  (define (spin-lock! b)
    (let ([held (if (fx= 0 (interrupt-depth)) (begin (disable-interrupts) 'enabled) #t)])
      (let loop ([polls 0])
        (unless (box-cas! b #f held)
          (let wait ([polls polls])
            (cond
              [(not (unbox b)) (loop polls)]
              [(fx< polls spin-polls) (wait (fx+ polls 1))]
              [else (os-yield!) (wait 0)]))))))
  (define (spin-unlock! b)
    (let ([held (unbox b)])
      (set-box! b #f)
      (when (eq? held 'enabled) (enable-interrupts))))
  (define-syntax with-spin-lock
    (syntax-rules ()
      [(_ b e ...) (begin (spin-lock! b) (let ([v (begin e ...)]) (spin-unlock! b) v))])))
