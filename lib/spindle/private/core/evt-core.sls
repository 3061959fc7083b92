#!chezscheme
;;; The commit protocol shared by every primitive event.
;;;
;;; Each sync makes one syncer: a status cell that moves from waiting (0) to
;;; done (2) exactly once, by CAS.  A rendezvous between two syncs must move
;;; both at once, so it first claims both (0 -> 1, lower id first, spinning
;;; while the other is claimed) and then marks both done; a claim is only
;;; ever held for a few instructions, with interrupts disabled, and never
;;; while waiting for a lock, so the id order rules out deadlock.
;;;
;;; A primitive event is a record whose attempt procedure, called with
;;; interrupts disabled, either commits the syncer now (#t), finds nothing
;;; (#f), or, when asked to register, leaves a waiter and returns a token
;;; that its cancel procedure takes back.
(library (spindle private core evt-core)
  (export
    make-syncer syncer-thread syncer-branch syncer-result syncer-done? syncer-on-commit-set! wait-in-syncer!
    claim! unclaim! finish! commit-one! claim-pair! commit-partner! wake-partner!
    make-waiter waiter-syncer waiter-branch waiter-value remove-waiter!
    prim-evt make-prim-evt prim-evt? prim-evt-attempt prim-evt-cancel
    latch make-latch latch? latch-fire! make-owned-latch owned-latch-owner-set! record-prints-as!
    evt-trace-reason! evt-trace-reason evt-wait-description)
  (import (chezscheme) (spindle private core queue) (spindle private core scheduler) (spindle private core atomic)
          (only (spindle private core thread-requests) set-interrupt-hook!)
          (only (spindle private core gthread) gthread-interrupt-pending?))

  ;; on-commit: #f, or a procedure of the committed branch that a partner
  ;; calls once it has committed the syncer, with no claim held (the sync
  ;; layer fires the NACKs of the other branches there, so they are ready
  ;; when the rendezvous commits, not when the syncing thread next runs).
  (define-record-type syncer
    (fields status id thread (mutable branch) (mutable result) (mutable on-commit))
    (protocol
      (lambda (new)
        (lambda (thread) (new (box 0) (fresh-id) thread #f '() #f))))
    (nongenerative spindle-syncer-v1) (sealed #t))

  (define id-counter (box 0))
  (define (fresh-id)
    (let loop ()
      (let ([n (unbox id-counter)])
        (if (box-cas! id-counter n (fx+ n 1)) n (loop)))))

  (define (syncer-done? s) (eqv? (unbox (syncer-status s)) 2))

  ;; waiting -> claimed; #f if done.  Spins while another holds a claim.
  (define (claim! s)
    (let ([b (syncer-status s)])
      (let loop ()
        (cond
          [(box-cas! b 0 1) #t]
          [(eqv? (unbox b) 2) #f]
          [else (loop)]))))

  (define (unclaim! s) (set-box! (syncer-status s) 0))

  ;; claimed -> done, with the committed branch and its result list.
  (define (finish! s branch result)
    (syncer-branch-set! s branch)
    (syncer-result-set! s result)
    (set-box! (syncer-status s) 2))

  (define (commit-one! s branch result)
    (and (claim! s) (begin (finish! s branch result) #t)))

  ;; Claims both; returns #t, or the syncer that was already done
  ;; (having released the other).
  (define (claim-pair! a b)
    (let-values ([(x y) (if (fx< (syncer-id a) (syncer-id b)) (values a b) (values b a))])
      (if (claim! x)
          (if (claim! y) #t (begin (unclaim! x) y))
          x)))

  ;; Commits another thread's syncer and wakes it.  #f if it was done.
  (define (commit-partner! s branch result)
    (assert-atomic 'commit-partner!)
    (and (commit-one! s branch result)
         (begin (wake-partner! s) #t)))

  ;; After a partner finished s (every claim it made released): runs s's
  ;; on-commit and wakes its thread.  Interrupts disabled; the partner may
  ;; hold its evt's spin lock, so on-commit takes only latch locks.
  (define (wake-partner! s)
    (let ([h (syncer-on-commit s)]) (when h (h (syncer-branch s))))
    (let ([t (syncer-thread s)]) (when t (unpark! t))))

  ;; What a primitive evt queues for a registered sync: the syncer, the
  ;; branch index and a value of the evt's.  The common case (branch 0, no
  ;; value: a sync on one evt) is the syncer itself, one object fewer per
  ;; parked thread.
  (define-record-type (full-waiter make-full-waiter full-waiter?)
    (fields syncer branch value)
    (nongenerative spindle-waiter-v1) (sealed #t))

  (define (make-waiter s branch value)
    (if (and (eqv? branch 0) (not value)) s (make-full-waiter s branch value)))
  (define (waiter-syncer w) (if (syncer? w) w (full-waiter-syncer w)))
  (define (waiter-branch w) (if (syncer? w) 0 (full-waiter-branch w)))
  (define (waiter-value w) (if (syncer? w) #f (full-waiter-value w)))

  ;; The usual cancel: drops a waiter's node from its queue under the
  ;; queue's spin lock (with interrupts disabled).
  (define (remove-waiter! lock waiters node)
    (spin-lock! lock)
    (queue-remove! waiters node)
    (spin-unlock! lock))

  ;; What a thread parked on an evt of a record type waits on, for the
  ;; trace (channel, semaphore, sleep, io, wait, ...): each library names
  ;; its own evt types' reason, so sync names no other library's types.
  ;; describe (optional), for dump-threads: evt -> a list of what the
  ;; evt waits on (the channel and 'get, 'fd 7 'read, ...); it runs in the
  ;; dumping thread while others run, so it reads fields, never locks.
  ;; An alist (rtd reason . describe) replaced whole under the lock, read
  ;; without it.
  (define trace-reasons '())
  (define trace-reasons-lock (make-mutex))
  (define evt-trace-reason!
    (case-lambda
      [(rtd reason) (evt-trace-reason! rtd reason #f)]
      [(rtd reason describe)
       (with-os-mutex trace-reasons-lock
         (set! trace-reasons (cons (cons* rtd reason describe) trace-reasons)))]))
  (define (evt-trace-reason rtd)
    (let ([r (assq rtd trace-reasons)]) (and r (cadr r))))

  ;; (reason what ...) for a primitive evt a thread waits on: reason is
  ;; its trace reason ('sync if none), what its describer's list (the
  ;; evt itself if none).
  (define (evt-wait-description e)
    (let ([r (assq (record-rtd e) trace-reasons)])
      (cons (if r (cadr r) 'sync)
            (if (and r (cddr r)) ((cddr r) e) (list e)))))

  (define-record-type prim-evt
    (fields attempt cancel)
    (nongenerative spindle-prim-evt-v1))

  ;; Records print as #<name> rather than with their internals (queues,
  ;; locks, cyclic waiter graphs).  A subtype without its own writer prints
  ;; as its parent does.
  (define (record-prints-as! rtd name)
    (let ([text (string-append "#<" name ">")])
      (record-writer rtd (lambda (r port wr) (display text port)))))

  ;; A one-shot latch: never ready until fired, then ready forever with
  ;; result (value).  Used for thread death, NACKs and suspend/resume evts.
  (define-record-type latch
    (parent prim-evt)
    (fields lock waiters (mutable fired?) value)
    (protocol
      (lambda (new)
        (lambda (value)
          ((new latch-attempt latch-cancel) (box #f) (make-queue) #f value))))
    (nongenerative spindle-latch-v1))

  ;; lock: a spin-lock box (see atomic.sls), held with interrupts
  ;; disabled for a few instructions: a Chez mutex per latch (one per thread,
  ;; for its death) cost 64 bytes and ~30 ns per use.
  (define (latch-attempt l s branch register?)
    (assert-atomic 'latch-attempt)
    (with-spin-lock (latch-lock l)
      (cond
        [(latch-fired? l)
         (commit-one! s branch (list ((latch-value l) l)))]
        [register? (queue-push! (latch-waiters l) (make-waiter s branch #f))]
        [else #f])))

  (define (latch-cancel l node)
    (assert-atomic 'latch-cancel)
    (remove-waiter! (latch-lock l) (latch-waiters l) node))

  ;; A latch that says what it stands for (a thread's death, a future's
  ;; results, a place's end): dump-threads names the owner.
  (define-record-type owned-latch
    (parent latch)
    (fields (mutable owner))
    (protocol (lambda (pargs->new) (lambda (value owner) ((pargs->new value) owner))))
    (nongenerative spindle-owned-latch-v1) (sealed #t))

  (define (latch-fire! l)
    (with-interrupts-disabled
      (spin-lock! (latch-lock l))
      (unless (latch-fired? l)
        (latch-fired?-set! l #t)
        (let ([q (latch-waiters l)])
          (let loop ()
            (let ([w (queue-pop! q #f)])
              (when w
                (commit-partner! (waiter-syncer w) (waiter-branch w)
                                 (list ((latch-value l) l)))
                (loop))))))
      (spin-unlock! (latch-lock l))))

  ;; Makes s the syncer t syncs with, before its first attempt, and
  ;; commits it as interrupted if t has a kill, suspend or break to act on
  ;; (a cancellation waits for a checkpoint: see sync.sls).  A requester
  ;; (thread-requests.sls) stores its request, then reads t's syncer; t stores
  ;; its syncer, then reads its requests.  x86 lets a load pass an earlier
  ;; store, so without the CAS between on each side both could miss: t
  ;; would register and a partner commit it, though the request (a
  ;; suspend, a break) came first.  Interrupts disabled.
  (define (wait-in-syncer! t s)
    (gthread-syncer-set! t s)
    (box-cas! (syncer-status s) 0 0)        ; a full fence, on a box of t's alone
    (when (gthread-interrupt-pending? t) (commit-one! s 'interrupted '())))

  ;; How the scheduler interrupts a parked thread for kill, break, suspend:
  ;; abort the sync it waits in (if any) and wake it.
  ;; The wake-up is unconditional: a thread parked outside any sync (while
  ;; suspended) must see the request too.
  (define (interrupt-thread! t)
    (let ([s (gthread-syncer t)])
      (when s (commit-one! s 'interrupted '()))
      (unpark! t)))

  (set-interrupt-hook! interrupt-thread!)

  (record-prints-as! (record-type-descriptor prim-evt) "evt")
  (evt-trace-reason! (record-type-descriptor latch) 'wait)
  (evt-trace-reason! (record-type-descriptor owned-latch) 'wait
    (lambda (l) (list (owned-latch-owner l))))
  (record-prints-as! (record-type-descriptor syncer) "syncer")
  (record-prints-as! (record-type-descriptor full-waiter) "waiter"))
