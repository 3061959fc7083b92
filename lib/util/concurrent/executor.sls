#!chezscheme
;;; (util concurrent executor): Kato's executors on spindle (doc/reference.md).
;;;
;;; A thread-pool executor keeps, in acceptance order, one entry per
;;; accepted unfinished future: its state (queued, running, killing,
;;; cancelled or done) and the id of the worker it was pushed to.
;;; The entry list, the count and the executor state are guarded by one
;;; Chez mutex, held only briefly with interrupts disabled (pushing a task
;;; to the pool, which never blocks, happens under it so that an entry's
;;; worker is always known).
;;;
;;; Killing a worker (terminate-oldest-handler) is precise: the oldest entry
;;; is marked killing under the lock, and its task, should it end first,
;;; parks instead of taking further work, so the kill lands on that task and
;;; nothing else.  The entries queued on the same worker (its queue is
;;; dropped with it) are pushed again.  A task whose future was cancelled
;;; runs on (it is not interrupted) and its result is dropped.
;;;
;;; Every removal of an entry replaces a semaphore that is posted once: the
;;; "availability changed" event that wait-finishing-handler's timed waits
;;; sync on, so they end as soon as room appears.
(library (util concurrent executor)
  (export <executor> executor? executor-state executor-available? execute-future!
          shutdown-executor! executor-submit!
          <thread-pool-executor> make-thread-pool-executor thread-pool-executor?
          thread-pool-executor-pool-size thread-pool-executor-max-pool-size
          thread-pool-executor-available? thread-pool-executor-execute-future!
          thread-pool-executor-shutdown!
          abort-rejected-handler terminate-oldest-handler wait-finishing-handler
          push-future-handler
          &rejected-execution-error rejected-execution-error? rejected-future rejected-executor
          <fork-join-executor> make-fork-join-executor fork-join-executor?
          fork-join-executor-available? fork-join-executor-execute-future!
          fork-join-executor-shutdown!
          <executor-future> make-executor-future executor-future?
          register-executor-methods duplicate-executor-registration? duplicate-executor-rtd)
  (import (except (chezscheme) make-mutex mutex? mutex-name thread? sleep
                  make-parameter parameterize)
          (prefix (only (chezscheme) make-mutex) chez:)
          (only (spindle private core atomic) with-os-mutex)
          (only (spindle) make-semaphore semaphore? semaphore-post semaphore-peek-evt sync
                sync/timeout never-evt current-inexact-monotonic-milliseconds)
          (only (srfi :18) make-thread thread-start!)
          (util concurrent future)
          (util concurrent thread-pool))

  ;; ---------------------------------------------------------------- conditions
  (define-condition-type &rejected-execution-error &error
    make-rejected-execution-error rejected-execution-error?
    (future rejected-future)
    (executor rejected-executor))

  (define-condition-type &duplicate-executor-registration &error
    make-duplicate-executor-registration duplicate-executor-registration?
    (rtd duplicate-executor-rtd))

  ;; ---------------------------------------------------------------- executor futures
  (define (not-started f . opt)
    (assertion-violation 'future-get "Future is not started yet" f))

  (define-record-type (<executor-future> make-executor-future executor-future?)
    (parent <future>)
    (protocol
      (lambda (n)
        (lambda (thunk)
          (unless (procedure? thunk)
            (assertion-violation 'make-executor-future "expected a procedure" thunk))
          ((n thunk not-started)))))
    (nongenerative util-concurrent-executor-future-v1))

  ;; ---------------------------------------------------------------- executors
  (define-record-type (<executor> make-executor executor?)
    (fields (mutable state executor-state executor-state-set!))
    (protocol (lambda (new) (lambda () (new 'running))))
    (nongenerative util-concurrent-executor-v1))

  (define-record-type entry
    (fields future (mutable worker) (mutable state))
    (protocol (lambda (new) (lambda (f) (new f #f 'queued))))
    (nongenerative util-concurrent-executor-entry-v1) (sealed #t))

  (define-record-type (<thread-pool-executor> make-tpe thread-pool-executor?)
    (parent <executor>)
    (fields (immutable pool tpe-pool)
            (immutable lock tpe-lock)
            (mutable entries tpe-entries tpe-entries-set!)   ; oldest first
            (mutable count tpe-count tpe-count-set!)
            (immutable reject-handler tpe-reject-handler)
            (mutable change tpe-change tpe-change-set!))      ; posted when room appears
    (protocol (lambda (n) (lambda (pool handler) ((n) pool (chez:make-mutex) '() 0 handler (make-semaphore 0)))))
    (nongenerative util-concurrent-thread-pool-executor-v1))

  (define-syntax locked
    (syntax-rules ()
      [(_ e body1 body ...) (with-os-mutex (tpe-lock e) body1 body ...)]))

  (define (check-tpe who e)
    (unless (thread-pool-executor? e)
      (assertion-violation who "expected a thread-pool executor" e)))

  (define (check-future who f)
    (unless (future? f) (assertion-violation who "expected a future" f)))

  (define make-thread-pool-executor
    (case-lambda
      [(max-pool-size) (make-thread-pool-executor max-pool-size abort-rejected-handler)]
      [(max-pool-size reject-handler)
       (unless (and (integer? max-pool-size) (exact? max-pool-size) (> max-pool-size 0))
         (assertion-violation 'make-thread-pool-executor "expected an exact positive integer"
                              max-pool-size))
       (unless (procedure? reject-handler)
         (assertion-violation 'make-thread-pool-executor "expected a procedure" reject-handler))
       (make-tpe (make-thread-pool max-pool-size) reject-handler)]))

  (define (thread-pool-executor-pool-size e)
    (check-tpe 'thread-pool-executor-pool-size e)
    (tpe-count e))

  (define (thread-pool-executor-max-pool-size e)
    (check-tpe 'thread-pool-executor-max-pool-size e)
    (thread-pool-size (tpe-pool e)))

  (define (thread-pool-executor-available? e)
    (check-tpe 'thread-pool-executor-available? e)
    (< (tpe-count e) (thread-pool-size (tpe-pool e))))

  ;; ---- with the lock held
  ;; Drops entry from the list (it is in it); -> the change semaphore to post.
  (define (retire-locked! e entry state)
    (entry-state-set! entry state)
    (tpe-entries-set! e (remq entry (tpe-entries e)))
    (tpe-count-set! e (- (tpe-count e) 1))
    (let ([old (tpe-change e)]) (tpe-change-set! e (make-semaphore 0)) old))

  (define (push-locked! e entry)
    (entry-state-set! entry 'queued)
    (entry-worker-set! entry (thread-pool-push-task! (tpe-pool e) (invoker e entry))))

  ;; Accepts f: a new entry, pushed to the pool.
  (define (accept-locked! e f)
    (let ([entry (make-entry f)])
      (future-result-set! f (make-shared-box))
      (future-canceller-set! f (lambda (f) (cancel-entry! e entry)))
      (tpe-entries-set! e (append (tpe-entries e) (list entry)))
      (tpe-count-set! e (+ (tpe-count e) 1))
      (push-locked! e entry)))

  (define (post-change sem) (when sem (semaphore-post sem)))

  (define (park-until-killed) (sync never-evt))

  ;; The task run by a worker for entry.
  (define (invoker e entry)
    (lambda ()
      (let* ([f (entry-future entry)]
             [me (thread-pool-current-thread-id)]
             [go (locked e
                   (case (entry-state entry)
                     [(queued)
                      (if (future-cancelled? f)
                          (retire-locked! e entry 'cancelled)
                          (begin
                            (entry-state-set! entry 'running)
                            ;; where it runs (a copy pushed twice may run elsewhere)
                            (entry-worker-set! entry me)
                            'run))]
                     [(killing) 'park]
                     [else #f]))])
        (cond
          [(eq? go 'run)
           (let-values ([(v raised?) (%run-thunk (future-thunk f))])
             ;; leave the count and deliver in one step, which a kill (by
             ;; shutdown) cannot split; the count first, so a getter that
             ;; wakes sees the room
             (let-values ([(st sem) (locked e
                                      (let ([st (entry-state entry)])
                                        (if (eq? st 'running)
                                            (let ([sem (retire-locked! e entry 'done)])
                                              (%future-finish! f v raised?)
                                              (values st sem))
                                            (values st #f))))])
               (case st
                 [(running) (post-change sem)]
                 [(killing) (park-until-killed)]
                 [else (void)])))]
          [(eq? go 'park) (park-until-killed)]
          [(semaphore? go) (post-change go)]
          [else (void)]))))

  ;; future-cancel's canceller for an accepted future.
  (define (cancel-entry! e entry)
    (post-change
      (locked e
        (and (memq (entry-state entry) '(queued running))
             (retire-locked! e entry 'cancelled)))))

  (define (thread-pool-executor-execute-future! e f)
    (check-tpe 'thread-pool-executor-execute-future! e)
    (check-future 'thread-pool-executor-execute-future! f)
    (if (locked e
          (and (eq? (executor-state e) 'running)
               (< (tpe-count e) (thread-pool-size (tpe-pool e)))
               (begin (accept-locked! e f) #t)))
        e
        ((tpe-reject-handler e) f e)))

  (define (thread-pool-executor-shutdown! e)
    (check-tpe 'thread-pool-executor-shutdown! e)
    (let-values ([(entries sem)
                  (locked e
                    (executor-state-set! e 'shutdown)
                    (let ([es (tpe-entries e)])
                      (for-each (lambda (en)
                                  (entry-state-set! en (if (eq? (entry-state en) 'running)
                                                           'killing
                                                           'cancelled)))
                                es)
                      (tpe-entries-set! e '())
                      (tpe-count-set! e 0)
                      (let ([old (tpe-change e)])
                        (tpe-change-set! e (make-semaphore 0))
                        (values es old))))])
      ;; kill every worker: also those running cancelled tasks, and tasks
      ;; that loop forever
      (thread-pool-release! (tpe-pool e) 'terminate)
      (for-each (lambda (en) (future-cancel (entry-future en))) entries)
      (post-change sem)
      #t))

  ;; ---------------------------------------------------------------- reject handlers
  (define (abort-rejected-handler f e)
    (raise (condition (make-rejected-execution-error f e)
                      (make-who-condition 'executor)
                      (make-message-condition "Failed to add task")
                      (make-irritants-condition (list f e)))))

  (define (push-future-handler f e)
    (check-tpe 'push-future-handler e)
    (check-future 'push-future-handler f)
    (unless (locked e
              (and (eq? (executor-state e) 'running)
                   (begin (accept-locked! e f) #t)))
      (assertion-violation 'push-future-handler "executor is not running" e))
    e)

  (define (terminate-oldest-handler f e)
    (check-tpe 'terminate-oldest-handler e)
    (check-future 'terminate-oldest-handler f)
    (let-values ([(oldest worker sem)
                  (locked e
                    (let ([es (tpe-entries e)])
                      (if (or (null? es) (not (eq? (executor-state e) 'running)))
                          (values #f #f #f)
                          (let* ([oldest (car es)]
                                 [running? (eq? (entry-state oldest) 'running)])
                            ;; a queued oldest is only dropped: its task skips
                            (values oldest
                                    (and running? (entry-worker oldest))
                                    (retire-locked! e oldest (if running? 'killing 'cancelled)))))))])
      (cond
        [oldest
         (when worker
           (thread-pool-thread-terminate! (tpe-pool e) worker)
           ;; the worker's queue went with it: push its queued entries again.
           ;; One pushed to the replacement meanwhile is pushed twice; the
           ;; second copy finds it started (or done) and does nothing.
           (locked e
             (for-each (lambda (en)
                         (when (and (eq? (entry-state en) 'queued) (eqv? (entry-worker en) worker))
                           (push-locked! e en)))
                       (tpe-entries e))))
         (future-cancel (entry-future oldest))
         (post-change sem)
         ;; retry
         (execute-future! e f)]
        [(eq? (executor-state e) 'running) (execute-future! e f)]
        [else (abort-rejected-handler f e)])))

  ;; The event of the next change of e's availability (never, for executors
  ;; of other kinds: their waits are plain timed waits).
  (define (change-evt e)
    (if (thread-pool-executor? e)
        (semaphore-peek-evt (locked e (tpe-change e)))
        never-evt))

  ;; The original sleeps 0.1 s, then checks availability up to n + 1 times
  ;; 0.5 s apart, aborting after the last check.  Here the same checks are
  ;; timed waits on the executor's change event, with an extra check at each
  ;; change: it accepts as soon as there is room, and aborts at the same
  ;; time the original would.  A wake-up whose room another thread took
  ;; first costs nothing.
  (define (wait-finishing-handler n)
    (unless (and (integer? n) (exact? n) (>= n 0))
      (assertion-violation 'wait-finishing-handler "expected an exact non-negative integer" n))
    (lambda (f e)
      (let* ([now current-inexact-monotonic-milliseconds]
             [end (+ (now) 100. (* 500. n))])
        (let loop ([tick (+ (now) 100.)])
          (let ([evt (change-evt e)])            ; taken before the check: no change is missed
            (cond
              [(executor-available? e) (execute-future! e f)]
              [(>= (now) end) (abort-rejected-handler f e)]
              [else
               (sync/timeout (max 0 (/ (- (min tick end) (now)) 1000.)) evt)
               (loop (if (>= (now) tick) (+ tick 500.) tick))]))))))

  ;; ---------------------------------------------------------------- fork-join executor
  (define-record-type (<fork-join-executor> make-fork-join-executor fork-join-executor?)
    (parent <executor>)
    (protocol (lambda (n) (lambda () ((n)))))
    (nongenerative util-concurrent-fork-join-executor-v1))

  (define (check-fje who e)
    (unless (fork-join-executor? e) (assertion-violation who "expected a fork-join executor" e)))

  (define (fork-join-executor-available? e)
    (check-fje 'fork-join-executor-available? e)
    #t)

  (define (fork-join-executor-execute-future! e f)
    (check-fje 'fork-join-executor-execute-future! e)
    (check-future 'fork-join-executor-execute-future! f)
    (unless (shared-box? (future-result f)) (future-result-set! f (make-shared-box)))
    (let ([thunk (future-thunk f)])
      (thread-start!
        (make-thread
          (lambda ()
            (let-values ([(v raised?) (%run-thunk thunk)])
              (%future-finish! f v raised?)))
          'fork-join-executor)))
    f)

  (define (fork-join-executor-shutdown! e)
    (check-fje 'fork-join-executor-shutdown! e)
    (executor-state-set! e 'shutdown)
    #t)

  ;; ---------------------------------------------------------------- dispatch
  ;; Registered types, newest first: #(rtd pred available? execute shutdown).
  (define registry '())
  (define registry-lock (chez:make-mutex))

  (define (%register-executor-methods rtd available? execute shutdown)
    (unless (record-type-descriptor? rtd)
      (assertion-violation 'register-executor-methods "expected a record type descriptor" rtd))
    (for-each (lambda (p)
                (unless (procedure? p)
                  (assertion-violation 'register-executor-methods "expected a procedure" p)))
              (list available? execute shutdown))
    (unless (with-os-mutex registry-lock
              (and (not (exists (lambda (m) (eq? (vector-ref m 0) rtd)) registry))
                   (begin
                     (set! registry
                       (cons (vector rtd (record-predicate rtd) available? execute shutdown)
                             registry))
                     #t)))
      (raise (condition (make-duplicate-executor-registration rtd)
                        (make-who-condition 'register-executor-methods)
                        (make-message-condition "executor type is already registered")
                        (make-irritants-condition (list rtd)))))
    #t)

  ;; A definition: registers the methods of the record type named type.
  (define-syntax register-executor-methods
    (syntax-rules ()
      [(_ type available? execute shutdown)
       (define dummy
         (%register-executor-methods (record-type-descriptor type) available? execute shutdown))]))

  (define (methods who e)
    (unless (executor? e) (assertion-violation who "expected an executor" e))
    (let ([ms (with-os-mutex registry-lock registry)])
      (find (lambda (m) ((vector-ref m 1) e)) ms)))

  (define (not-supported who e) (error who "given executor is not supported" e))

  (define (executor-available? e)
    (let ([m (methods 'executor-available? e)])
      (and m ((vector-ref m 2) e))))

  (define (execute-future! e f)
    (let ([m (methods 'execute-future! e)])
      (if m ((vector-ref m 3) e f) (not-supported 'execute-future! e))))

  (define (shutdown-executor! e)
    (let ([m (methods 'shutdown-executor! e)])
      (if m (begin ((vector-ref m 4) e) #t) (not-supported 'shutdown-executor! e))))

  (define (executor-submit! e thunk)
    (unless (procedure? thunk) (assertion-violation 'executor-submit! "expected a procedure" thunk))
    (let ([f (make-executor-future thunk)])
      (execute-future! e f)
      f))

  (register-executor-methods <thread-pool-executor>
    thread-pool-executor-available? thread-pool-executor-execute-future!
    thread-pool-executor-shutdown!)

  (register-executor-methods <fork-join-executor>
    fork-join-executor-available? fork-join-executor-execute-future!
    fork-join-executor-shutdown!))
