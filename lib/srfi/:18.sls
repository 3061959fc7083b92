#!chezscheme
;;; SRFI-18 (multithreading) on spindle threads.
;;;
;;; SRFI-18 threads are spindle threads made in the pool (srfi-18-thread-pool)
;;; names ('own by default: an OS worker each), kept results, quiet on
;;; failure.  A mutex is a spindle semaphore of one unit plus its SRFI-18
;;; state; a condition variable is a queue of one-shot semaphores, one per
;;; waiter, so a signal is never lost between unlock and wait.
(library (srfi :18)
  (export current-thread thread? make-thread thread-name thread-specific
          thread-specific-set! thread-start! thread-yield! thread-sleep!
          thread-terminate! thread-join!
          mutex? mutex-lock! mutex-unlock!
          (rename (make-mutex* make-mutex) (mutex-name* mutex-name)
                  (mutex-specific* mutex-specific) (mutex-specific-set!* mutex-specific-set!)
                  (mutex-state* mutex-state)
                  (make-condition-variable* make-condition-variable)
                  (condition-variable-name* condition-variable-name)
                  (condition-variable-specific* condition-variable-specific)
                  (condition-variable-specific-set!* condition-variable-specific-set!))
          condition-variable?
          condition-variable-signal! condition-variable-broadcast!
          current-time time? time->seconds seconds->time
          current-exception-handler with-exception-handler raise
          join-timeout-exception? abandoned-mutex-exception?
          terminated-thread-exception? uncaught-exception? uncaught-exception-reason)
  (import (except (chezscheme) make-mutex mutex? mutex-name thread? sleep
                  make-parameter parameterize)
          (prefix (only (chezscheme) make-mutex) chez:)
          (spindle private impl thread) (spindle event)
          (spindle private core queue)
          (only (spindle private core thread-requests) request-kill!)
          (only (spindle private core atomic) with-os-mutex)
          (only (spindle private core wait-targets) wait-target-alias!)
          (only (spindle private core sync) before-take!))

  ;; ---------------------------------------------------------------- conditions
  (define-condition-type &join-timeout &error make-join-timeout join-timeout-exception?)
  (define-condition-type &abandoned-mutex &error make-abandoned-mutex abandoned-mutex-exception?)
  (define-condition-type &terminated-thread &error make-terminated-thread terminated-thread-exception?)
  (define-condition-type &uncaught-exception &error make-uncaught-exception uncaught-exception?
    (reason uncaught-exception-reason))

  (define (raise-srfi-18 make who msg . irritants)
    (raise (condition make (make-who-condition who) (make-message-condition msg)
                      (make-irritants-condition irritants))))

  (define (current-exception-handler) (lambda (c) (raise-continuable c)))

  ;; ---------------------------------------------------------------- time
  ;; A timeout: #f (none), a real (relative seconds), time-utc or
  ;; time-monotonic (absolute), time-duration (relative).  -> seconds or #f.
  (define (timeout->seconds who timeout)
    (cond
      [(not timeout) #f]
      [(real? timeout) (max 0 timeout)]
      [(time? timeout)
       (case (time-type timeout)
         [(time-duration) (max 0 (time->seconds timeout))]
         [(time-utc time-monotonic)
          (max 0 (- (time->seconds timeout) (time->seconds (current-time (time-type timeout)))))]
         [else (assertion-violation who "unsupported time type" timeout)])]
      [else (assertion-violation who "expected #f, a real number or a time object" timeout)]))

  (define (time->seconds t)
    (unless (time? t) (assertion-violation 'time->seconds "expected a time object" t))
    (+ (time-second t) (/ (time-nanosecond t) 1e9)))

  (define (seconds->time x)
    (unless (real? x) (assertion-violation 'seconds->time "expected a real number" x))
    (let* ([s (exact (floor x))] [ns (exact (floor (* (- x s) 1e9)))])
      (make-time 'time-utc ns s)))

  ;; ---------------------------------------------------------------- threads
  (define state-lock (chez:make-mutex))
  (define-syntax locked
    (syntax-rules ()
      [(_ body1 body ...) (with-os-mutex state-lock body1 body ...)]))

  (define unstarted (make-weak-eq-hashtable))   ; threads made but not started

  (define make-thread
    (case-lambda
      [(thunk) (make-thread thunk #f)]
      [(thunk name)
       (let ([t (make-thread* 'make-thread thunk (srfi-18-thread-pool) #t #t
                              (or name (gensym "thread")) #f #f)])
         (locked (hashtable-set! unstarted t #t))
         t)]))

  (define (check-thread who t)
    (unless (thread? t) (assertion-violation who "expected a thread" t)))

  (define (thread-start! t)
    (check-thread 'thread-start! t)
    (unless (locked (and (hashtable-ref unstarted t #f) (begin (hashtable-delete! unstarted t) #t)))
      (assertion-violation 'thread-start! "thread is not new" t))
    (start-thread! t)
    t)

  (define (thread-specific t) (check-thread 'thread-specific t) (thread-data-specific t))
  (define (thread-specific-set! t v) (check-thread 'thread-specific-set! t) (thread-data-specific-set! t v))

  (define (thread-yield!) (yield))

  (define (thread-sleep! timeout)
    (unless timeout (assertion-violation 'thread-sleep! "expected a timeout" timeout))
    (let ([secs (timeout->seconds 'thread-sleep! timeout)])
      (when (> secs 0) (sleep secs))))

  (define (thread-terminate! t)
    (check-thread 'thread-terminate! t)
    (when (locked (and (hashtable-ref unstarted t #f) (begin (hashtable-delete! unstarted t) #t)))
      ;; a kill lands only in a running thread: start this one with the kill
      ;; already requested, so it ends before its thunk runs
      (request-kill! t)
      (start-thread! t))
    (kill-thread t))

  (define absent (list 'absent))

  (define thread-join!
    (case-lambda
      [(t) (thread-join! t #f absent)]
      [(t timeout) (thread-join! t timeout absent)]
      [(t timeout timeout-val)
       (check-thread 'thread-join! t)
       (when (eq? t (current-thread)) (assertion-violation 'thread-join! "a thread cannot join itself" t))
       (let ([secs (timeout->seconds 'thread-join! timeout)])
         (if (if secs (sync/timeout secs (thread-dead-evt t)) (sync (thread-dead-evt t)))
             (case (thread-outcome t)
               [(ok) (apply values (thread-results t))]
               [(killed) (raise-srfi-18 (make-terminated-thread) 'thread-join! "thread was terminated" t)]
               [else (raise (condition (make-uncaught-exception (thread-results t))
                                       (make-who-condition 'thread-join!)
                                       (make-message-condition "thread raised an exception")
                                       (make-irritants-condition (list t))))])
             (if (eq? timeout-val absent)
                 (raise-srfi-18 (make-join-timeout) 'thread-join! "timed out" t)
                 timeout-val)))]))

  ;; ---------------------------------------------------------------- mutexes
  ;; state: an owner thread, not-owned (locked, no owner), abandoned or
  ;; not-abandoned (both unlocked).  unit: holds one unit while unlocked.
  (define-record-type mutex
    (fields name (mutable specific) (mutable state) unit)
    (protocol (lambda (new) (lambda (name) (new name #f 'not-abandoned (make-semaphore 1)))))
    (nongenerative spindle-srfi-18-mutex-v1) (sealed #t))

  (define make-mutex*
    (case-lambda [() (make-mutex (gensym "mutex"))] [(name) (make-mutex name)]))

  (define (check-mutex who m) (unless (mutex? m) (assertion-violation who "expected a mutex" m)))

  ;; Every thread end abandons the mutexes the thread owns.
  (define owned (make-weak-eq-hashtable))          ; thread -> list of mutexes

  (define (abandon-owned! t)
    (for-each (lambda (m)
                (when (locked (and (eq? (mutex-state m) t) (begin (mutex-state-set! m 'abandoned) #t)))
                  (semaphore-post (mutex-unit m))))
              (locked (let ([ms (hashtable-ref owned t '())]) (hashtable-delete! owned t) ms))))

  (define (own! m t)
    (when (locked
            (let ([ms (hashtable-ref owned t #f)])
              (hashtable-set! owned t (cons m (or ms '())))
              (not ms)))
      (thread-add-exit-hook! t (lambda () (abandon-owned! t)))))

  (define mutex-lock!
    (case-lambda
      [(m) (mutex-lock! m #f (current-thread))]
      [(m timeout) (mutex-lock! m timeout (current-thread))]
      [(m timeout owner)
       (check-mutex 'mutex-lock! m)
       (unless (or (not owner) (thread? owner))
         (assertion-violation 'mutex-lock! "expected a thread or #f" owner))
       (let* ([secs (timeout->seconds 'mutex-lock! timeout)]
              [deadline (and secs (+ (current-inexact-monotonic-milliseconds) (* 1000. secs)))])
         ;; Taking the unit and recording the new state is one step that a
         ;; kill cannot split (interrupts disabled; nothing in it blocks):
         ;; a thread killed between a sync that took the unit and the state
         ;; update would leave the mutex locked for good.  So wait on a peek
         ;; (which takes nothing) and claim with a try-wait.  Inside a
         ;; cancel scope, before-take! keeps a preemption from cancelling
         ;; between the claim and the caller's dynamic-wind that unlocks.
         (let loop ()
           (before-take! #t)
           (let ([was (with-interrupts-disabled
                        (and (semaphore-try-wait? (mutex-unit m))
                             (let ([was (mutex-state m)])
                               (cond
                                 [(not owner) (mutex-state-set! m 'not-owned)]
                                 [(thread-dead? owner)
                                  (mutex-state-set! m 'abandoned)
                                  (semaphore-post (mutex-unit m))]
                                 [else (mutex-state-set! m owner) (own! m owner)])
                               (list was))))])
             (cond
               [was
                (when (eq? (car was) 'abandoned)
                  (raise-srfi-18 (make-abandoned-mutex) 'mutex-lock! "mutex was abandoned" m))
                #t]
               [(begin
                  ;; the dump and the deadlock report name the mutex and its owner
                  (wait-target-alias! (mutex-unit m) 'mutex m mutex-owner)
                  (if deadline
                    (let ([left (- deadline (current-inexact-monotonic-milliseconds))])
                      (and (> left 0)
                           (sync/timeout (/ left 1000.) (semaphore-peek-evt (mutex-unit m)))))
                    (sync (semaphore-peek-evt (mutex-unit m)))))
                (loop)]
               [else #f]))))]))

  (define (mutex-owner m) (let ([s (mutex-state m)]) (and (thread? s) s)))

  (define mutex-writer
    (record-writer (record-type-descriptor mutex)
      (lambda (m port wr) (display "#<mutex " port) (display (mutex-name m) port) (display ">" port))))

  ;; Interrupts disabled throughout: a kill between the state change and the
  ;; post would leave the mutex unlocked in name but without its unit.
  (define (release! m)
    (with-interrupts-disabled
      (let ([was (locked (let ([s (mutex-state m)]) (mutex-state-set! m 'not-abandoned) s))])
        (when (thread? was)
          (locked (hashtable-update! owned was (lambda (ms) (remq m ms)) '())))
        ;; unlocking an unlocked mutex leaves it as it was: one unit at most
        (unless (memq was '(not-abandoned abandoned))
          (semaphore-post (mutex-unit m))))))

  (define mutex-unlock!
    (case-lambda
      [(m) (check-mutex 'mutex-unlock! m) (release! m) #t]
      [(m cv) (mutex-unlock! m cv #f)]
      [(m cv timeout)
       (check-mutex 'mutex-unlock! m)
       (unless (condition-variable? cv)
         (assertion-violation 'mutex-unlock! "expected a condition variable" cv))
       (let ([secs (timeout->seconds 'mutex-unlock! timeout)]
             [me (make-semaphore 0)])
         ;; join the waiters before unlocking, so no signal falls between
         (let ([node (locked (queue-push! (condition-variable-waiters cv) me))])
           ;; A waiter that stops waiting leaves the queue; if a signal took
           ;; it off meanwhile, that signal was its own: a timeout returns
           ;; #t, and a raise (a break, a cancelled scope) passes it on.
           (define (signalled-anyway?)
             (locked (or (queue-node-unlinked? node)
                         (begin (queue-remove! (condition-variable-waiters cv) node) #f))))
           (wait-target-alias! me 'condition-variable cv (lambda (cv) #f))
           (release! m)
           (or (and (guard (c [#t (when (signalled-anyway?) (condition-variable-signal! cv)) (raise c)])
                      (if secs (sync/timeout secs me) (sync me)))
                    #t)
               (signalled-anyway?))))]))

  (define (mutex-name* m) (check-mutex 'mutex-name m) (mutex-name m))
  (define (mutex-specific* m) (check-mutex 'mutex-specific m) (mutex-specific m))
  (define (mutex-specific-set!* m v) (check-mutex 'mutex-specific-set! m) (mutex-specific-set! m v))
  (define (mutex-state* m) (check-mutex 'mutex-state m) (mutex-state m))

  ;; ---------------------------------------------------------------- condition variables
  (define-record-type condition-variable
    (fields name (mutable specific) waiters)
    (protocol (lambda (new) (lambda (name) (new name #f (make-queue)))))
    (nongenerative spindle-srfi-18-condition-variable-v1) (sealed #t))

  (define condition-variable-writer
    (record-writer (record-type-descriptor condition-variable)
      (lambda (cv port wr) (display "#<condition-variable " port) (display (condition-variable-name cv) port) (display ">" port))))

  (define make-condition-variable*
    (case-lambda
      [() (make-condition-variable (gensym "condition-variable"))]
      [(name) (make-condition-variable name)]))

  (define (check-cv who cv)
    (unless (condition-variable? cv) (assertion-violation who "expected a condition variable" cv)))

  (define (condition-variable-name* cv) (check-cv 'condition-variable-name cv) (condition-variable-name cv))
  (define (condition-variable-specific* cv)
    (check-cv 'condition-variable-specific cv)
    (condition-variable-specific cv))
  (define (condition-variable-specific-set!* cv v)
    (check-cv 'condition-variable-specific-set! cv)
    (condition-variable-specific-set! cv v))

  (define (condition-variable-signal! cv)
    (check-cv 'condition-variable-signal! cv)
    (let ([w (locked (queue-pop! (condition-variable-waiters cv) #f))])
      (when w (semaphore-post w))))

  (define (condition-variable-broadcast! cv)
    (check-cv 'condition-variable-broadcast! cv)
    (for-each semaphore-post
              (locked (let ([ws (queue->list (condition-variable-waiters cv))])
                        (queue-clear! (condition-variable-waiters cv))
                        ws)))))
