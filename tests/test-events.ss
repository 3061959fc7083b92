#!chezscheme
;;; Events and sync: sync, sync/timeout, combinators,
;;; channels, semaphores, async channels, exactly-once commit, fairness,
;;; cross-pool rendezvous, register-evt-record-type!.
;;; A scenario that needs threads lined up (one parked on a channel, a
;;; semaphore or a NACK before another acts) or an exact elapsed time runs
;;; under `simulated`: many seeds of (spindle simulation), where a lineup
;;; sleep returns only once every other thread is blocked and virtual time
;;; is exact.  Cross-pool, fairness, system-idle-evt and real-clock tests
;;; run on real threads and the real clock.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness)
        (spindle simulation)
        (only (spindle private core evt-core) make-syncer prim-evt-attempt prim-evt-cancel)
        (only (spindle private core atomic) atomic-checks?))

(test-limit 20)

;; ---------------------------------------------------------------- helpers
(define (now-ms) (current-inexact-monotonic-milliseconds))
(define (elapsed-ms thunk) (let ([t0 (now-ms)]) (thunk) (- (now-ms) t0)))


;; Continuation depth, to check tail positions.
(define (depth) (call/cc (lambda (k) ((inspect/object k) 'depth))))

(define (ready? e) (sync/timeout 0 (wrap-evt e (lambda _ #t))))

;; Runs thunk under `runs` seeds of the simulation, from seed 1: a failed
;; check fails the test with the seed that replays it.
(define (simulated runs thunk) (simulate-many thunk #:runs runs #:seed 1))

;; ---------------------------------------------------------------- basics
(test "evt? and primitive evts"
  (for-each (lambda (e) (check (format "evt? ~s" e) (evt? e)))
    (list always-evt never-evt (make-channel) (make-semaphore) (make-async-channel)
          (channel-put-evt (make-channel) 1) (semaphore-peek-evt (make-semaphore))
          (alarm-evt 0) (choice-evt) (wrap-evt always-evt values) (handle-evt always-evt values)
          (guard-evt (lambda () always-evt)) (nack-guard-evt (lambda (n) always-evt))
          (poll-guard-evt (lambda (p) always-evt)) (replace-evt always-evt values)
          (current-thread) (thread-receive-evt) (thread-dead-evt (current-thread))))
  (for-each (lambda (v) (check (format "not evt? ~s" v) (not (evt? v))))
    (list 5 (quote x) "s" (lambda () 1) (quote ()) (make-parallel-thread-pool 1)))
  (check-equal "always-evt result is itself" always-evt (sync always-evt))
  (check "never-evt" (not (sync/timeout 0 never-evt)))
  (check "no evts" (not (sync/timeout 0)))
  (check "no evts, timeout" (not (sync/timeout 0.01))))

(test "bad arguments to sync and the combinators"
  (check-raises "sync non-evt" (both assertion-violation? (irritant? 5)) (lambda () (sync 5)))
  (check-raises "sync/timeout non-evt" assertion-violation? (lambda () (sync/timeout 0 'x)))
  (check-raises "negative timeout" (both (assertion-from? 'sync/timeout) (irritant? -1))
    (lambda () (sync/timeout -1 always-evt)))
  (check-raises "symbol timeout" (assertion-from? 'sync/timeout) (lambda () (sync/timeout 'soon always-evt)))
  (check-raises "choice-evt" (both (assertion-from? 'choice-evt) (irritant? 3)) (lambda () (choice-evt always-evt 3)))
  (check-raises "wrap-evt evt" (assertion-from? 'wrap-evt) (lambda () (wrap-evt 3 values)))
  (check-raises "wrap-evt proc" (assertion-from? 'wrap-evt) (lambda () (wrap-evt always-evt 3)))
  (check-raises "handle-evt proc" (assertion-from? 'handle-evt) (lambda () (handle-evt always-evt 3)))
  (check-raises "guard-evt" (assertion-from? 'guard-evt) (lambda () (guard-evt 3)))
  (check-raises "nack-guard-evt" (assertion-from? 'nack-guard-evt) (lambda () (nack-guard-evt 3)))
  (check-raises "poll-guard-evt" (assertion-from? 'poll-guard-evt) (lambda () (poll-guard-evt 3)))
  (check-raises "guard-evt arity" (both (assertion-from? 'guard-evt) (irritant? car)) (lambda () (guard-evt car)))
  (check-raises "nack-guard-evt arity" (assertion-from? 'nack-guard-evt) (lambda () (nack-guard-evt (lambda () never-evt))))
  (check-raises "poll-guard-evt arity" (assertion-from? 'poll-guard-evt) (lambda () (poll-guard-evt (lambda () never-evt))))
  (check-raises "replace-evt" (assertion-from? 'replace-evt) (lambda () (replace-evt 3 values)))
  (check-raises "alarm-evt" (both (assertion-from? 'alarm-evt) (irritant? 'later)) (lambda () (alarm-evt 'later)))
  (check-raises "channel-get" (assertion-from? 'channel-get) (lambda () (channel-get 3)))
  (check-raises "channel-put" (assertion-from? 'channel-put) (lambda () (channel-put 3 1)))
  (check-raises "channel-put-evt" (assertion-from? 'channel-put-evt) (lambda () (channel-put-evt 3 1)))
  (check-raises "semaphore-post" (assertion-from? 'semaphore-post) (lambda () (semaphore-post 3)))
  (check-raises "semaphore-wait" (assertion-from? 'semaphore-wait) (lambda () (semaphore-wait 3)))
  (check-raises "semaphore-peek-evt" (assertion-from? 'semaphore-peek-evt) (lambda () (semaphore-peek-evt 3)))
  (check-raises "async-channel-get" (assertion-from? 'async-channel-get) (lambda () (async-channel-get 3)))
  (check-raises "async-channel-put" (assertion-from? 'async-channel-put) (lambda () (async-channel-put 3 1))))

;; ---------------------------------------------------------------- primitives
(test "sync on channels between threads, under simulation"
  (simulated 100
    (lambda ()
      (let ([ch (make-channel)])
        (thread (lambda () (channel-put ch 'a) (channel-put ch 'b)))
        (check-equal "channel-get" 'a (channel-get ch))
        (check-equal "sync on channel gives the value" 'b (sync ch))
        (check "try-get without putter" (not (channel-try-get ch)))
        (let ([t (thread (lambda () (channel-put ch 'c)))])
          (sleep 0.02)                  ; returns once t waits in its put
          (check-equal "try-get with a waiting putter" 'c (channel-try-get ch))
          (thread-wait t))
        (let* ([got (box #f)] [t (thread (lambda () (set-box! got (channel-get ch))))])
          (sleep 0.01)
          (check "channel-put returns void" (eq? (void) (channel-put ch 'd)))
          (thread-wait t)
          (check-equal "got" 'd (unbox got)))
        (check "channel?" (and (channel? ch) (not (channel? 1))))))))

(test "channel-put-evt: result is the evt, fresh per call, channel-put-evt?"
  (let* ([ch (make-channel)]
         [pe (channel-put-evt ch 42)]
         [t (thread (lambda () (channel-get ch)) #:keep 'results)])
    (check "fresh" (not (eq? pe (channel-put-evt ch 42))))
    (check "predicate" (and (channel-put-evt? pe) (not (channel-put-evt? ch))))
    (check-equal "result" pe (sync pe))
    (check-equal "transferred" 42 (thread-wait t))))

(test "channels serve partners FIFO, under simulation"
  ;; each getter is parked before the next one starts
  (simulated 100
    (lambda ()
      (let* ([ch (make-channel)] [out (make-async-channel)]
             [ts (map (lambda (i) (let ([t (thread (lambda () (async-channel-put out (list i (channel-get ch)))))])
                                    (sleep 0.01) t))
                      '(0 1 2))])
        (for-each (lambda (v) (channel-put ch v)) '(a b c))
        (for-each thread-wait ts)
        ;; getter i got the i-th value (the getters then report in any order)
        (check-equal "pairs" '((0 a) (1 b) (2 c))
          (list-sort (lambda (x y) (< (car x) (car y)))
                     (list (async-channel-get out) (async-channel-get out) (async-channel-get out))))))))

(test "semaphores as evts; try-wait; peek evt never decrements"
  (let ([s (make-semaphore 2)])
    (check-equal "sync result is the semaphore" s (sync s))
    (check "try-wait" (semaphore-try-wait? s))
    (check "try-wait at 0" (not (semaphore-try-wait? s)))
    (check "not ready at 0" (not (sync/timeout 0 s)))
    (let ([pk (semaphore-peek-evt s)])
      (check "peek pred" (and (semaphore-peek-evt? pk) (not (semaphore-peek-evt? s))))
      (check "peek not ready" (not (sync/timeout 0 pk)))
      (semaphore-post s)
      (check-equal "peek result is the peek evt" pk (sync pk))
      (check-equal "again" pk (sync pk))
      (check "count kept" (semaphore-try-wait? s))
      (check "and only 1" (not (semaphore-try-wait? s)))))
  (simulated 100
    (lambda ()
      (let* ([s (make-semaphore)] [pk (semaphore-peek-evt s)]
             [t (thread (lambda () (sync pk)) #:keep 'results)])
        (sleep 0.02)                    ; returns once t waits on the peek
        (semaphore-post s)
        (check-equal "peeker woken" pk (thread-wait t))
        (check "count still 1" (semaphore-try-wait? s))))))

(test "semaphore-wait blocks until post; waiters FIFO, under simulation"
  (simulated 100
    (lambda ()
      (let* ([s (make-semaphore 0)] [out (make-async-channel)]
             [ts (map (lambda (i) (let ([t (thread (lambda () (semaphore-wait s) (async-channel-put out i)))])
                                    (sleep 0.01) t))
                      '(0 1 2))])
        (check "nobody yet" (not (async-channel-try-get out)))
        (for-each (lambda (i) (semaphore-post s) (check-equal "order" i (async-channel-get out))) '(0 1 2))
        (for-each thread-wait ts)))))

(test "semaphore bounds and bad input"
  (check-raises "init above max" error? (lambda () (make-semaphore (most-positive-fixnum))))
  (check-raises "init bignum" error? (lambda () (make-semaphore (* 2 (most-positive-fixnum)))))
  (check-raises "negative" (both (assertion-from? 'make-semaphore) (irritant? -1)) (lambda () (make-semaphore -1)))
  (check-raises "inexact" (assertion-from? 'make-semaphore) (lambda () (make-semaphore 1.0)))
  (let ([s (make-semaphore (- (most-positive-fixnum) 1))])
    (let ([c (call/cc (lambda (k) (with-exception-handler k (lambda () (semaphore-post s) #f))))])
      (check "post at max is &error" (and (error? c) (not (assertion-violation? c))))
      (check "who" (eq? 'semaphore-post (condition-who c))))
    (check "still usable" (semaphore-try-wait? s)))
  (check "semaphore?" (and (semaphore? (make-semaphore)) (not (semaphore? 1)))))

(test "async channels: FIFO, try-get, put-evt"
  (let ([ach (make-async-channel)])
    (check "async-channel?" (and (async-channel? ach) (not (async-channel? 1))))
    (check "try-get empty" (not (async-channel-try-get ach)))
    (for-each (lambda (i) (async-channel-put ach i)) '(1 2 3))
    (check-equal "sync dequeues" 1 (sync ach))
    (check-equal "get" 2 (async-channel-get ach))
    (check-equal "try-get" 3 (async-channel-try-get ach))
    (let ([pe (async-channel-put-evt ach 'x)])
      (check-equal "put-evt result" pe (sync pe))
      (check-equal "put happened" 'x (async-channel-get ach)))
    (simulated 100
      (lambda ()
        (let* ([ach (make-async-channel)]
               [t (thread (lambda () (async-channel-get ach)) #:keep 'results)])
          (sleep 0.01)                  ; returns once t waits in its get
          (async-channel-put ach 'late)
          (check-equal "blocked getter" 'late (thread-wait t)))))))

(test "async channel: get and put in one sync never meet each other"
  (let ([ach (make-async-channel)])
    (let ([r (sync/timeout 0 ach (async-channel-put-evt ach 'v))])
      (check "the put committed" (and r (not (eq? r 'v))))
      (check-equal "value buffered" 'v (async-channel-try-get ach))))
  (let ([ach (make-async-channel 1)])
    (async-channel-put ach 'full)
    (check-equal "the get committed" 'full (sync/timeout 0.05 ach (async-channel-put-evt ach 'v)))
    (check "put did not happen" (not (async-channel-try-get ach)))))

(test "async channel limit: put blocks at the limit"
  (check-raises "limit 0" (both (assertion-from? 'make-async-channel) (irritant? 0)) (lambda () (make-async-channel 0)))
  (check-raises "limit 1.5" (assertion-from? 'make-async-channel) (lambda () (make-async-channel 1.5)))
  (let ([ach (make-async-channel 2)])
    (async-channel-put ach 1)
    (async-channel-put ach 2)
    (check "put-evt not ready at the limit" (not (sync/timeout 0 (async-channel-put-evt ach 3))))
    (check-equal "two buffered" '(1 2) (list (async-channel-get ach) (async-channel-get ach))))
  (simulated 100
    (lambda ()
      (let* ([ach (make-async-channel 2)] [done (box #f)])
        (async-channel-put ach 1)
        (async-channel-put ach 2)
        (let ([t (thread (lambda () (async-channel-put ach 3) (set-box! done #t)))])
          (sleep 0.03)                  ; returns once t waits in its put
          (check "putter blocked" (not (unbox done)))
          (check-equal "get 1" 1 (async-channel-get ach))
          (thread-wait t)
          (check "putter went on" (unbox done))
          (check-equal "rest in order" '(2 3) (list (async-channel-get ach) (async-channel-get ach)))
          (check "empty" (not (async-channel-try-get ach))))))))

;; ---------------------------------------------------------------- sync/timeout
(test "sync/timeout 0 polls; a thunk runs in tail position"
  (let ([s (make-semaphore 1)])
    (check-equal "ready" s (sync/timeout 0 s))
    (check "not ready" (not (sync/timeout 0 s)))
    (check-equal "exact zero and inexact zero" #f (sync/timeout 0.0 s))
    (check-equal "thunk" '(none 1) (values->list (lambda () (sync/timeout (lambda () (values 'none 1)) s))))
    (semaphore-post s)
    (check-equal "thunk not called when ready" s (sync/timeout (lambda () 'none) s)))
  (let ([f (lambda () (sync/timeout (lambda () (depth)) never-evt))]
        [g (lambda () (depth))])
    (check-equal "thunk in tail position" (car (list (g))) (car (list (f))))))

(test "sync/timeout returns #f at exactly the time, under simulation"
  ;; (the real clock: "alarm-evt and sync/timeout wait on the monotonic clock")
  (simulated 100
    (lambda ()
      (for-each
        (lambda (secs)
          (let* ([r 'unset]
                 [ms (elapsed-ms (lambda () (set! r (sync/timeout secs (make-channel) never-evt))))])
            (check-equal "result" #f r)
            (check-equal (format "timeout ~a: virtual ms" secs) (inexact (* 1000 secs)) ms)))
        '(0.05 0.1 1/10 2))
      (let* ([ch (make-channel)]
             [t (thread (lambda () (sleep 0.03) (channel-put ch 'v)))]
             [r #f]
             [ms (elapsed-ms (lambda () (set! r (sync/timeout 2 ch))))])
        (check-equal "value before the timeout" 'v r)
        (check-equal "at the put's time" 30. ms)
        (thread-wait t))
      (check-equal "#f timeout = sync" always-evt (sync/timeout #f always-evt)))))

;; ---------------------------------------------------------------- combinators
(test "choice-evt"
  (let ([s (make-semaphore 1)])
    (check-equal "the ready one" s (sync (choice-evt never-evt s (make-channel))))
    (check "empty choice never ready" (not (sync/timeout 0 (choice-evt))))
    (semaphore-post s)
    (check-equal "nested" s (sync (choice-evt (choice-evt never-evt) (choice-evt (choice-evt s)))))
    (check-equal "several args to sync" 'w (sync never-evt (wrap-evt always-evt (lambda (_) 'w))))))

(test "wrap-evt: results applied to proc, multiple values, nesting"
  (check-equal "single" 11 (sync (wrap-evt (wrap-evt always-evt (lambda (e) 10)) (lambda (x) (+ x 1)))))
  (check-equal "values" '(1 2) (values->list (lambda () (sync (wrap-evt always-evt (lambda (e) (values 1 2)))))))
  (check-equal "multiple into next" 3
    (sync (wrap-evt (wrap-evt always-evt (lambda (e) (values 1 2))) (lambda (a b) (+ a b)))))
  (let ([ch (make-channel)])
    (thread (lambda () (channel-put ch 5)))
    (check-equal "over a channel" 50 (sync (wrap-evt ch (lambda (v) (* v 10))))))
  (check-equal "wrap proc runs with breaks disabled" #f (sync (wrap-evt always-evt (lambda (_) (break-enabled)))))
  (check "enabled again after" (break-enabled))
  (check-equal "handle proc in tail position keeps the caller's break state" #t
    (sync (handle-evt always-evt (lambda (_) (break-enabled))))))

(test "handle-evt: proc in tail position of sync; handle-evt?"
  (let ([f (lambda () (sync (handle-evt always-evt (lambda (e) (depth)))))]
        [g (lambda () (depth))]
        [w (lambda () (sync (wrap-evt always-evt (lambda (e) (depth)))))])
    (check-equal "tail" (car (list (g))) (car (list (f))))
    (check "wrap is not in tail position" (> (car (list (w))) (car (list (g)))))
    (let ([c (lambda () (sync (choice-evt never-evt (handle-evt always-evt (lambda (e) (depth))))))])
      (check-equal "tail inside a choice" (car (list (g))) (car (list (c))))))
  (check-equal "nested in a wrap still runs" 2
    (sync (wrap-evt (handle-evt always-evt (lambda (e) 1)) (lambda (x) (+ x 1)))))
  (check "handle-evt?" (handle-evt? (handle-evt always-evt values)))
  (check "choice holding one" (handle-evt? (choice-evt never-evt (handle-evt always-evt values))))
  (check "wrap is not" (not (handle-evt? (wrap-evt always-evt values))))
  (check "non-evt" (not (handle-evt? 5)))
  ;; a handle-evt loop runs in constant space: its depth does not grow
  (let ([depths '()])
    (let loop ([i 0])
      (when (< i 5)
        (sync (handle-evt always-evt (lambda (e) (set! depths (cons (depth) depths)) (loop (+ i 1)))))))
    (check (format "constant depth ~s" depths) (apply = depths))))

(test "guard-evt: thunk runs at sync time, once; non-evt result"
  (let* ([calls 0]
         [g (guard-evt (lambda () (set! calls (+ calls 1)) (wrap-evt always-evt (lambda (_) calls))))])
    (check-equal "not yet called" 0 calls)
    (check-equal "first sync" 1 (sync g))
    (check-equal "second sync" 2 (sync g))
    (check-equal "poll" 3 (sync/timeout 0 g)))
  (let ([g (guard-evt (lambda () 'not-an-evt))])
    (check-equal "non-evt: ready with the guard evt" g (sync g)))
  (simulated 100
    (lambda ()
      (let* ([nacked (box #f)]
             [c (call/cc (lambda (k)
                           (with-exception-handler k
                             (lambda ()
                               (sync (nack-guard-evt (lambda (n) (thread (lambda () (sync n) (set-box! nacked #t))) never-evt))
                                     (guard-evt (lambda () (raise 'guard-failed))))))))])
        (check-equal "exception escapes sync" 'guard-failed c)
        (sleep 0.02)                    ; returns once the watcher has run or waits
        (check "escape fires nacks of made branches" (unbox nacked))))))

(test "nack-guard-evt: nack ready when another branch is chosen, not when chosen"
  ;; another branch chosen
  (let* ([nack #f]
         [e (nack-guard-evt (lambda (n) (set! nack n) never-evt))])
    (check-equal "other chosen" 'other (sync e (wrap-evt always-evt (lambda (_) 'other))))
    (check "nack ready" (ready? nack))
    (check "nack result void" (eq? (void) (sync nack))))
  ;; this branch chosen
  (let* ([nack #f]
         [e (nack-guard-evt (lambda (n) (set! nack n) (wrap-evt always-evt (lambda (_) 'mine))))])
    (check-equal "chosen" 'mine (sync e never-evt))
    (check "nack not ready" (not (ready? nack))))
  ;; timeout
  (let* ([nack #f])
    (check "timed out" (not (sync/timeout 0.02 (nack-guard-evt (lambda (n) (set! nack n) never-evt)))))
    (check "nack ready after timeout" (ready? nack)))
  ;; poll that finds nothing
  (let* ([nack #f])
    (check "poll" (not (sync/timeout 0 (nack-guard-evt (lambda (n) (set! nack n) never-evt)))))
    (check "nack ready after poll" (ready? nack)))
  ;; nested nack-guards: the chosen inner one keeps both its nacks quiet
  (let* ([outer #f] [inner #f] [other #f]
         [e (nack-guard-evt
              (lambda (n) (set! outer n)
                (choice-evt (nack-guard-evt (lambda (n) (set! inner n) always-evt))
                            (nack-guard-evt (lambda (n) (set! other n) never-evt)))))])
    (check-equal "inner chosen" always-evt (sync e))
    (check "outer quiet" (not (ready? outer)))
    (check "inner quiet" (not (ready? inner)))
    (check "sibling nacked" (ready? other)))
  ;; a thread waiting on the nack wakes when another thread's sync picks elsewhere
  (simulated 100
    (lambda ()
      (let* ([ch (make-channel)] [nacked (make-semaphore 0)]
             [t (thread (lambda ()
                          (sync (nack-guard-evt (lambda (n) (thread (lambda () (sync n) (semaphore-post nacked))) never-evt))
                                ch))
                        #:pool 'own #:keep 'results)])
        (sleep 0.02)                    ; returns once t and its watcher wait
        (channel-put ch 'x)
        (check-equal "other branch won" 'x (thread-wait t))
        (check "nack woke the watcher" (sync/timeout 2 nacked))))))

(test "a nack is ready as soon as a partner commits another branch, under simulation"
  ;; the syncer runs only at scheduling points: in many seeds it has not
  ;; run between the partner's commit and the poll of its nack, which must
  ;; already be ready
  (define (check-nack-now what make-other complete!)
    (simulated 100
      (lambda ()
        (let* ([n #f] [other (make-other)]
               [t (thread (lambda ()
                            (sync (nack-guard-evt (lambda (k) (set! n k) never-evt)) (car other))))])
          (sleep 0.01)                  ; returns once t waits in its sync
          (complete! (cdr other))
          (check (format "~a: nack ready at the commit" what) (ready? n))
          (check (format "~a: syncer ended" what) (sync/timeout 2 t))))))
  (check-nack-now "channel put"
    (lambda () (let ([ch (make-channel)]) (cons (channel-put-evt ch 10) ch)))
    (lambda (ch) (check-equal "got the put" 10 (sync/timeout 2 ch))))
  (check-nack-now "channel get"
    (lambda () (let ([ch (make-channel)]) (cons ch ch)))
    (lambda (ch) (check "put taken" (sync/timeout 2 (channel-put-evt ch 1)))))
  (check-nack-now "async channel"
    (lambda () (let ([ch (make-async-channel)]) (cons ch ch)))
    (lambda (ch) (async-channel-put ch 1)))
  (check-nack-now "semaphore"
    (lambda () (let ([s (make-semaphore 0)]) (cons s s)))
    (lambda (s) (semaphore-post s))))

(test "nack fires when the syncing thread is killed or broken, under simulation"
  (simulated 100
    (lambda ()
      (let* ([nack-sem (make-semaphore 0)]
             [t (thread (lambda ()
                          (sync (nack-guard-evt (lambda (n) (thread (lambda () (sync n) (semaphore-post nack-sem))) never-evt)))))])
        (sleep 0.02)                    ; returns once t waits in its sync
        (kill-thread t)
        (check "killed syncer: nack" (sync/timeout 2 nack-sem)))
      (let* ([nack-sem (make-semaphore 0)]
             [t (thread (lambda ()
                          (guard (c [(break-condition? c) 'broken])
                            (sync (nack-guard-evt (lambda (n) (thread (lambda () (sync n) (semaphore-post nack-sem))) never-evt)))))
                        #:keep 'results)])
        (sleep 0.02)
        (break-thread t)
        (check "broken syncer: nack" (sync/timeout 2 nack-sem))
        (check-equal "the break ended the sync" 'broken (thread-wait t))))))

(test "nacks and wraps: exceptions, replace, handle inside a nack-guard"
  ;; a wrap proc that raises after the commit still leaves the other NACKs ready
  (let* ([nack #f]
         [r (guard (c [#t c])
              (sync (nack-guard-evt (lambda (n) (set! nack n) never-evt))
                    (wrap-evt always-evt (lambda (_) (raise 'wrap-failed)))))])
    (check-equal "raised" 'wrap-failed r)
    (check "nack ready" (ready? nack)))
  ;; a NACK inside the committed part of a replace-evt never fires
  (let* ([inner #f] [other #f]
         [e (replace-evt (nack-guard-evt (lambda (n) (set! inner n) always-evt))
                         (lambda (x) (wrap-evt always-evt (lambda (_) 'replaced))))])
    (check-equal "replaced" 'replaced (sync e (nack-guard-evt (lambda (n) (set! other n) never-evt))))
    (check "inner quiet" (not (ready? inner)))
    (check "other nacked" (ready? other)))
  ;; the replacement loses: an enclosing nack-guard's NACK fires
  (let* ([outer #f] [s (make-semaphore 1)]
         [e (nack-guard-evt (lambda (n) (set! outer n) (replace-evt s (lambda (_) never-evt))))])
    (check-equal "other wins" 'w (sync e (wrap-evt (alarm-evt (+ (current-inexact-milliseconds) 20)) (lambda (_) 'w))))
    (check "outer nacked" (ready? outer)))
  ;; a handle-evt directly inside a nack-guard is still in tail position
  (let ([f (lambda () (sync (nack-guard-evt (lambda (n) (handle-evt always-evt (lambda (_) (depth)))))))]
        [g (lambda () (depth))])
    (check-equal "tail" (car (list (g))) (car (list (f))))))

(test "poll-guard-evt gets #t for a poll, #f otherwise"
  (let* ([seen '()]
         [e (poll-guard-evt (lambda (poll?) (set! seen (cons poll? seen)) always-evt))])
    (sync e)
    (sync/timeout 0 e)
    (sync/timeout (lambda () #f) e)
    (sync/timeout 1 e)
    (check-equal "flags" '(#f #t #t #f) (reverse seen)))
  (let ([e (poll-guard-evt (lambda (p) 'x))])
    (check-equal "non-evt result" e (sync e))))

(test "replace-evt"
  (check-equal "replacement result" 'second
    (sync (replace-evt always-evt (lambda (e) (wrap-evt always-evt (lambda (_) 'second))))))
  (let ([r (replace-evt always-evt (lambda (e) 'not-evt))])
    (check-equal "non-evt: ready with the replace-evt" r (sync r)))
  ;; the first commit stands even if the replacement loses (the putter
  ;; comes after the sync has committed s)
  (simulated 100
    (lambda ()
      (let* ([s (make-semaphore 1)] [ch (make-channel)]
             [r (replace-evt s (lambda (sem) never-evt))]
             [t (thread (lambda () (sleep 0.03) (channel-put ch 'won)))])
        (check-equal "other evt wins" 'won (sync r ch))
        (check "semaphore commit stood" (not (semaphore-try-wait? s)))
        (thread-wait t))))
  (check-equal "multiple values reach proc" 3
    (sync (replace-evt (wrap-evt always-evt (lambda (_) (values 1 2)))
                       (lambda (a b) (wrap-evt always-evt (lambda (_) (+ a b))))))))

(test "alarm-evt: absolute times"
  (let ([past (alarm-evt (- (current-inexact-milliseconds) 10))])
    (check-equal "past alarm ready, result itself" past (sync/timeout 0 past)))
  (check "future alarm not ready" (not (sync/timeout 0 (alarm-evt (+ (current-inexact-milliseconds) 1000)))))
  ;; the waits, on the virtual clocks (the real ones: "alarm-evt and
  ;; sync/timeout wait on the monotonic clock")
  (simulated 50
    (lambda ()
      (let* ([a (alarm-evt (+ (current-inexact-milliseconds) 80))]
             [r #f]
             [ms (elapsed-ms (lambda () (set! r (sync a))))])
        (check "result" (eq? r a))
        (check-equal "waited" 80. ms))
      (let* ([a (alarm-evt (+ (current-inexact-monotonic-milliseconds) 50) #t)]
             [ms (elapsed-ms (lambda () (sync a)))])
        (check-equal "monotonic waited" 50. ms))
      (let* ([r 'unset]
             [ms (elapsed-ms (lambda () (set! r (sync/timeout 0.02 (alarm-evt (+ (current-inexact-milliseconds) 2000))))))])
        (check "timeout beats a later alarm" (not r))
        (check-equal "at the timeout" 20. ms))
      (let* ([ts (map (lambda (d) (thread (lambda () (sync (alarm-evt (+ (current-inexact-milliseconds) d))) (now-ms))
                                          #:keep 'results))
                      '(30 10 20))]
             [t0 (now-ms)])
        (check-equal "alarms in three threads ring at their times" '(30. 10. 20.)
                     (map (lambda (t) (- (thread-wait t) t0)) ts)))))
  (check "clocks" (and (flonum? (current-inexact-milliseconds)) (flonum? (current-inexact-monotonic-milliseconds))
                       (> (current-inexact-milliseconds) 1.5e12))))

(test "alarm-evt in a parallel thread"
  (let* ([t (thread (lambda () (elapsed-ms (lambda () (sync (alarm-evt (+ (current-inexact-milliseconds) 50))))))
                    #:pool 'own #:keep 'results)]
         [ms (thread-wait t)])
    (check (format "waited ~a ms" ms) (and (>= ms 45) (< ms 500)))))

(test "call-with-semaphore"
  (let ([s (make-semaphore 1)])
    (check-equal "values and args" '(3 x)
      (values->list (lambda () (call-with-semaphore s (lambda (a b) (values (+ a b) 'x)) #f 1 2))))
    (check "posted after" (semaphore-try-wait? s))
    (semaphore-post s)
    ;; escape
    (call/cc (lambda (k) (call-with-semaphore s (lambda () (k 'out)))))
    (check "posted on escape" (semaphore-try-wait? s))
    (check "only once" (not (semaphore-try-wait? s)))
    (semaphore-post s)
    ;; exception
    (guard (c [#t (void)]) (call-with-semaphore s (lambda () (raise 'oops))))
    (check "posted on exception" (semaphore-try-wait? s))
    ;; try-fail-thunk when the count is 0
    (check-equal "try-fail tail call" '(busy 1)
      (values->list (lambda () (call-with-semaphore s (lambda () 'ran) (lambda () (values 'busy 1))))))
    (semaphore-post s)
    (check-equal "try succeeds" 'ran (call-with-semaphore s (lambda () 'ran) (lambda () 'busy)))
    (check "posted" (semaphore-try-wait? s))
    (semaphore-post s)
    ;; re-entry by continuation
    (let* ([k-in #f] [n 0]
           [r (guard (c [(assertion-violation? c) 'refused])
                (call-with-semaphore s (lambda () (call/cc (lambda (k) (set! k-in k))) (set! n (+ n 1))))
                (if (< n 2) (k-in #f) 'reentered))])
      (check-equal "re-entry refused" 'refused r))
    (check "count 1 after all" (and (semaphore-try-wait? s) (not (semaphore-try-wait? s)))))
  (check-raises "bad semaphore" (assertion-from? 'call-with-semaphore) (lambda () (call-with-semaphore 1 void)))
  (check-raises "bad proc" (assertion-from? 'call-with-semaphore) (lambda () (call-with-semaphore (make-semaphore 1) 5))))

(test "call-with-semaphore blocks until the count is positive, under simulation"
  (simulated 100
    (lambda ()
      (let* ([s (make-semaphore 0)]
             [t (thread (lambda () (call-with-semaphore s (lambda () 'got))) #:keep 'results)])
        (sleep 0.02)                    ; returns once t waits
        (check "waiting" (not (thread-dead? t)))
        (semaphore-post s)
        (check-equal "ran" 'got (thread-wait t))
        (check "posted back" (semaphore-try-wait? s))))))

;; ---------------------------------------------------------------- commit
(test "exactly one commit in a choice of two ready semaphores"
  (do ([i 0 (+ i 1)]) ((= i 200))
    (let* ([a (make-semaphore 1)] [b (make-semaphore 1)]
           [r (sync (choice-evt a b))])
      (check "one of them" (or (eq? r a) (eq? r b)))
      (let ([other (if (eq? r a) b a)])
        (check "chosen decremented" (not (semaphore-try-wait? r)))
        (check "other keeps its count" (semaphore-try-wait? other))))))

(test "exactly one commit: choice of channel gets served by two putters, under simulation"
  (simulated 100
    (lambda ()
      (let* ([c1 (make-channel)] [c2 (make-channel)]
             [p1 (thread (lambda () (channel-put c1 'one)))]
             [p2 (thread (lambda () (channel-put c2 'two)) #:pool 'own)])
        (sleep 0.03)                    ; returns once both putters wait
        (let* ([r (sync c1 c2)]
               [left (if (eq? r 'one) c2 c1)])
          (check "one value" (memq r '(one two)))
          (check "the other putter still waits" (sync/timeout 2 left))
          (check "nothing more" (not (sync/timeout 0 c1 c2))))
        (thread-wait p1) (thread-wait p2)))))

(test "a sync never rendezvouses with itself, under simulation"
  (simulated 100
    (lambda ()
      (let ([ch (make-channel)])
        (check "get and put of one channel in one sync" (not (sync/timeout 0.1 ch (channel-put-evt ch 1))))
        (check "poll too" (not (sync/timeout 0 (channel-put-evt ch 1) ch)))
        ;; while blocked that way, another thread can still take the put
        (let ([t (thread (lambda () (sync ch (channel-put-evt ch 'mine))) #:keep 'results)])
          (sleep 0.02)                  ; returns once t waits in its sync
          (check-equal "a partner gets the put" 'mine (channel-get ch))
          (check "the syncer's put committed" (channel-put-evt? (thread-wait t))))))))

(test "a wrap proc's exception leaves sync after the commit"
  (let ([s (make-semaphore 1)])
    (check-raises "raised" (lambda (c) (eq? c 'in-wrap))
      (lambda () (sync (wrap-evt s (lambda (_) (raise 'in-wrap))))))
    (check "commit stood" (not (semaphore-try-wait? s)))))

;; ---------------------------------------------------------------- cross-pool
(test "cross-pool rendezvous: coroutine thread and parallel thread on a channel"
  (let* ([ch (make-channel)] [back (make-channel)] [n 500]
         [producer (thread (lambda () (do ([i 0 (+ i 1)]) ((= i n)) (channel-put ch i))))]
         [consumer (thread (lambda ()
                             (let loop ([i 0] [sum 0])
                               (if (= i n) (channel-put back sum) (loop (+ i 1) (+ sum (channel-get ch))))))
                           #:pool 'own)])
    (check-equal "sum" (/ (* n (- n 1)) 2) (sync/timeout 10 back))
    (thread-wait producer) (thread-wait consumer)))

(test "choice-evt over channels served by threads of three pools"
  (let* ([pool (make-parallel-thread-pool 2)]
         [n 200]
         [chans (list (make-channel) (make-channel) (make-channel))]
         [servers (map (lambda (ch tag p)
                         (thread (lambda () (do ([i 0 (+ i 1)]) ((= i n)) (channel-put ch (cons tag i)))) p))
                       chans '(co pa own) (list #f pool 'own))]
         [counts (make-eq-hashtable)]
         [last (make-eq-hashtable)]
         [ok (box #t)])
    (do ([k 0 (+ k 1)]) ((= k (* 3 n)))
      (let* ([r (sync/timeout 5 (apply choice-evt chans))])
        (if (not r)
            (set-box! ok #f)
            (begin
              (hashtable-update! counts (car r) (lambda (c) (+ c 1)) 0)
              ;; each server's values arrive in order, none lost or repeated
              (unless (= (cdr r) (hashtable-ref last (car r) 0)) (set-box! ok #f))
              (hashtable-set! last (car r) (+ 1 (cdr r)))))))
    (check "in order, none lost" (unbox ok))
    (check-equal "counts" (list n n n) (map (lambda (t) (hashtable-ref counts t 0)) '(co pa own)))
    (check "nothing extra" (not (sync/timeout 0.02 (apply choice-evt chans))))
    (for-each thread-wait servers)
    (parallel-thread-pool-close pool)))

(test "semaphore posted from another pool wakes a coroutine sync"
  (let* ([s (make-semaphore 0)]
         [t (thread (lambda () (sleep 0.02) (semaphore-post s)) #:pool 'own)])
    (check-equal "woken" s (sync/timeout 2 s))
    (thread-wait t)))

;; ---------------------------------------------------------------- fairness
(test "fairness of choice: two ready semaphores"
  (let ([a (make-semaphore 1000)] [b (make-semaphore 1000)] [na 0])
    (do ([i 0 (+ i 1)]) ((= i 1000))
      (when (eq? (sync a b) a) (set! na (+ na 1))))
    (check (format "a chosen ~a of 1000" na) (< 400 na 600))))

(test "fairness of choice: ready evts separated by a never-ready one"
  (let ([x (wrap-evt always-evt (lambda (_) 'x))] [y (wrap-evt always-evt (lambda (_) 'y))] [nx 0])
    (do ([i 0 (+ i 1)]) ((= i 1500))
      (when (eq? (sync x never-evt y) 'x) (set! nx (+ nx 1))))
    (check (format "x chosen ~a of 1500 (uniform is 750)" nx) (< 650 nx 850)))
  (let ([counts (make-vector 3 0)]
        [es (map (lambda (i) (wrap-evt always-evt (lambda (_) i))) '(0 1 2))])
    (do ([i 0 (+ i 1)]) ((= i 1500))
      (let ([r (sync (choice-evt never-evt (car es) never-evt never-evt (cadr es) (caddr es)))])
        (vector-set! counts r (+ 1 (vector-ref counts r)))))
    (check (format "three-way ~s" counts)
      (andmap (lambda (c) (< 400 c 600)) (vector->list counts)))))

;; ---------------------------------------------------------------- extension
(define-record-type port-like (fields evt tag) (nongenerative test-port-like))
(define-record-type port-like2 (parent port-like) (fields more) (nongenerative test-port-like2))
(define-record-type guarded-thing (fields (mutable n)) (nongenerative test-guarded-thing))
(define-record-type fixed-thing (fields x) (nongenerative test-fixed-thing))
(define-record-type odd-thing (fields (mutable e)) (nongenerative test-odd-thing))

(test "register-evt-record-type!"
  (register-evt-record-type! (record-type-descriptor port-like) 0)
  (let* ([s (make-semaphore 1)] [p (make-port-like s 'tag)])
    (check "instance is an evt" (evt? p))
    (check-equal "field evt used" s (sync p))
    (check "not ready" (not (sync/timeout 0 p)))
    (semaphore-post s)
    (check-equal "subtype too" s (sync (make-port-like2 s 'tag 'more)))
    (check "plain field value non-evt is not listed" (not (evt? (make-fixed-thing 1)))))
  (register-evt-record-type! (record-type-descriptor guarded-thing)
    (lambda (self) (guarded-thing-n-set! self (+ 1 (guarded-thing-n self))) 'not-an-evt))
  (let ([g (make-guarded-thing 0)])
    (check-equal "procedure spec, non-evt result: ready with the instance" g (sync g))
    (check-equal "guard called once per sync" 1 (guarded-thing-n g)))
  (register-evt-record-type! (record-type-descriptor fixed-thing) always-evt)
  (check-equal "evt spec" always-evt (sync (make-fixed-thing 1)))
  (check-raises "already registered" (assertion-from? 'register-evt-record-type!)
    (lambda () (register-evt-record-type! (record-type-descriptor port-like) 1)))
  (check-raises "mutable field" (assertion-from? 'register-evt-record-type!)
    (lambda () (register-evt-record-type! (record-type-descriptor odd-thing) 0)))
  (check-raises "field index out of range" (assertion-from? 'register-evt-record-type!)
    (lambda () (register-evt-record-type! (record-type-descriptor odd-thing) 5)))
  (check-raises "not an rtd" (assertion-from? 'register-evt-record-type!)
    (lambda () (register-evt-record-type! 'rtd always-evt))))

(test "threads, mailboxes and thread-dead-evt as evts in a choice"
  (let* ([sem (make-semaphore 0)]
         [t (thread (lambda () (semaphore-wait sem)))])
    (check "thread not ready" (not (sync/timeout 0 t (thread-receive-evt))))
    (thread-send (current-thread) 'mail)
    (check-equal "receive evt ready" (thread-receive-evt) (sync/timeout 0 t (thread-receive-evt)))
    (check-equal "mail" 'mail (thread-receive))
    (semaphore-post sem)
    (check-equal "thread ready" t (sync t (thread-receive-evt)))))

(test "sync/enable-break commits or breaks, never both, under simulation"
  ;; broken while waiting (also through a guard whose own sync commits)
  (for-each
    (lambda (wait!)
      (simulated 100
        (lambda ()
          (let* ([b (box #f)] [s (make-semaphore)]
                 [t (thread (lambda ()
                              (parameterize-break #f
                                (guard (c [(break-condition? c) (set-box! b 'break)])
                                  (wait! s)
                                  (set-box! b 'committed)))))])
            (sleep 0.02)                ; returns once t waits
            (break-thread t)
            (thread-wait t)
            (check-equal "broken" 'break (unbox b))))))
    (list (lambda (s) (sync/enable-break s))
          (lambda (s) (sync/enable-break (guard-evt (lambda () (sync (make-semaphore 1)) s))))))
  ;; committed, then broken: the commit stands, the break stays pending
  ;; until breaks are enabled again (never both)
  (for-each
    (lambda (what wait! complete! taken?)
      (simulated 100
        (lambda ()
          (let* ([b (box '())] [s (make-semaphore)] [ch (make-channel)]
                 [t (thread (lambda ()
                              (guard (c [(break-condition? c) (set-box! b (cons 'break (unbox b)))])
                                (parameterize-break #f
                                  (wait! s ch)
                                  (set-box! b (cons 'committed (unbox b))))
                                (sleep 1))))])
            (sleep 0.02)                ; returns once t waits
            (complete! s ch)
            (break-thread t)
            (thread-wait t)
            (check-equal (list what "committed, then the break once enabled") '(break committed) (unbox b))
            (check (list what "the unit was taken") (taken? s ch))))))
    '("sync/enable-break on a semaphore" "semaphore-wait/enable-break" "sync/enable-break on a channel"
      "sync/enable-break on a choice" "sync/enable-break on a guard that syncs")
    (list (lambda (s ch) (sync/enable-break s))
          (lambda (s ch) (semaphore-wait/enable-break s))
          (lambda (s ch) (sync/enable-break ch))
          (lambda (s ch) (sync/enable-break s (make-semaphore)))
          (lambda (s ch) (sync/enable-break (guard-evt (lambda () (sync (make-semaphore 1)) s)))))
    (list (lambda (s ch) (semaphore-post s)) (lambda (s ch) (semaphore-post s)) (lambda (s ch) (channel-put ch 1))
          (lambda (s ch) (semaphore-post s)) (lambda (s ch) (semaphore-post s)))
    (list (lambda (s ch) (not (semaphore-try-wait? s))) (lambda (s ch) (not (semaphore-try-wait? s))) (lambda (s ch) #t)
          (lambda (s ch) (not (semaphore-try-wait? s))) (lambda (s ch) (not (semaphore-try-wait? s))))))

(test "system-idle-evt: unready while another thread spins, ready once all are parked"
  (let* ([stop (box #f)]
         [spinner (thread (lambda () (let loop () (unless (unbox stop) (loop)))))])
    (check-equal "unready while a coroutine thread spins" #f (sync/timeout 0.1 (system-idle-evt)))
    (set-box! stop #t)
    (thread-wait spinner))
  (let* ([p (make-parallel-thread-pool 1)] [stop (box #f)]
         [spinner (thread (lambda () (let loop () (unless (unbox stop) (loop)))) #:pool p)])
    (check-equal "unready while a parallel thread spins" #f (sync/timeout 0.1 (system-idle-evt)))
    (set-box! stop #t)
    (thread-wait spinner)
    (parallel-thread-pool-close p))
  (let* ([s (make-semaphore)]
         [parked (list (thread (lambda () (semaphore-wait s)))
                       (thread (lambda () (sleep 10)))
                       (thread (lambda () (channel-get (make-channel)))))])
    (sleep 0.01)
    (check "ready when every other thread is parked"
           (eq? (void) (sync/timeout 2 (wrap-evt (system-idle-evt) (lambda (v) v)))))
    (check "polls ready too" (sync/timeout 0 (wrap-evt (system-idle-evt) (lambda (v) #t))))
    (for-each kill-thread parked))
  (let* ([ready-at #f]
         [idler (thread (lambda () (sync (system-idle-evt)) (set! ready-at (now-ms))))]
         [busy-until (+ (now-ms) 60)])
    ;; the main thread keeps running for 60 ms: the idle evt waits for it
    (let loop () (when (< (now-ms) busy-until) (loop)))
    (thread-wait idler)
    (check "became ready only after the others stopped" (>= ready-at busy-until))))

(test "alarm-evt and sync/timeout wait on the monotonic clock"
  (let ([ms (elapsed-ms (lambda () (sync/timeout 0.05 never-evt)))])
    (check "sync/timeout at least 50 ms" (>= ms 49.5)))
  (let ([ms (elapsed-ms (lambda () (sync (alarm-evt (+ (current-inexact-milliseconds) 50)))))])
    (check "a wall-clock alarm waits its relative time" (and (>= ms 45) (< ms 1000))))
  (let ([ms (elapsed-ms (lambda () (sync (alarm-evt (+ (current-inexact-monotonic-milliseconds) 50) #t))))])
    (check "a monotonic alarm" (and (>= ms 49.5) (< ms 1000)))))

(test "channels, semaphores and evts print as #<name>"
  (define (printed x) (with-output-to-string (lambda () (write x))))
  (check-equal "channel" "#<channel>" (printed (make-channel)))
  (check-equal "semaphore" "#<semaphore>" (printed (make-semaphore 3)))
  (check-equal "async channel" "#<async-channel>" (printed (make-async-channel)))
  (check-equal "put evt" "#<channel-put-evt>" (printed (channel-put-evt (make-channel) 1)))
  (check-equal "peek evt" "#<semaphore-peek-evt>" (printed (semaphore-peek-evt (make-semaphore))))
  (check-equal "alarm" "#<alarm-evt>" (printed (alarm-evt 0)))
  (check-equal "wrap" "#<evt>" (printed (wrap-evt always-evt values)))
  (check-equal "choice" "#<evt>" (printed (choice-evt)))
  (check-equal "always" "#<evt>" (printed always-evt))
  (check-equal "idle" "#<evt>" (printed (system-idle-evt)))
  (check-equal "in a list" "(#<channel> #<semaphore>)" (printed (list (make-channel) (make-semaphore)))))

;; ---------------------------------------------------------------- assertions
;; SPINDLE_SAFE=1 compiles the libraries with assert-atomic in: an attempt
;; or cancel called with interrupts enabled (a broken contract) raises at
;; once instead of racing.  At optimize-level 3 the check is not there.
(test "assert-atomic fires under SPINDLE_SAFE and costs nothing otherwise"
  (when (getenv "SPINDLE_SAFE") (check "compiled with checks" atomic-checks?))
  (let ([internal? (lambda (c) (and (assertion-violation? c) (message-condition? c)
                                   (string=? "spindle internal error: called with interrupts enabled"
                                             (condition-message c))))])
    (for-each
      (lambda (e)
        (let ([call (lambda () ((prim-evt-attempt e) e (make-syncer #f) 0 #f))])
          (if atomic-checks?
              (check-raises (format "attempt of ~s" e) internal? call)
              (call))))
      (list (make-semaphore 0) (make-channel) (make-async-channel) always-evt (alarm-evt 1e15)))
    (when atomic-checks?
      (check-raises "cancel" internal?
        (lambda () (let ([e (make-semaphore 0)]) ((prim-evt-cancel e) e #f)))))))

(done)
