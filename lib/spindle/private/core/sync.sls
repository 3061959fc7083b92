#!chezscheme
;;; Over 450 lines: sync's branch walk, its parking and the combinators are one protocol over evt-core's commit.
;;; sync and the event combinators.
;;;
;;; sync flattens its events into branches: a primitive event plus the
;;; context it sits in (wraps, NACK latches, replace procedures, innermost
;;; first).  It polls every branch once from a random start (fairness), then
;;; registers on all of them and parks; exactly one commits (evt-core).
(library (spindle private core sync)
  (export
    evt? sync sync/timeout sync/enable-break sync/timeout/enable-break
    choice-evt wrap-evt handle-evt handle-evt? guard-evt nack-guard-evt
    poll-guard-evt replace-evt always-evt never-evt alarm-evt system-idle-evt
    current-inexact-milliseconds current-inexact-monotonic-milliseconds
    register-evt-record-type! register-evt-kind!
    sync-prim thread-wait-descriptions before-take! seed-choice-random!)
  (import (chezscheme) (spindle private core queue) (spindle private core scheduler) (spindle private core atomic)
          (only (spindle private core thread-requests) check-requests! check-cancel!)
          (only (spindle private core gthread) gthread-requests-pending? gthread-cancel gthread-break-enabled?
                gthread-parked-at-set!)
          (only (spindle private core cancel) cancel-deadline)
          (spindle private core alarm) (only (spindle private core clock) monotonic-ms coarse-ms)
          (spindle private core evt-core) (only (spindle private diagnostics trace) tracing? trace-park-reason!))

  ;; ---------------------------------------------------------------- types
  (define-record-type choice (fields evts) (nongenerative spindle-choice-evt-v1) (sealed #t))
  (define-record-type wrapper (fields inner proc handle?) (nongenerative spindle-wrap-evt-v1) (sealed #t))
  (define-record-type guarded (fields proc kind) (nongenerative spindle-guard-evt-v1) (sealed #t))
  (define-record-type replacer (fields inner proc) (nongenerative spindle-replace-evt-v1) (sealed #t))

  (define (check-evt who e)
    (unless (evt? e) (assertion-violation who "expected an evt" e)))

  (define (check-proc who p)
    (unless (procedure? p) (assertion-violation who "expected a procedure" p)))

  (define (choice-evt . evts)
    (for-each (lambda (e) (check-evt 'choice-evt e)) evts)
    (make-choice evts))

  (define (wrap-evt e proc)
    (check-evt 'wrap-evt e) (check-proc 'wrap-evt proc)
    (make-wrapper e proc #f))

  (define (handle-evt e proc)
    (check-evt 'handle-evt e) (check-proc 'handle-evt proc)
    (make-wrapper e proc #t))

  (define (handle-evt? v)
    (or (and (wrapper? v) (wrapper-handle? v))
        (and (choice? v) (exists handle-evt? (choice-evts v)))))

  ;; A guard's procedure is checked when the evt is made, as Racket does,
  ;; not when some later sync calls it.
  (define (check-arity who p n)
    (unless (and (procedure? p) (logbit? n (procedure-arity-mask p)))
      (assertion-violation who
        (if (fx= n 0) "expected a procedure of no arguments" "expected a procedure of one argument")
        p)))

  (define (guard-evt thunk) (check-arity 'guard-evt thunk 0) (make-guarded thunk 'plain))
  (define (nack-guard-evt proc) (check-arity 'nack-guard-evt proc 1) (make-guarded proc 'nack))
  (define (poll-guard-evt proc) (check-arity 'poll-guard-evt proc 1) (make-guarded proc 'poll))

  (define (replace-evt e proc)
    (check-evt 'replace-evt e) (check-proc 'replace-evt proc)
    (make-replacer e proc))

  ;; always-evt: ready at once, result itself.  never-evt: never ready.
  (define always-evt
    (letrec ([e (make-prim-evt
                  (lambda (self s branch register?)
                    (assert-atomic 'always-evt-attempt)
                    (commit-one! s branch (list e)))
                  (lambda (self token) (assert-atomic 'always-evt-cancel)))])
      e))

  (define never-evt
    (make-prim-evt (lambda (self s branch register?)
                     (assert-atomic 'never-evt-attempt)
                     (if register? 'never #f))
                   (lambda (self token) (assert-atomic 'never-evt-cancel))))

  ;; ---------------------------------------------------------------- extension
  ;; Values of a kind that is not a record type of its own are evts through
  ;; a procedure their layer registers: (register-evt-kind! pred evt-of)
  ;; makes every v with (pred v) the evt (evt-of v).  Threads (the thread
  ;; layer: their death) and ports (the I/O layer: ready when a read or
  ;; write would not block) are such kinds.  An alist replaced whole under
  ;; registry-lock, read without it.
  (define evt-kinds '())
  (define (register-evt-kind! pred evt-of)
    (unless (procedure? pred) (assertion-violation 'register-evt-kind! "expected a procedure" pred))
    (unless (procedure? evt-of) (assertion-violation 'register-evt-kind! "expected a procedure" evt-of))
    (with-os-mutex registry-lock (set! evt-kinds (cons (cons pred evt-of) evt-kinds))))
  (define (kind-evt-of v)
    (let loop ([ks evt-kinds])
      (cond [(null? ks) #f] [((caar ks) v) (cdar ks)] [else (loop (cdr ks))])))

  (define registered-types '())   ; alist rtd -> spec, guarded by registry-lock
  (define registry-lock (make-mutex))

  (define (register-evt-record-type! rtd spec)
    (unless (record-type-descriptor? rtd)
      (assertion-violation 'register-evt-record-type! "expected a record-type descriptor" rtd))
    (unless (or (evt? spec) (procedure? spec)
                (and (fixnum? spec) (fx>= spec 0)
                     (fx< spec (vector-length (record-type-field-names rtd)))))
      (assertion-violation 'register-evt-record-type! "expected an evt, a procedure or a field index" spec))
    (when (and (fixnum? spec) (record-field-mutable? rtd spec))
      (assertion-violation 'register-evt-record-type! "field must be immutable" rtd spec))
    (unless (with-os-mutex registry-lock
              (and (not (assq rtd registered-types))
                   (begin (set! registered-types (cons (cons rtd spec) registered-types)) #t)))
      (assertion-violation 'register-evt-record-type! "record type already registered" rtd)))

  (define (registered-spec v)
    (and (record? v)
         (let loop ([rtd (record-rtd v)])
           (and rtd
                (let ([p (assq rtd registered-types)])
                  (if p
                      (let ([spec (cdr p)])
                        (if (fixnum? spec) ((record-accessor rtd spec) v) spec))
                      (loop (record-type-parent rtd))))))))

  (define (evt? v)
    (or (prim-evt? v) (choice? v) (wrapper? v) (guarded? v) (replacer? v)
        (and (kind-evt-of v) #t)
        (and (pair? registered-types) (registered-spec v) #t)))

  ;; ---------------------------------------------------------------- flatten
  ;; A branch: primitive evt + context (list of frames, innermost first).
  ;; Frames: (wrap proc . handle?), (nack . latch), (replace . replace-evt).
  (define-record-type branch (fields prim context) (nongenerative spindle-branch-v1) (sealed #t))

  ;; Returns the list of branches of e (in order); nacks made are pushed
  ;; onto the box nacks.
  (define (flatten e context poll? nacks acc)
    (cond
      [(prim-evt? e) (cons (make-branch e context) acc)]
      [(choice? e)
       (fold-right (lambda (x acc) (flatten x context poll? nacks acc)) acc (choice-evts e))]
      [(wrapper? e)
       (flatten (wrapper-inner e) (cons (cons* 'wrap (wrapper-proc e) (wrapper-handle? e)) context) poll? nacks acc)]
      [(guarded? e)
       (case (guarded-kind e)
         [(plain) (flatten (guard-result e (call-guard (guarded-proc e))) context poll? nacks acc)]
         [(poll) (flatten (guard-result e (call-guard (guarded-proc e) poll?)) context poll? nacks acc)]
         [else
          (let ([l (make-latch (lambda (l) (void)))])
            (set-box! nacks (cons l (unbox nacks)))
            (flatten (guard-result e (call-guard (guarded-proc e) l))
                     (cons (cons 'nack l) context) poll? nacks acc))])]
      [(replacer? e)
       (flatten (replacer-inner e) (cons (cons 'replace e) context) poll? nacks acc)]
      [(kind-evt-of e) => (lambda (evt-of) (flatten (evt-of e) context poll? nacks acc))]
      [(registered-spec e)
       => (lambda (spec)
            (if (procedure? spec)
                (flatten (guard-result e (spec e)) context poll? nacks acc)
                (flatten spec context poll? nacks acc)))]
      [else (assertion-violation 'sync "expected an evt" e)]))

  ;; A guard procedure runs with breaks as the sync's caller has them, but a
  ;; sync inside it must not end the caller's sync/enable-break window
  ;; (see with-breaks-enabled): there 'until-commit reads as #t.  An escape
  ;; from the guard abandons the sync, and with-breaks-enabled restores.
  (define (call-guard proc . args)
    (let ([t (current-gthread)])
      (if (and t (eq? (gthread-break-enabled? t) 'until-commit))
          (begin
            (gthread-break-enabled?-set! t #t)
            (let ([v (apply proc args)])
              (gthread-break-enabled?-set! t 'until-commit)
              v))
          (apply proc args))))

  ;; A guard's non-evt result is an evt ready with the guard evt itself.
  (define (guard-result g v)
    (if (evt? v) v (wrap-evt always-evt (lambda (_) g))))

  ;; ---------------------------------------------------------------- sync
  ;; Runs one round: poll, then (unless polling) register and park.  Returns
  ;; the done syncer, #f when a poll found nothing, or 'park-disabled when
  ;; it would park inside the caller's own disabled region (see may-park?;
  ;; nothing is registered then).  Interrupts disabled.
  (define (sync-round t bv poll? deadline nacks)
    (let* ([n (vector-length bv)]
           [s (make-syncer t)]
           [start (if (fx> n 1) (random-below n) 0)]
           ;; a random order, so that each ready branch is equally likely to
           ;; be found first (a random rotation would favour a ready branch
           ;; that follows unready ones)
           [order (and (fx> n 2) (random-order n))])
      (define (attempt j register?)
        (let* ([i (if order (vector-ref order j) (fxmod (fx+ start j) n))]
               [p (branch-prim (vector-ref bv i))])
          ((prim-evt-attempt p) p s i register?)))
      ;; s is t's syncer from here on: a request (suspend, break, kill)
      ;; made before or during the round interrupts it, so that t commits
      ;; nothing after the request was made (see wait-in-syncer!).
      ;; Every way out clears it.
      (wait-in-syncer! t s)
      ;; phase 1: no partner knows s, so a commit here is ours alone
      ;; (or a requester's: interrupted)
      (let poll ([j 0])
        (cond
          [(syncer-done? s) (gthread-syncer-set! t #f) s]
          [(fx= j n)
           (cond
             [poll? (gthread-syncer-set! t #f) #f]
             [(not (may-park?)) (gthread-syncer-set! t #f) 'park-disabled]
             [else
               (let ([tokens (make-vector n #f)])
                 (unless (null? (unbox nacks)) (syncer-on-commit-set! s (nack-firer bv nacks)))
                 ;; phase 2: register everywhere; a partner may commit s meanwhile
                 (let reg ([j 0])
                   (when (and (fx< j n) (not (syncer-done? s)))
                     (let ([r (attempt j #t)])
                       (unless (eq? r #t)
                         (vector-set! tokens (if order (vector-ref order j) (fxmod (fx+ start j) n)) r))
                       (reg (fx+ j 1)))))
                 (let ([tm (and deadline (not (syncer-done? s))
                                (add-timer! (gthread-pool t) deadline
                                  (lambda () (commit-partner! s 'timeout '()))))]
                       [ctm (and (gthread-cancel t) (cancel-wake-timer! t s))])
                   (park-until-done! t s bv)
                   (when tm (cancel-timer! tm))
                   (when ctm (cancel-timer! ctm)))
                 (gthread-syncer-set! t #f)
                 (gthread-waits-set! t #f)
                 (do ([i 0 (fx+ i 1)]) ((fx= i n))
                   (cancel! (branch-prim (vector-ref bv i)) (vector-ref tokens i)))
                 s)])]
          [(eq? (attempt j #f) #t) (gthread-syncer-set! t #f) s]
          [else (poll (fx+ j 1))]))))

  ;; Takes back a registration (tok: what p's attempt returned when asked to
  ;; register).  A waiter the committing partner already dequeued (the usual
  ;; case) needs no visit to p's lock.
  (define (cancel! p tok)
    (unless (or (not tok) (eq? tok #t) (queue-node-unlinked? tok))
      ((prim-evt-cancel p) p tok)))

  ;; Parks t until s is done (committed by a partner, a timer, or here when
  ;; a kill, break or suspend request is pending).  Interrupts disabled.
  ;; what: the branch vector, or the one primitive evt, for the trace.
  ;; A macro, not a procedure: every frame live at a park becomes a
  ;; continuation object of its own (64 bytes and a stack piece a parked
  ;; thread keeps), so the park path has as few frames as it can.
  (define-syntax park-until-done!
    (syntax-rules ()
      [(_ t s what)
       (let wait ()
         (gthread-waits-set! t what)
         (unless (syncer-done? s)
           (when (gthread-requests-pending? t) (commit-one! s 'interrupted '()))
           (unless (syncer-done? s)
             (when tracing? (trace-park-reason! (park-reason what)))
             (park!)
             (wait))))]))

  ;; A thread inside a cancel scope with a deadline parks until that
  ;; deadline at most: this timer interrupts the sync, and the requests
  ;; layer then raises the cancellation.  #f where no deadline applies (none
  ;; in the scopes below the first shield, or breaks disabled).  Interrupts
  ;; disabled.
  (define (cancel-wake-timer! t s)
    (let ([dl (and (gthread-break-enabled? t) (cancel-deadline (gthread-cancel t)))])
      (and dl (not (syncer-done? s))
           (add-timer! (gthread-pool t) dl (lambda () (commit-partner! s 'interrupted '()))))))

  ;; Inside a cancel scope, a sync's return that took something counts as
  ;; a park for the preemption rule of cancellation (see check-requests-of!
  ;; in (spindle private core thread-requests)): it stamps parked-at, which
  ;; dump-threads reads only while the thread is parked.  A poll that took
  ;; nothing does not: a polling loop must stay cancellable.  Outside
  ;; every scope: one field check.
  (define-syntax note-sync-return!
    (syntax-rules ()
      [(_ t) (when (gthread-cancel t) (gthread-parked-at-set! t (coarse-ms)))]))

  ;; A blocking wait (a sync that is no poll; semaphore-wait when it finds
  ;; no count) is a checkpoint: inside a cancelled scope it raises before
  ;; it tries, even if it could complete at once (Trio's rule), so a loop
  ;; of waits that never park is cancelled too, and nothing is taken.
  ;; Outside every scope: one field check.
  (define-syntax wait-checkpoint!
    (syntax-rules ()
      [(_ t) (when (gthread-cancel t) (check-cancel! t))]))

  ;; For a wait about to take something it must give back in a
  ;; dynamic-wind (call-with-semaphore): inside a scope, a checkpoint
  ;; (checkpoint?: it is no poll), then the stamp of a sync's return made
  ;; before the take, so that no preemption cancels between the take
  ;; (semaphore-wait's fast path has no stamp) and the winder.  A loop of
  ;; such waits stays cancellable at the checkpoint.
  (define (before-take! checkpoint?)
    (let ([t (current-gthread)])
      (when (gthread-cancel t)
        (when checkpoint? (check-cancel! t))
        (note-sync-return! t))))

  ;; For dump-threads: what t, parked in a sync, waits on, one
  ;; (reason what ...) per branch (see evt-wait-description); '() if it
  ;; is in no sync.  Read racily: t's waits is one evt or a branch vector,
  ;; never changed once set.
  (define (thread-wait-descriptions t)
    (let ([w (gthread-waits t)])
      (cond
        [(prim-evt? w) (list (evt-wait-description w))]
        [(vector? w)
         (map (lambda (b) (evt-wait-description (branch-prim b))) (vector->list w))]
        [else '()])))

  ;; What a thread parked in sync waits on, for the trace.
  (define (park-reason what)
    (let ([p (cond
               [(prim-evt? what) what]
               [(fx= (vector-length what) 1) (branch-prim (vector-ref what 0))]
               [else #f])])
      (or (and p (evt-trace-reason (record-rtd p))) 'sync)))

  ;; (sync p) for one primitive evt, no timeout: what sync-evts does, without
  ;; its branch vector, NACK box and closures (a channel round trip is four
  ;; of these, a parked thread keeps one).
  ;; void?: return (void), not p's result (semaphore-wait tail-calls this,
  ;; one frame fewer in a parked thread).
  (define (sync-prim p void?)
    (sim-point!)
    (let ([t (current-gthread)])
      (wait-checkpoint! t)
      (disable-interrupts)
      (let ([s (make-syncer t)])
        ;; a requested suspend, break or kill interrupts s (see sync-round)
        (wait-in-syncer! t s)
        (unless (or (syncer-done? s) (eq? ((prim-evt-attempt p) p s 0 #f) #t))
          (unless (may-park?)
            (gthread-syncer-set! t #f)
            (enable-interrupts)
            (raise-park-disabled 'sync (park-reason p) (list p)))
          (let ([tok (and (not (syncer-done? s)) ((prim-evt-attempt p) p s 0 #t))])
            ;; the no-scope path keeps no timer variable in the parked frame
            (if (gthread-cancel t)
                (let ([ctm (cancel-wake-timer! t s)])
                  (park-until-done! t s p)
                  (when ctm (cancel-timer! ctm)))
                (park-until-done! t s p))
            (gthread-waits-set! t #f)
            (cancel! p tok)))
        (gthread-syncer-set! t #f)
        (note-sync-return! t)
        (unless (eq? (syncer-branch s) 'interrupted) (end-break-window! t))
        (enable-interrupts)
        (if (eq? (syncer-branch s) 'interrupted)
            (begin (check-requests!) (sync-prim p void?))
            (begin
              ;; a point after the commit too: what follows a wait races
              (sim-point!)
              (if void? (void) (apply values (syncer-result s))))))))

  ;; Choice randomness comes from a xorshift generator per OS thread: Chez's
  ;; random shares one state among all OS threads.  Its state lives in a
  ;; pair (OS thread id . state) that the thread parameter holds: setting a
  ;; thread parameter takes Chez's global thread mutex, so it is set once
  ;; per OS thread and the pair is updated in place.  fork-thread copies
  ;; the parent's pair into the child: a pair another OS thread made is
  ;; replaced, never shared.
  (define rng-cell (make-thread-parameter #f))
  (define (rng)
    (let ([c (rng-cell)] [id (get-thread-id)])
      (if (and c (eqv? (car c) id))
          c
          (let ([c (cons id (fxlogor 1 (fxand (most-positive-fixnum) (fx+ id (time-nanosecond (current-time))))))])
            (rng-cell c)
            c))))

  ;; A simulation seeds its OS thread's generator: choices follow the seed.
  (define (seed-choice-random! n)
    (set-cdr! (rng) (fxlogor 1 (fxand n (most-positive-fixnum)))))

  ;; A xorshift step (x ^= x<<13, x ^= x>>7, x ^= x<<7) on non-negative
  ;; fixnums.  fxsll raises on
  ;; overflow, so each left shift first keeps only the low bits that still
  ;; fit: 44 bits shifted by 13 and 52 bits shifted by 7 stay within the 60
  ;; value bits of a fixnum.
  (define low-44-bits #xFFFFFFFFFFF)
  (define low-52-bits #xFFFFFFFFFFFFF)
  (define (random-below n)
    (let* ([c (rng)]
           [x (cdr c)]
           [x (fxlogxor x (fxand (fxsll (fxand x low-44-bits) 13) (most-positive-fixnum)))]
           [x (fxlogxor x (fxsrl x 7))]
           [x (fxlogxor x (fxand (fxsll (fxand x low-52-bits) 7) (most-positive-fixnum)))]
           [x (if (fx= x 0) 1 x)])
      (set-cdr! c x)
      (fxmod x n)))

  ;; A uniformly random permutation of 0 .. n-1 (Fisher-Yates).
  (define (random-order n)
    (let ([v (make-vector n)])
      (do ([i 0 (fx+ i 1)]) ((fx= i n)) (vector-set! v i i))
      (do ([i (fx- n 1) (fx- i 1)]) ((fx= i 0) v)
        (let* ([j (random-below (fx+ i 1))] [x (vector-ref v i)])
          (vector-set! v i (vector-ref v j))
          (vector-set! v j x)))))

  (define (fire-nacks! nacks keep)
    (for-each (lambda (l) (unless (memq l keep) (latch-fire! l))) nacks))

  ;; A registered sync's on-commit (see evt-core): a partner's commit of
  ;; branch i fires the NACKs outside i's context at once, a timeout all of
  ;; them; an interruption none (the sync goes on), nor a commit inside a
  ;; replace-evt (its other branches stay in the next round).  The thread
  ;; fires them again as it returns (a latch fires once).
  (define (nack-firer bv nacks)
    (lambda (i)
      (cond
        [(eq? i 'timeout) (fire-nacks! (unbox nacks) '())]
        [(fixnum? i)
         (let ([ctx (branch-context (vector-ref bv i))])
           (unless (exists (lambda (f) (eq? (car f) 'replace)) ctx)
             (fire-nacks! (unbox nacks) (context-nacks ctx))))])))

  (define (context-nacks context)
    (fold-right (lambda (f acc) (if (eq? (car f) 'nack) (cons (cdr f) acc) acc)) '() context))

  ;; timeout: #f, or a monotonic deadline; poll? for timeout 0.
  ;; Returns the result values, or calls on-timeout in tail position.
  (define (sync-evts who evts poll? deadline on-timeout)
    (sim-point!)
    (let* ([t (let ([t (current-gthread)]) (unless poll? (wait-checkpoint! t)) t)]
           [nacks (box '())]
           [branches (if (for-all prim-evt? evts)
                         (map (lambda (e) (make-branch e '())) evts)
                         ;; a guard that raises abandons the sync: NACKs made so far fire
                         (guard (c [#t (fire-nacks! (unbox nacks) '()) (raise c)])
                           (let loop ([es evts] [acc '()])
                             (if (null? es)
                                 (reverse acc)
                                 (loop (cdr es) (append (reverse (flatten (car es) '() poll? nacks '())) acc))))))])
      (let retry ([bv (list->vector branches)])
        (let ([s (begin (disable-interrupts)
                        (let ([s (sync-round t bv poll? deadline nacks)])
                          (when (and s (not (symbol? s)) (fixnum? (syncer-branch s)))
                            (when (gthread-cancel t) (note-sync-return! t))
                            (unless (exists (lambda (f) (eq? (car f) 'replace))
                                            (branch-context (vector-ref bv (syncer-branch s))))
                              (end-break-window! t)))
                          s))])
          (enable-interrupts)
          (cond
            [(eq? s 'park-disabled)
             (fire-nacks! (unbox nacks) '())
             (raise-park-disabled who (park-reason bv) evts)]
            [(or (not s) (eq? (syncer-branch s) 'timeout))
             (fire-nacks! (unbox nacks) '())
             (on-timeout)]
            [(eq? (syncer-branch s) 'interrupted)
             ;; kill, break or suspend: nacks fire if we leave the sync
             (guard (c [#t (fire-nacks! (unbox nacks) '()) (raise c)])
               ;; kill runs no handlers: the finisher calls this cleanup
               (gthread-cleanup-set! t (lambda () (fire-nacks! (unbox nacks) '())))
               (check-requests!)
               (gthread-cleanup-set! t #f))
             (retry bv)]
            [else
             (let ([b (vector-ref bv (syncer-branch s))])
               (finish-branch who t b (syncer-result s) nacks bv (syncer-branch s) poll? deadline on-timeout
                              (lambda (bv) (retry bv))))])))))

  ;; Applies the committed branch's context to its results.
  (define (finish-branch who t b vals nacks bv idx poll? deadline on-timeout retry)
    (let ([ctx (branch-context b)])
      (if (exists (lambda (f) (eq? (car f) 'replace)) ctx)
          (retry (replace-branches ctx vals nacks bv idx poll?))
          (begin
            ;; the commit is final: abandoned NACKs fire before any wrap runs,
            ;; so a wrap proc that raises still leaves them ready
            (fire-nacks! (unbox nacks) (context-nacks ctx))
            (apply-wraps ctx vals)))))

  (define (only-nacks? ctx) (for-all (lambda (f) (eq? (car f) 'nack)) ctx))

  ;; A handle-evt that no wrap encloses runs in tail position.
  (define (apply-wraps ctx vals)
    (cond
      [(null? ctx) (apply values vals)]
      [(eq? (caar ctx) 'wrap)
       (let ([proc (cadar ctx)] [handle? (cddar ctx)])
         (if (and handle? (only-nacks? (cdr ctx)))
             (apply proc vals)
             (apply-wraps (cdr ctx) (call-wrap proc vals))))]
      [else (apply-wraps (cdr ctx) vals)]))

  ;; A wrap proc runs with breaks disabled; returns its values as a list.
  (define (call-wrap proc vals)
    (let ([t (current-gthread)])
      (if (gthread-break-enabled? t)
          (dynamic-wind
            (lambda () (gthread-break-enabled?-set! t #f))
            (lambda () (call-with-values (lambda () (apply proc vals)) list))
            (lambda () (gthread-break-enabled?-set! t #t)))
          (call-with-values (lambda () (apply proc vals)) list))))

  ;; The committed branch sits in a replace-evt: apply the frames up to the
  ;; innermost replace, and return the branches of the next round (the
  ;; replacement in this branch's place).  The NACKs inside the committed
  ;; part never fire; an exception here abandons the sync.
  (define (replace-branches ctx vals nacks bv idx poll?)
    (guard (c [#t (fire-nacks! (unbox nacks) '()) (raise c)])
      (let loop ([ctx ctx] [vals vals] [inner '()])
        (case (caar ctx)
          [(wrap) (loop (cdr ctx) (call-wrap (cadar ctx) vals) inner)]
          [(nack) (loop (cdr ctx) vals (cons (cdar ctx) inner))]
          [else
           (set-box! nacks (remp (lambda (l) (memq l inner)) (unbox nacks)))
           (let* ([r (cdar ctx)]
                  [new (apply (replacer-proc r) vals)]
                  [new (if (evt? new) new (wrap-evt always-evt (lambda (_) r)))]
                  [nb (flatten new (cdr ctx) poll? nacks '())]
                  [others (let l ([i 0] [acc '()])
                            (if (fx= i (vector-length bv))
                                (reverse acc)
                                (l (fx+ i 1) (if (fx= i idx) acc (cons (vector-ref bv i) acc)))))])
             (list->vector (append nb others)))]))))

  (define (sync . evts)
    (if (and (pair? evts) (null? (cdr evts)) (prim-evt? (car evts)))
        (sync-prim (car evts) #f)
        (sync-evts 'sync evts #f #f (lambda () (assert #f)))))

  (define (timeout->deadline who timeout)
    (cond
      [(not timeout) #f]
      [(and (real? timeout) (>= timeout 0)) (fl+ (monotonic-ms) (fl* 1000. (inexact timeout)))]
      [else (assertion-violation who "expected #f, a non-negative real or a procedure" timeout)]))

  (define (sync/timeout timeout . evts)
    (cond
      [(procedure? timeout) (sync-evts 'sync/timeout evts #t #f timeout)]
      [(and (real? timeout) (zero? timeout)) (sync-evts 'sync/timeout evts #t #f (lambda () #f))]
      [else (sync-evts 'sync/timeout evts #f (timeout->deadline 'sync/timeout timeout) (lambda () #f))]))

  ;; sync/enable-break entered with breaks disabled: an evt commits or a
  ;; break is raised, never both.  Breaks read as enabled ('until-commit)
  ;; until the sync's final commit, which disables them again with
  ;; interrupts still disabled (end-break-window!): a break or a
  ;; cancellation that comes later, even at a preemption before this
  ;; returns, stays pending.  Entered with breaks enabled, nothing changes.
  (define (with-breaks-enabled thunk)
    (let* ([t (current-gthread)] [old (gthread-break-enabled? t)])
      (dynamic-wind
        (lambda () (gthread-break-enabled?-set! t (if old #t 'until-commit)))
        (lambda () (check-requests!) (thunk))
        (lambda () (gthread-break-enabled?-set! t old)))))

  ;; At a sync's final commit, with interrupts disabled.
  (define (end-break-window! t)
    (when (eq? (gthread-break-enabled? t) 'until-commit)
      (gthread-break-enabled?-set! t #f)))

  (define (sync/enable-break . evts)
    (with-breaks-enabled (lambda () (apply sync evts))))

  (define (sync/timeout/enable-break timeout . evts)
    (with-breaks-enabled (lambda () (apply sync/timeout timeout evts))))

  (for-each (lambda (rtd) (record-prints-as! rtd "evt"))
            (list (record-type-descriptor choice) (record-type-descriptor wrapper)
                  (record-type-descriptor guarded) (record-type-descriptor replacer))))
