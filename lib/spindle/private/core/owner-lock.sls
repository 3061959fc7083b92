#!chezscheme
;;; Owner locks: a lock held by a green thread, whose waiters park, and
;;; which a dead owner (a thread killed while it held the lock, parked in a
;;; read say) gives to the next waiter.  Nothing polls: the waiter at the
;;; head of the queue syncs on the lock and on the owner's death at once.
;;;
;;; - Taking: a CAS of owner from #f (or from a dead thread) to the taker.
;;;   A waiter takes it inside its evt's attempt (claim, CAS, finish), so a
;;;   thread that wakes holding the lock got it atomically with the wake:
;;;   if it is killed before it runs, the lock has a dead owner, which the
;;;   rule below frees; a wake-up is never lost to a kill.
;;; - Releasing, while threads wait: the lock is handed to the first waiter
;;;   that can still commit (owner set to its thread, then committed), and
;;;   the next waiter is woken to "re-watch": it syncs again on the new
;;;   owner's death, at the front of the queue.  So the head waiter always
;;;   watches the death of the current owner (the invariant); the others
;;;   only wait for their turn.  A waiter that leaves the queue (timeout,
;;;   break, kill) re-watches the new head for the same reason.
;;; - A waiter's evt records the owner whose death it watches; its attempt
;;;   registers only if that is still the owner (under the spin lock), else
;;;   it commits at once and the waiter looks again.
;;; - waiting counts the queued waiters, raised by a CAS (a full barrier)
;;;   before the owner is read: a release that reads 0 after its CAS of
;;;   owner cannot miss a waiter that read the old owner (Dekker), and the
;;;   uncontended lock and unlock are one CAS each, with no spin lock.
;;;
;;; Not re-entrant; callers that need it compare (owner-lock-owner l) with
;;; the current thread first.
(library (spindle private core owner-lock)
  (export make-owner-lock owner-lock? owner-lock-owner owner-lock-acquire! owner-lock-acquire-as!
          owner-lock-try-acquire! owner-lock-release-as!
          owner-lock-release! owner-lock-await-free! set-owner-death-evt!)
  (import (chezscheme) (spindle private core queue) (spindle private core scheduler) (spindle private core atomic)
          (spindle private core evt-core) (only (spindle private core sync) sync choice-evt))

  (define-record-type owner-lock
    (fields holder         ; box: #f or the holding green thread
            spin           ; spin-lock box over waiters (held with interrupts disabled)
            waiters        ; queue of waiters (syncer, branch, the waiter's evt)
            waiting)       ; box: the length of waiters, changed by CAS under spin
    (protocol (lambda (new) (lambda () (new (box #f) (box #f) (make-queue) (box 0)))))
    (nongenerative spindle-owner-lock-v1) (sealed #t))

  ;; One wait of one thread: watched is the owner whose death it also
  ;; syncs on; front? puts it at the head (a re-watch keeps its turn);
  ;; node: its place in waiters (under spin; it may be queued again).
  (define-record-type turn
    (parent prim-evt)
    (fields lock watched front? (mutable node))
    (protocol (lambda (new) (lambda (l watched front?) ((new turn-attempt turn-cancel) l watched front? #f))))
    (nongenerative spindle-owner-lock-turn-v1) (sealed #t))

  ;; (death-evt t): an evt ready once green thread t has died, or #f where
  ;; threads cannot die holding a lock (set by (spindle thread)).
  (define death-evt (lambda (t) #f))
  (define (set-owner-death-evt! p) (set! death-evt p))

  ;; The lock and unlock of an uncontended lock are one CAS each: the fast
  ;; paths are macros, so that no call into this library is made for them.
  (define-syntax owner-lock-owner
    (syntax-rules () [(_ l) (unbox (owner-lock-holder l))]))

  (define (add-waiting! l n)
    (let ([b (owner-lock-waiting l)])
      (let loop () (let ([v (unbox b)]) (unless (box-cas! b v (fx+ v n)) (loop))))))

  ;; Interrupts disabled: takes the lock for s if it is free or its owner
  ;; dead, committing s.  #t if done.
  (define (try-take! l s branch)
    (let ([b (owner-lock-holder l)])
      (let loop ()
        (let ([o (unbox b)])
          (and (or (not o) (gthread-dead? o))
               (claim! s)
               (if (box-cas! b o (syncer-thread s))
                   (begin (finish! s branch '(taken)) #t)
                   (begin (unclaim! s) (loop))))))))

  (define (turn-attempt tn s branch register?)
    (let ([l (turn-lock tn)])
      (or (try-take! l s branch)
          (and register?
               (begin
                 (spin-lock! (owner-lock-spin l))
                 (add-waiting! l 1)
                 (cond
                   [(try-take! l s branch)
                    (add-waiting! l -1) (spin-unlock! (owner-lock-spin l)) #t]
                   [(not (eq? (unbox (owner-lock-holder l)) (turn-watched tn)))
                    ;; the owner changed since the waiter looked: look again
                    (add-waiting! l -1) (spin-unlock! (owner-lock-spin l))
                    (commit-one! s branch '(look-again))]
                   [else
                    (let ([node ((if (turn-front? tn) queue-push-front! queue-push!)
                                 (owner-lock-waiters l) (make-waiter s branch tn))])
                      (turn-node-set! tn node)
                      (spin-unlock! (owner-lock-spin l))
                      node)]))))))

  ;; Under spin: wakes the next waiter that can still commit; its thread,
  ;; or #f if none could.  take?: it gets the lock, which must be free; a
  ;; thread that takes the lock meanwhile (a CAS from #f, without the spin
  ;; lock) keeps it, and its release hands it on.
  (define (wake-next! l take?)
    (let ([q (owner-lock-waiters l)] [b (owner-lock-holder l)])
      (let loop ()
        (let ([w (queue-pop! q #f)])
          (and w
               (let* ([s (waiter-syncer w)] [t (syncer-thread s)])
                 (add-waiting! l -1)
                 (cond
                   [(and take? (not (box-cas! b #f t)))
                    (let ([tn (waiter-value w)])
                      (turn-node-set! tn (queue-push-front! q w)))
                    (add-waiting! l 1)
                    #f]
                   [(commit-partner! s (waiter-branch w) (if take? '(taken) '(re-watch))) t]
                   [(not take?) (loop)]
                   [(box-cas! b t #f) (loop)]
                   [else #f])))))))

  (define (turn-cancel tn _)
    (let ([l (turn-lock tn)] [node (turn-node tn)])
      (spin-lock! (owner-lock-spin l))
      (unless (queue-node-unlinked? node)
        (queue-remove! (owner-lock-waiters l) node)
        (add-waiting! l -1)
        ;; it may have been the head: the new head watches the owner
        (wake-next! l #f))
      (spin-unlock! (owner-lock-spin l))))

  ;; The same for me, the current thread (a caller that has it already);
  ;; at once if me holds l.
  (define-syntax owner-lock-acquire-as!
    (syntax-rules ()
      [(_ l-expr me-expr)
       (let ([l l-expr] [me me-expr])
         (unless (box-cas! (owner-lock-holder l) #f me) (acquire-slow! l me)))]))

  ;; Takes l for the current thread, parking while another holds it.
  (define (owner-lock-acquire! l) (owner-lock-acquire-as! l (current-gthread)))

  (define (acquire-slow! l me)
    (let ([b (owner-lock-holder l)])
      (let loop ([front? #f])
        (let ([o (unbox b)])
          (unless (eq? o me)
            (let* ([d (and o (not (gthread-dead? o)) (death-evt o))]
                   [tn (make-turn l o front?)])
              (loop (eq? 're-watch (sync (if d (choice-evt tn d) tn))))))))))

  ;; #t if l was free (or its owner dead) and is now the current thread's.
  (define (owner-lock-try-acquire! l)
    (let ([b (owner-lock-holder l)] [me (current-gthread)])
      (or (box-cas! b #f me)
          (let ([o (unbox b)])
            (and o (gthread-dead? o) (box-cas! b o me))))))

  ;; Gives l up (the current thread holds it); hands it to a waiter.
  (define (owner-lock-release! l)
    (let ([b (owner-lock-holder l)])
      (let loop () (let ([o (unbox b)]) (unless (box-cas! b o #f) (loop))))
      (hand-on! l)))

  ;; Gives l up if me holds it.
  (define-syntax owner-lock-release-as!
    (syntax-rules ()
      [(_ l-expr me-expr)
       (let ([l l-expr])
         (when (and (box-cas! (owner-lock-holder l) me-expr #f) (fx> (unbox (owner-lock-waiting l)) 0))
           (hand-on! l)))]))

  ;; After the CAS that freed l (the read of waiting must not pass it: a
  ;; CAS, not set-box!).
  (define (hand-on! l)
    (when (fx> (unbox (owner-lock-waiting l)) 0)
      (with-spin-lock (owner-lock-spin l)
        ;; a thread may have taken it meanwhile: then its release hands it on
        (when (and (not (unbox (owner-lock-holder l))) (wake-next! l #t))
          (unless (queue-empty? (owner-lock-waiters l))
            (let ([w (queue-pop! (owner-lock-waiters l) #f)])
              (add-waiting! l -1)
              ;; it syncs again, in front, on the new owner's death
              (commit-partner! (waiter-syncer w) (waiter-branch w) '(re-watch))))))))

  ;; Parks until l is free or the current thread's, without keeping it.
  (define (owner-lock-await-free! l)
    (let ([o (owner-lock-owner l)])
      (unless (or (not o) (eq? o (current-gthread)))
        (owner-lock-acquire! l)
        (owner-lock-release! l)))))
