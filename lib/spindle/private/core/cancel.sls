#!chezscheme
;;; Cancel scopes: the one mechanism under task scopes, deadlines
;;; (with-timeout, move-on-after) and shields.
;;;
;;; A thread's gthread-cancel is its innermost cancel scope, or #f outside
;;; every scope (the fast path: one field check).  Scopes link to the scope
;;; that was innermost when they were entered (for a task scope's child
;;; thread: the task scope), so a thread's scopes are a chain up to #f.
;;; Cancellation is level-triggered: a thread is cancelled while some scope
;;; of its chain below the first shield is cancelled or past its deadline;
;;; then every park point raises (see cancel-pending, used by the requests
;;; layer), and it raises again at the next one if the condition is caught.
;;; The condition names the outermost such scope, so each scope catches
;;; only its own and an outer cancellation passes through inner scopes.
;;;
;;; The check must not walk the chain (10^5 nested scopes would make every
;;; preemption check longer than a slice), so each scope caches, for the
;;; part of its chain below the first shield: the scope with the earliest
;;; deadline (dl), and the nearest task scope (task).  Only task scopes are
;;; cancelled explicitly, and a task scope's cancellation is copied down
;;; into the task scopes nested in it (by (spindle scope), which knows
;;; them): so a task scope's cancelled field holds the outermost scope
;;; whose cancellation reaches it, or #f.  depth orders scopes of a chain.
;;;
;;; Nothing here is locked: every field but cancelled and data is fixed,
;;; and cancelled is set under the task scope's lock, read racily (late by
;;; at most one check; the canceller then interrupts the thread).
(library (spindle private core cancel)
  (export make-cancel-scope cancel-scope? cancel-scope-parent cancel-scope-kind
          cancel-scope-deadline cancel-scope-cancelled cancel-scope-cancelled-set!
          cancel-scope-depth (rename (cancel-scope-task* cancel-scope-task))
          cancel-scope-data cancel-scope-data-set!
          cancel-pending cancel-deadline cancel-scope-within?
          &cancelled make-cancelled-condition cancelled-condition? cancelled-condition-scope
          &timeout make-timeout-condition timeout-condition?
          cancel-condition call-catching scope-handler?)
  (import (chezscheme) (only (spindle private core clock) monotonic-ms)
          (only (spindle private host objects) procedure-code-name))

  ;; kind: task, timeout (with-timeout), move-on (move-on-after) or shield.
  ;; deadline: a monotonic-ms flonum, or #f.  data: the task scope of a
  ;; task cancel scope (owned by (spindle scope)).
  (define-record-type cancel-scope
    (fields parent kind deadline depth dl task (mutable cancelled) (mutable data))
    (protocol
      (lambda (new)
        (lambda (parent kind deadline)
          (let ([depth (if parent (fx+ (cancel-scope-depth parent) 1) 0)]
                [outer-dl (and parent (scope-dl parent))]
                [outer-task (and parent (scope-task parent))])
            (if (eq? kind 'shield)
                (new parent kind #f depth #f #f #f #f)
                (new parent kind deadline depth
                     ;; ties go to the outer scope
                     (if (and deadline (or (not outer-dl) (fl< deadline (cancel-scope-deadline outer-dl))))
                         'self
                         outer-dl)
                     (if (eq? kind 'task) 'self outer-task)
                     #f #f))))))
    (nongenerative spindle-cancel-scope-v2) (sealed #t))

  ;; 'self stands for the scope itself in dl and task (a record cannot
  ;; refer to itself as it is made).
  (define (scope-dl cs) (let ([d (cancel-scope-dl cs)]) (if (eq? d 'self) cs d)))
  (define (scope-task cs) (let ([t (cancel-scope-task cs)]) (if (eq? t 'self) cs t)))

  (define-condition-type &cancelled &serious make-cancelled-condition cancelled-condition?
    (scope cancelled-condition-scope))
  (define-condition-type &timeout &cancelled make-timeout-condition timeout-condition?)

  ;; The outermost scope of the chain from cs, below the first shield,
  ;; that is cancelled or expired; #f if none.  O(1) while no deadline has
  ;; passed; the clock is read only if a deadline applies.
  (define (cancel-pending cs)
    (let* ([tk (scope-task cs)]
           [o (and tk (cancel-scope-cancelled tk))]
           [d (scope-dl cs)]
           [d (and d (let ([now (monotonic-ms)]) (and (fl<= (cancel-scope-deadline d) now) (outermost-expired d now))))])
      (if (and o d)
          (if (fx<= (cancel-scope-depth o) (cancel-scope-depth d)) o d)
          (or o d))))

  ;; d, an expired deadline scope, or the outermost expired one outside it
  ;; (below the first shield): the earliest deadline need not be the
  ;; outermost, and two scopes both past their deadline are cancelled by
  ;; the outer one.  Each step goes to the earliest deadline outside, so
  ;; the walk visits only expired scopes.
  (define (outermost-expired d now)
    (let* ([p (cancel-scope-parent d)] [e (and p (scope-dl p))])
      (if (and e (fl<= (cancel-scope-deadline e) now)) (outermost-expired e now) d)))

  ;; The earliest deadline of the chain from cs below the first shield, or
  ;; #f: when a parked thread must wake to be cancelled.
  (define (cancel-deadline cs)
    (let ([d (scope-dl cs)]) (and d (cancel-scope-deadline d))))

  ;; The nearest task scope of cs's chain below the first shield, or #f.
  (define (cancel-scope-task* cs) (scope-task cs))

  ;; #t if outer is cs or one of the scopes cs was entered in.
  (define (cancel-scope-within? cs outer)
    (let loop ([cs cs])
      (and cs (or (eq? cs outer) (loop (cancel-scope-parent cs))))))

  ;; The condition raised in a thread cancelled by scope cs.
  (define (cancel-condition cs)
    (if (eq? (cancel-scope-kind cs) 'timeout)
        (condition (make-timeout-condition cs) (make-message-condition "timed out (with-timeout)"))
        (condition (make-cancelled-condition cs)
                   (make-message-condition
                     (if (cancel-scope-deadline cs) "cancelled: deadline passed" "cancelled")))))

  ;; The handler under move-on-after and task scopes, in place of a guard:
  ;; (call-catching pred thunk on-caught) runs thunk; a raise that
  ;; satisfies pred leaves it, and on-caught is called with the condition
  ;; outside it; any other passes on as if there were no handler here.
  ;; Its callers go on normally after a catch only for their own scope's
  ;; cancellation and raise anything else again (a task scope once its
  ;; children have ended), so it never lets a break end a wait: the
  ;; deadlock watch does not count it among the main thread's handlers
  ;; that may catch a Ctrl-C (scope-handler?, which knows it by its name,
  ;; kept by inlined copies).
  (define (call-catching pred thunk on-caught)
    ((call/cc
       (lambda (k)
         (with-exception-handler
           (let ([spindle-scope-handler
                  (lambda (c) (if (pred c) (k (lambda () (on-caught c))) (raise-continuable c)))])
             spindle-scope-handler)
           (lambda () (call-with-values thunk (lambda vals (lambda () (apply values vals))))))))))

  (define (scope-handler? h)
    (and (procedure? h) (equal? (procedure-code-name h) "spindle-scope-handler")))

  (record-writer (record-type-descriptor cancel-scope)
    (lambda (cs port wr) (display "#<cancel-scope " port) (display (cancel-scope-kind cs) port) (display ">" port))))
