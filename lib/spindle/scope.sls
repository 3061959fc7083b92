#!chezscheme
;;; Task scopes, deadlines and cancel shields (structured concurrency).
;;;
;;; All three are cancel scopes (see (spindle private core cancel)): a
;;; thread inside a cancelled or expired scope raises a &cancelled
;;; condition at its next park point (and at its next preemption), until it
;;; leaves the scope.  The condition unwinds like any raise: dynamic-wind
;;; exits and guard clauses run.
;;;
;;; - (move-on-after s body ...) / (with-timeout s body ...): a scope whose
;;;   deadline is s seconds after entry; the first returns #f when its own
;;;   deadline cancels it, the second lets the condition (timeout-condition?)
;;;   propagate.
;;; - (with-cancel-shield body ...): cancellation of the scopes outside it
;;;   does not reach its body (cleanup that must park).
;;; - (call-with-task-scope proc): a task scope; its children (scope-thread,
;;;   scope-future) run inside it.  Leaving it waits for every child; the
;;;   first child failure cancels the scope (its body and every child); the
;;;   scope's custodian, current in the body and the children, is shut down
;;;   at the end; failures are raised together as one &scope-failure.  It
;;;   returns the body's values if the body returned (cancelled or not), #f
;;;   if its own cancellation unwound the body (scope-cancel-caught?).
;;;
;;; A task scope's lock (a Chez mutex, held with interrupts disabled)
;;; guards its state, children, nested scopes, failures and its cancel
;;; scope's cancelled field.  Cancelling marks the cancel scope and, with
;;; the same origin, the task scopes nested in it (see (spindle private
;;; core cancel)), and interrupts (outside the lock) the body threads and
;;; children of all of them: a woken thread that is not cancelled after
;;; all (inside a shield, breaks disabled) just waits again.  Only the body
;;; thread ends its scope (close!).
(library (spindle scope)
  (export call-with-task-scope task-scope? scope-thread scope-future scope-cancel!
          scope-cancelled? scope-cancel-caught? with-cancel-shield call-with-cancel-shield
          with-timeout move-on-after call-with-timeout call-with-move-on-after
          &cancelled cancelled-condition? &timeout timeout-condition?
          &scope-failure scope-failure-condition? scope-failure-conditions)
  (import (except (chezscheme) parameterize)
          (only (spindle private core atomic) with-os-mutex)
          (only (spindle private core scheduler) current-gthread arm-for-cancel!)
          (only (spindle private core gthread) gthread-cancel gthread-cancel-set!)
          (only (spindle private core thread-requests) request-cancel-check! check-cancel!)
          (only (spindle private core clock) monotonic-ms)
          (spindle private core cancel)
          (only (spindle private core evt-core) make-owned-latch owned-latch-owner-set!
                latch-fire!)
          (only (spindle private core sync) register-evt-record-type!)
          (only (spindle private core wait-targets) wait-target-alias!)
          (only (spindle private impl thread) make-thread* start-thread! thread-add-exit-hook! parallel-thread-pool?)
          (only (spindle semaphore) make-semaphore semaphore-post semaphore-wait)
          (only (spindle custodian) make-custodian current-custodian custodian-shutdown-all)
          (only (spindle parameter) parameterize)
          (only (spindle private impl future) make-owned-future touch future-pool))

  (define-condition-type &scope-failure &error make-scope-failure scope-failure-condition?
    (conditions scope-failure-conditions))

  ;; ---------------------------------------------------------------- shields and deadlines
  ;; Runs thunk with cs as the current thread's innermost scope.  cs is made
  ;; once, before entry: a re-entry (guard re-raising in the raise's
  ;; context does one) reinstalls the same scope.
  (define (in-scope cs thunk)
    (let ([outer #f])
      (dynamic-wind
        (lambda () (let ([t (current-gthread)]) (set! outer (gthread-cancel t)) (gthread-cancel-set! t cs) (arm-for-cancel!)))
        thunk
        (lambda () (gthread-cancel-set! (current-gthread) outer)))))

  (define (check-thunk who thunk)
    (unless (and (procedure? thunk) (logbit? 0 (procedure-arity-mask thunk)))
      (assertion-violation who "expected a procedure of no arguments" thunk)))

  (define (call-with-cancel-shield thunk)
    (check-thunk 'with-cancel-shield thunk)
    (in-scope (make-cancel-scope (gthread-cancel (current-gthread)) 'shield #f) thunk))

  (define-syntax with-cancel-shield
    (syntax-rules () [(_ body1 body ...) (call-with-cancel-shield (lambda () body1 body ...))]))

  ;; A deadline scope entered now.
  (define (deadline-scope who kind seconds)
    (unless (and (real? seconds) (not (nan? seconds)) (>= seconds 0))
      (assertion-violation who "expected a non-negative real number of seconds" seconds))
    ;; +inf.0 (or past the largest flonum): a deadline that never comes,
    ;; so none (no timer at each wait)
    (let ([dl (fl+ (monotonic-ms) (fl* 1000. (inexact seconds)))])
      (make-cancel-scope (gthread-cancel (current-gthread)) kind (and (fl< dl +inf.0) dl))))

  (define (call-with-timeout seconds thunk)
    (let ([cs (deadline-scope 'with-timeout 'timeout seconds)])
      (check-thunk 'with-timeout thunk)
      (in-scope cs thunk)))

  (define (call-with-move-on-after seconds thunk)
    (let ([cs (deadline-scope 'move-on-after 'move-on seconds)])
      (check-thunk 'move-on-after thunk)
      (call-catching (lambda (c) (own-cancellation? c cs)) (lambda () (in-scope cs thunk)) (lambda (c) #f))))

  (define (own-cancellation? c cs)
    (and (cancelled-condition? c) (eq? (cancelled-condition-scope c) cs)))

  ;; The deadline runs from here, when the body is entered.
  (define-syntax with-timeout
    (syntax-rules () [(_ seconds body1 body ...) (call-with-timeout seconds (lambda () body1 body ...))]))

  (define-syntax move-on-after
    (syntax-rules () [(_ seconds body1 body ...) (call-with-move-on-after seconds (lambda () body1 body ...))]))

  ;; ---------------------------------------------------------------- task scopes
  ;; state: open, then ended once the body has left and no child is left.
  ;; children: the children started and not yet ended (an eq hashtable,
  ;; so that each end is O(1)); ended: posted as each ends; caught?: the
  ;; body was unwound by the scope's own cancellation.
  (define-record-type (task-scope new-task-scope task-scope?)
    (fields cancel custodian owner end lock ended children
            (mutable state) (mutable nested) (mutable failures) (mutable caught?))
    (nongenerative spindle-task-scope-v2) (sealed #t))

  (define (check-scope who s)
    (unless (task-scope? s) (assertion-violation who "expected a task scope" s)))

  ;; The task scope whose cancellation reaches a scope entered inside cs
  ;; (the nearest on cs's chain below the first shield), or #f.
  (define (enclosing-task cs)
    (let ([tc (and cs (cancel-scope-task cs))]) (and tc (cancel-scope-data tc))))

  (define (scope-cancelled? s)
    (check-scope 'scope-cancelled? s)
    (and (cancel-scope-cancelled (task-scope-cancel s)) #t))

  (define (scope-cancel-caught? s)
    (check-scope 'scope-cancel-caught? s)
    (task-scope-caught? s))

  (define (scope-cancel! s)
    (check-scope 'scope-cancel! s)
    (cancel! s (task-scope-cancel s)))

  ;; Marks s and the scopes nested in it cancelled by origin (kept if an
  ;; outer origin is there already), then wakes their threads.
  (define (cancel! s origin)
    (let-values ([(threads nested)
                  (with-os-mutex (task-scope-lock s)
                    (let* ([cs (task-scope-cancel s)] [old (cancel-scope-cancelled cs)])
                      (unless (and old (fx<= (cancel-scope-depth old) (cancel-scope-depth origin)))
                        (cancel-scope-cancelled-set! cs origin)))
                    (values (cons (task-scope-owner s) (vector->list (hashtable-keys (task-scope-children s))))
                            (task-scope-nested s)))])
      (for-each request-cancel-check! threads)
      (for-each (lambda (n) (cancel! n origin)) nested)))

  (define (call-with-task-scope proc)
    (unless (and (procedure? proc) (logbit? 1 (procedure-arity-mask proc)))
      (assertion-violation 'call-with-task-scope "expected a procedure of one argument" proc))
    (let* ([t (current-gthread)]
           [cs (make-cancel-scope (gthread-cancel t) 'task #f)]
           [parent (enclosing-task (gthread-cancel t))]
           [self (box #f)]
           [s (new-task-scope cs (make-custodian) t
                              (make-owned-latch (lambda (l) (unbox self)) #f)
                              (make-mutex) (make-semaphore 0) (make-eq-hashtable) 'open '() '() #f)])
      (set-box! self s)
      (cancel-scope-data-set! cs s)
      (owned-latch-owner-set! (task-scope-end s) s)
      ;; registered, and cancelled if the parent is, in one step: a
      ;; cancellation of the parent either sees s or is copied here
      (when parent
        (with-os-mutex (task-scope-lock parent)
          (task-scope-nested-set! parent (cons s (task-scope-nested parent)))
          (cancel-scope-cancelled-set! cs (cancel-scope-cancelled (task-scope-cancel parent)))))
      (let* ([outcome
              (call-catching
                (lambda (c) #t)
                (lambda ()
                  (let ([left? #f])
                    (dynamic-wind
                      (lambda ()
                        (when left? (assertion-violation 'call-with-task-scope "cannot re-enter a task scope" s)))
                      (lambda ()
                        (in-scope cs
                          (lambda ()
                            (call-with-values
                              (lambda () (parameterize ([current-custodian (task-scope-custodian s)]) (proc s)))
                              (lambda vals (set! left? #t) (cons 'ok vals))))))
                      ;; a body that raises (the catch's escape) or jumps out
                      ;; (a continuation) ends the scope here: its children
                      ;; are cancelled and waited for
                      (lambda ()
                        (unless left?
                          (set! left? #t)
                          (cancel! s cs)
                          (close! s parent))))))
                (lambda (c) (cons 'raised c)))]
             [waited? (close! s parent)])
        (let ([failures (reverse (task-scope-failures s))])
          (cond
            [(pair? failures)
             ;; the body's raise, unless it is a cancellation or a
             ;; child's failure it got again (touching a scope-future)
             (let ([all (if (and (eq? (car outcome) 'raised) (not (cancelled-condition? (cdr outcome)))
                                 (not (memq (cdr outcome) failures)))
                            (cons (cdr outcome) failures)
                            failures)])
               (raise (condition (make-scope-failure all) (make-who-condition 'call-with-task-scope)
                                 (make-message-condition
                                   (format "~a child thread~a of the task scope failed"
                                           (length failures) (if (null? (cdr failures)) "" "s"))))))]
            ;; with no failure to raise, waiting for children makes the
            ;; scope's end a checkpoint, as any wait: a cancellation of the
            ;; scopes around it (a deadline that cut the children while the
            ;; body waited for them, shielded) is raised here, not lost
            [(eq? (car outcome) 'ok) (when waited? (checkpoint! t)) (apply values (cdr outcome))]
            [(own-cancellation? (cdr outcome) cs)
             (task-scope-caught?-set! s #t)
             (when waited? (checkpoint! t))
             #f]
            [else (raise (cdr outcome))])))))

  (define (checkpoint! t) (when (gthread-cancel t) (check-cancel! t)))

  ;; The children of s not yet ended (for the dump and the deadlock report).
  (define (scope-children s)
    (with-os-mutex (task-scope-lock s) (vector->list (hashtable-keys (task-scope-children s)))))

  ;; Waits (shielded: the children are cancelled if the waiter would be)
  ;; until no child is left, then ends s.  #t if it found a child running.
  (define (close! s parent)
    (and (not (eq? (task-scope-state s) 'ended)) (close-now! s parent)))

  (define (close-now! s parent)
    (let ([waited?
           (call-with-cancel-shield
             (lambda ()
               (let loop ([waited? #f])
                 (if (with-os-mutex (task-scope-lock s)
                       (if (fx= (hashtable-size (task-scope-children s)) 0)
                           (begin (task-scope-state-set! s 'ended) #f)
                           #t))
                     (begin
                       ;; the dump and the deadlock report name what the
                       ;; closer waits for: s's children, not a bare semaphore
                       (unless waited? (wait-target-alias! (task-scope-ended s) 'children s scope-children))
                       (semaphore-wait (task-scope-ended s))
                       (loop #t))
                     waited?))))])
      (custodian-shutdown-all (task-scope-custodian s))
      (when parent
        (with-os-mutex (task-scope-lock parent)
          (task-scope-nested-set! parent (remq s (task-scope-nested parent)))))
      (latch-fire! (task-scope-end s))
      waited?))

  (define scope-thread
    (case-lambda
      [(s thunk) (scope-thread s thunk #f)]
      [(s thunk pool)
       (check-scope 'scope-thread s)
       (check-thunk 'scope-thread thunk)
       (unless (or (not pool) (eq? pool 'own) (parallel-thread-pool? pool))
         (assertion-violation 'scope-thread "expected #f, 'own or a parallel thread pool" pool))
       (start-child! 'scope-thread s thunk pool void)]))

  ;; Starts a child of s running thunk; on-end runs when it ends, however
  ;; (before s counts it ended).
  (define (start-child! who s thunk pool on-end)
    (unless (eq? (task-scope-state s) 'open)
      (assertion-violation who "the task scope has ended" s))
    (let ([t (parameterize ([current-custodian (task-scope-custodian s)])
               (make-thread* 'scope-thread thunk pool #f #t #f #f (lambda (start) (run-child s start))))])
      (gthread-cancel-set! t (task-scope-cancel s))
      (unless (with-os-mutex (task-scope-lock s)
                (and (eq? (task-scope-state s) 'open)
                     (begin
                       (hashtable-set! (task-scope-children s) t #t)
                       #t)))
        (assertion-violation who "the task scope has ended" s))
      ;; runs however the child ends, killed too
      (thread-add-exit-hook! t (lambda () (on-end) (child-ended! s t)))
      (start-thread! t)
      t))

  ;; A child's raise is a failure unless it is the cancellation of its
  ;; scope or of a scope outside it.
  (define (run-child s thunk)
    (guard (c [#t (unless (and (cancelled-condition? c)
                               (cancel-scope-within? (task-scope-cancel s) (cancelled-condition-scope c)))
                    (child-failed! s c))])
      (thunk)))

  (define (child-failed! s c)
    (when (with-os-mutex (task-scope-lock s)
            (let ([first? (null? (task-scope-failures s))])
              (task-scope-failures-set! s (cons c (task-scope-failures s)))
              first?))
      (cancel! s (task-scope-cancel s))))

  (define (child-ended! s t)
    (with-os-mutex (task-scope-lock s)
      (hashtable-delete! (task-scope-children s) t))
    (semaphore-post (task-scope-ended s)))

  ;; A future whose thunk only a child of s runs (on the future pool, or
  ;; pool); a touch waits for it.  So the thunk never runs outside the
  ;; scope or after it, and a toucher's own cancellation stays the
  ;; toucher's (were it run by a toucher, that raise would be the future's
  ;; outcome for every toucher).  A child that ends before running it
  ;; (cancelled first, killed) leaves the future failed with s's
  ;; cancellation.
  (define scope-future
    (case-lambda
      [(s thunk) (scope-future s thunk #f)]
      [(s thunk pool)
       (check-scope 'scope-future s)
       (check-thunk 'scope-future thunk)
       (unless (or (not pool) (parallel-thread-pool? pool))
         (assertion-violation 'scope-future "expected #f or a parallel thread pool" pool))
       (let-values ([(f run fail) (make-owned-future)])
         (start-child! 'scope-future s (lambda () (run thunk)) (or pool (future-pool))
           (lambda () (fail (cancel-condition (task-scope-cancel s)))))
         f)]))

  ;; A task scope is an evt ready, with itself, once it has ended.
  (define evt-registered (register-evt-record-type! (record-type-descriptor task-scope) 3))

  (record-writer (record-type-descriptor task-scope)
    (lambda (s port wr) (display "#<task-scope>" port))))
