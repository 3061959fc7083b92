;;; The green thread record and the break conditions.  The scheduler owns
;;; every field but data (the thread layer's record) and params (the
;;; parameterization, owned by (spindle parameter)).
(library (spindle private core gthread)
  (export gthread make-gthread gthread? gthread-name gthread-pool gthread-park gthread-cont
          gthread-cont-set! gthread-start gthread-start-set! gthread-winders gthread-winders-set!
          gthread-exn-state gthread-exn-state-set! gthread-in gthread-in-set! gthread-out
          gthread-out-set! gthread-err gthread-err-set! gthread-params gthread-params-set!
          gthread-syncer gthread-syncer-set! gthread-kill-requested? gthread-kill-requested?-set!
          gthread-break-pending gthread-break-pending-set! gthread-break-enabled?
          gthread-break-enabled?-set! gthread-suspended? gthread-suspended?-set! gthread-finisher
          gthread-finisher-set! gthread-dead? gthread-dead?-set! gthread-cleanup gthread-cleanup-set!
          gthread-member gthread-member-set! gthread-data gthread-data-set! gthread-waits gthread-waits-set!
          gthread-parked-at gthread-parked-at-set! initial-exception-state
          &break make-break-condition break-condition? &break-hang-up make-break-hang-up-condition
          break-hang-up-condition? &break-terminate make-break-terminate-condition
          break-terminate-condition? raise-park-disabled gthread-requests-pending? gthread-interrupt-pending?
          gthread-cancel gthread-cancel-set! gthread-cancel-pending
          gthread-cancel-raised gthread-cancel-raised-set!)
  (import (chezscheme) (only (spindle private core cancel) cancel-pending))

  (define-condition-type &break &serious make-break-condition break-condition?)
  (define-condition-type &break-hang-up &break
    make-break-hang-up-condition break-hang-up-condition?)
  (define-condition-type &break-terminate &break
    make-break-terminate-condition break-terminate-condition?)

  ;; park: 'running, 'parked or 'notified (a wake-up that came before the park).
  (define-record-type gthread
    (fields name pool park
            (mutable cont)           ; one-shot continuation while switched out
            (mutable start)          ; procedure run at first schedule; never returns
            (mutable winders) (mutable exn-state)
            (mutable in) (mutable out) (mutable err)
            (mutable params)         ; parameterization, owned by (spindle parameter)
            (mutable syncer)         ; sync state it waits on, for interruption
            (mutable kill-requested?) (mutable break-pending)
            ;; break-enabled?: #f, #t, or 'until-commit inside sync/enable-break
            ;; entered with breaks disabled (see with-breaks-enabled in sync)
            (mutable break-enabled?) (mutable suspended?)
            (mutable finisher)       ; (lambda (outcome)) ends the thread; never returns
            (mutable dead?)
            (mutable cleanup)        ; thunk a kill must run (sync's NACKs), or #f
            (mutable member)         ; its node in its pool's members, or #f
            (mutable data)           ; the thread layer's record
            ;; for dump-threads: what a sync parks on (its one primitive evt
            ;; or its branch vector; #f outside a sync), and the worker's
            ;; clock (real-time, ms) at the last park (inside a cancel
            ;; scope, also at each sync's return: see sync.sls)
            (mutable waits) (mutable parked-at)
            ;; its innermost cancel scope, or #f (see (spindle private core cancel))
            (mutable cancel)
            ;; a weak pair holding the last cancel scope whose cancellation
            ;; it raised, or #f (see check-requests-of! in thread-requests.sls)
            (mutable cancel-raised))
    (protocol
      (lambda (new)
        (lambda (name pool params)
          (new name pool (box 'running) #f #f '() initial-exception-state
               (current-input-port) (current-output-port) (current-error-port)
               params #f #f #f #t #f #f #f #f #f #f #f 0 #f #f))))
    (nongenerative spindle-gthread-v5) (sealed #t))

  ;; Fresh threads start with the handlers the program started with.
  (define initial-exception-state (current-exception-state))

  ;; #t if t has a kill, suspend or (enabled) break request to act on, or
  ;; is cancelled (outside every cancel scope, the one check of its cancel
  ;; field is all this costs).
  (define (gthread-requests-pending? t)
    (or (gthread-kill-requested? t) (gthread-suspended? t)
        (and (gthread-break-pending t) (gthread-break-enabled? t))
        (and (gthread-cancel t) (gthread-cancel-pending t) #t)))

  ;; The same but for cancellation, which a poll does not take (a poll is
  ;; no checkpoint): what makes a sync take nothing from its first attempt.
  (define (gthread-interrupt-pending? t)
    (or (gthread-kill-requested? t) (gthread-suspended? t)
        (and (gthread-break-pending t) (gthread-break-enabled? t))))

  ;; The cancel scope t must be cancelled by now, or #f.  Cancellation is
  ;; delivered like a break: not while breaks are disabled.
  (define (gthread-cancel-pending t)
    (and (gthread-break-enabled? t) (cancel-pending (gthread-cancel t))))

  ;; Raises the error of a park refused by may-park? (call it after
  ;; undoing the parker's own disable); what: what the thread would have
  ;; waited for (a symbol), irritants: the events.
  (define (raise-park-disabled who what irritants)
    (raise
      (condition
        (make-assertion-violation) (make-who-condition who)
        (make-message-condition
          (format "cannot block (~a) while interrupts are disabled (inside with-interrupts-disabled or after disable-interrupts)" what))
        (make-irritants-condition irritants))))

  ;; A thread prints briefly (its record graph is cyclic).
  (record-writer (record-type-descriptor gthread)
    (lambda (t port wr) (display "#<thread " port) (display (gthread-name t) port) (display ">" port))))
