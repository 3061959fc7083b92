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
;;; Nothing here is locked: a scope's parent, kind and deadline never
;;; change, and cancelled? only moves from #f to #t (a racy read is late
;;; by at most one check; the canceller then interrupts the thread).
(library (spindle private core cancel)
  (export make-cancel-scope cancel-scope? cancel-scope-parent cancel-scope-kind
          cancel-scope-deadline cancel-scope-cancelled? cancel-scope-cancelled?-set!
          cancel-scope-data cancel-scope-data-set!
          cancel-pending cancel-deadline cancel-scope-within?
          &cancelled make-cancelled-condition cancelled-condition? cancelled-condition-scope
          &timeout make-timeout-condition timeout-condition?
          cancel-condition)
  (import (chezscheme) (only (spindle private core clock) monotonic-ms))

  ;; kind: task, timeout (with-timeout), move-on (move-on-after) or shield.
  ;; deadline: a monotonic-ms flonum, or #f.  data: the task scope of a
  ;; task cancel scope (owned by (spindle scope)).
  (define-record-type cancel-scope
    (fields parent kind deadline (mutable cancelled?) (mutable data))
    (protocol (lambda (new) (lambda (parent kind deadline) (new parent kind deadline #f #f))))
    (nongenerative spindle-cancel-scope-v1) (sealed #t))

  (define-condition-type &cancelled &serious make-cancelled-condition cancelled-condition?
    (scope cancelled-condition-scope))
  (define-condition-type &timeout &cancelled make-timeout-condition timeout-condition?)

  ;; The outermost scope of the chain from cs, below the first shield,
  ;; that is cancelled or expired; #f if none.  The clock is read only if
  ;; some scope of the chain has a deadline.
  (define (cancel-pending cs)
    (let loop ([cs cs] [now #f] [found #f])
      (if (or (not cs) (eq? (cancel-scope-kind cs) 'shield))
          found
          (let ([dl (cancel-scope-deadline cs)])
            (cond
              [(cancel-scope-cancelled? cs) (loop (cancel-scope-parent cs) now cs)]
              [dl (let ([now (or now (monotonic-ms))])
                    (loop (cancel-scope-parent cs) now (if (fl<= dl now) cs found)))]
              [else (loop (cancel-scope-parent cs) now found)])))))

  ;; The earliest deadline of the chain from cs below the first shield, or
  ;; #f: when a parked thread must wake to be cancelled.
  (define (cancel-deadline cs)
    (let loop ([cs cs] [dl #f])
      (if (or (not cs) (eq? (cancel-scope-kind cs) 'shield))
          dl
          (loop (cancel-scope-parent cs)
                (let ([d (cancel-scope-deadline cs)])
                  (if (and d (or (not dl) (fl< d dl))) d dl))))))

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

  (record-writer (record-type-descriptor cancel-scope)
    (lambda (cs port wr) (display "#<cancel-scope " port) (display (cancel-scope-kind cs) port) (display ">" port))))
