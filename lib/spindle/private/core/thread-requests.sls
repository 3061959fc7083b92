#!chezscheme
;;; Requests to a thread from outside it: kill, break, suspend, resume,
;;; cancellation (see (spindle private core cancel)), and Ctrl-C, which
;;; breaks the main thread.  A request marks the thread
;;; and interrupts it where it waits; the thread acts on its requests
;;; itself (check-requests!), when it resumes from a preemption or yield
;;; and wherever the sync layer looks.
(library (spindle private core thread-requests)
  (export request-kill! request-break! request-suspend! request-resume!
          request-cancel-check! check-requests! check-breaks! check-cancel! set-interrupt-hook!
          call-with-break-enabled)
  (import (chezscheme) (spindle private core scheduler) (spindle private core gthread)
          (only (spindle private core clock) coarse-ms)
          (only (spindle private core cancel) cancel-condition)
          (only (spindle private core unarmed) poke-thread!))

  ;; The sync layer registers how to interrupt a thread parked in a sync.
  (define interrupt-hook (lambda (t) (unpark! t)))
  (define (set-interrupt-hook! proc) (set! interrupt-hook proc))

  ;; The hook commits the thread's syncer and enqueues the thread, under
  ;; spin locks: always with interrupts disabled, since these are called
  ;; from user code (kill-thread, break-thread) and from signal handlers.
  ;; Each request is stored, then a fence, then t's syncer is read (by the
  ;; hook): see wait-in-syncer! in evt-core for the other side.
  (define fence-box (box 0))
  (define-syntax interrupt!
    (syntax-rules ()
      [(_ t) (begin (box-cas! fence-box 0 0) (disable-interrupts) (interrupt-hook t) (poke-thread! t) (enable-interrupts))]))

  (define (request-kill! t)
    (gthread-kill-requested?-set! t #t)
    (interrupt! t))

  ;; The interruption does not depend on t's break flag as read here: t
  ;; may be setting it (sync/enable-break, parameterize-break) on another
  ;; OS thread, where its store and its look at break-pending can pass
  ;; this store and this look (x86 reorders a load before an earlier
  ;; store): both would miss, and t would wait in its sync with a break
  ;; pending and enabled until something else committed it.  The wake-up
  ;; (a CAS) makes t look again; with breaks disabled, its sync just
  ;; waits again.
  (define (request-break! t kind)
    (let ([old (gthread-break-pending t)])
      ;; hang-up and terminate replace a plain pending break
      (unless (and old kind (not (eq? old 'plain)))
        (gthread-break-pending-set! t (or kind (or old 'plain)))))
    (interrupt! t))

  (define (request-suspend! t)
    (gthread-suspended?-set! t #t)
    (interrupt! t))

  ;; A scope of t's was cancelled: wake t where it waits, so that it looks
  ;; (a thread the scope no longer covers just waits again).
  (define (request-cancel-check! t)
    (interrupt! t))

  (define (request-resume! t)
    (when (gthread-suspended? t)
      (gthread-suspended?-set! t #f)
      (disable-interrupts)
      (unpark! t)
      (enable-interrupts)))

  ;; Acts on pending kill, suspend and break requests of the current thread.
  ;; Called with interrupts enabled, outside critical sections.
  (define (check-requests!) (check-requests-of! (current-gthread) #f))

  ;; The same but for cancellation, which only a wait's checkpoint or a
  ;; preemption delivers: for where breaks become enabled (leaving
  ;; parameterize-break #f is no checkpoint).
  (define (check-breaks!) (check-requests-of! (current-gthread) 'breaks))

  ;; preempted?: #t when called as t resumes from a preemption (or yield), at an
  ;; arbitrary point of its code, possibly just after a sync committed.  A
  ;; cancellation is then delivered only to a thread that has neither
  ;; parked nor returned from a sync for cancel-run-ms (parked-at: the
  ;; sync layer stamps sync returns inside scopes): one that waits now and
  ;; then takes it at its next park, where raising takes nothing (the sync
  ;; has not committed), so a value a sync returned is not dropped between
  ;; the commit and the caller's next step; one that never waits is still
  ;; cancelled.  A preemption raises a scope's cancellation only if it was
  ;; not raised in t already (at a park or a preemption): the raise
  ;; unwinds, and cleanup that computes without waiting (a dynamic-wind
  ;; exit, a guard clause) must run to its end, as a Trio finally block
  ;; without checkpoints does.  A cleanup that waits gets it again at the
  ;; wait; an outer scope's later cancellation is another scope, raised.
  (define cancel-run-ms 10)

  (define (raise-cancellation t cs)
    (gthread-cancel-raised-set! t (weak-cons cs #f))
    (raise (cancel-condition cs)))

  ;; A wait's checkpoint (see sync.sls): raises t's pending cancellation,
  ;; if any, before the wait takes anything.  t is inside a cancel scope.
  (define (check-cancel! t)
    (let ([cs (gthread-cancel-pending t)]) (when cs (raise-cancellation t cs))))

  (define (raised-before? t cs)
    (let ([w (gthread-cancel-raised t)]) (and w (eq? (car w) cs))))

  (define (check-requests-of! t preempted?)
    (let loop ()
      (cond
        [(gthread-kill-requested? t) ((gthread-finisher t) 'killed)]
        [(gthread-suspended? t)
         (disable-interrupts)
         (park!)
         (enable-interrupts)
         (loop)]
        [(and (gthread-break-pending t) (gthread-break-enabled? t))
         (let ([kind (gthread-break-pending t)])
           (gthread-break-pending-set! t #f)
           (raise
             (condition
               (case kind
                 [(hang-up) (make-break-hang-up-condition)]
                 [(terminate) (make-break-terminate-condition)]
                 [else (make-break-condition)])
               (make-message-condition
                 (case kind
                   [(hang-up) "hang-up break"]
                   [(terminate) "terminate break"]
                   [else "user break"])))))]
        [(and (gthread-cancel t)
              (not (eq? preempted? 'breaks))
              (or (not preempted?) (fx>= (fx- (coarse-ms) (gthread-parked-at t)) cancel-run-ms))
              (gthread-cancel-pending t))
         => (lambda (cs)
              (if (and preempted? (raised-before? t cs))
                  (void)
                  (raise-cancellation t cs)))]
        [else (void)])))

  (define resume-check-installed
    (begin (set-resume-check! (lambda (t) (check-requests-of! t #t))) #t))

  ;; SIGINT breaks the main thread (break-thread), as in Racket: a thread
  ;; parked in sync, sleep, tcp-accept or a read wakes with the break; a
  ;; running one takes it at its next switch, or at once when the signal
  ;; reached its own OS thread.  Uncaught, it ends the program like any
  ;; uncaught exception of the main thread ("user break", status 255).
  ;; Chez's C handler only marks the interrupt pending in the OS thread
  ;; that took the signal (the kernel prefers the main one); this handler
  ;; runs there at its next interrupt check.  An idle worker sleeps with
  ;; interrupts disabled, so the scheduler opens them for a moment after
  ;; every wake-up (the signal makes its wait return early: EINTR).
  ;; A main thread that spindle has not adopted yet is adopted here when
  ;; the handler runs on it (it is then in its own code, interrupts
  ;; enabled, as at any first call of current-thread); anywhere else
  ;; before that, Chez's own handler runs.  Installed when this library
  ;; is invoked, as the sync layer, which refers to it, is.
  (define chez-keyboard-handler (keyboard-interrupt-handler))
  (define (on-keyboard-interrupt)
    (let ([m (main-gthread)])
      (if m
          (begin
            (request-break! m #f)
            (when (running-here? m) (check-requests-of! m #t)))
          (chez-keyboard-handler))))
  (define keyboard-handler-installed
    (begin (keyboard-interrupt-handler on-keyboard-interrupt) #t))

  ;; A pending break is raised wherever breaks become enabled: on entering
  ;; an enabling extent (also by a jump into it) and on leaving a disabling
  ;; one (also by an escape out of it; a cancellation waits there for a
  ;; checkpoint, see check-breaks!).  It is raised only after the flag
  ;; holds the value of the extent it is raised in: a break raised from the
  ;; before thunk first puts the outer value back (that thunk's winder is
  ;; not installed yet, so no after thunk would), and one raised from the
  ;; after thunk finds the outer value already restored.
  (define (call-with-break-enabled new thunk)
    (let ([t (current-gthread)] [old #f])
      (dynamic-wind
        (lambda ()
          (set! old (gthread-break-enabled? t))
          (gthread-break-enabled?-set! t new)
          (when new
            (guard (c [#t (gthread-break-enabled?-set! t old) (raise c)]) (check-requests!))))
        thunk
        (lambda ()
          (gthread-break-enabled?-set! t old)
          (when (and old (not new)) (check-breaks!)))))))
