#!chezscheme
;;; Threads: creation, keep, keywords, wait, kill, break,
;;; suspend/resume, sleep, yield, preemption, pools, mailboxes, parameters.
;;;
;;; Scenarios that line threads up with sleeps (kill, break or suspend a
;;; thread once it waits), or time their threads, run under simulate-many:
;;; there a sleep returns only once every other thread waits, and virtual
;;; times are exact, so each seed is one exact interleaving.  What is about
;;; real time or real OS threads runs for real: preemption of compute
;;; loops, sleep accuracy on the real clock, the stress loops over parallel
;;; pools, and the pool and parameter paths across OS threads; so do the
;;; tests that line nothing up, and a thread ended by a break (which fails a
;;; simulated run).
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (spindle simulation)
        (harness) (wait-until))

(test-limit 20)

;; ---------------------------------------------------------------- helpers
(define (now-ms) (current-inexact-monotonic-milliseconds))

;; Runs thunk under runs seeds from seed (see doc/simulation.md): a failed
;; check, a raise no thread takes or a deadlock fails with the seed.
(define (simulated runs seed thunk) (simulate-many thunk #:runs runs #:seed seed))

(define (elapsed-ms thunk)
  (let ([t0 (now-ms)]) (thunk) (- (now-ms) t0)))

(define spindle-env
  (environment '(except (chezscheme) thread? sleep make-parameter parameterize) '(spindle)))

(define (raised thunk)
  (call/cc (lambda (k) (with-exception-handler (lambda (c) (k c)) (lambda () (thunk) #f)))))

;; Starts a thread (on pool) that runs thunk and puts the break it gets
;; (if any) into box; returns once the thread is inside its guard, so that
;; a break sent from then on is caught there.
(define (spawn-catching box thunk . pool)
  (let* ([started (make-semaphore 0)]
         [t (thread (lambda ()
                      (guard (c [(break-condition? c) (set-box! box c)])
                        (semaphore-post started)
                        (thunk)
                        (set-box! box 'returned)))
                    (if (pair? pool) (car pool) #f))])
    (semaphore-wait started)
    t))

;; ---------------------------------------------------------------- creation
(test "thread runs its thunk, thread-wait returns void without keep"
  (let* ([b (box #f)] [t (thread (lambda () (set-box! b 'ran) 42))])
    (check "thread?" (thread? t))
    (check "void" (eq? (void) (thread-wait t)))
    (check-equal "ran" 'ran (unbox b))
    (check "dead" (thread-dead? t))
    (check "not running" (not (thread-running? t)))))

(test "keep 'results gives all the thunk's values (positional form)"
  (let ([t (thread (lambda () (values 1 'two "three")) #f 'results)])
    (check-equal "values" '(1 two "three") (values->list (lambda () (thread-wait t))))
    ;; waiting again gives the same values
    (check-equal "again" '(1 two "three") (values->list (lambda () (thread-wait t))))
    (check-equal "zero values" '()
      (values->list (lambda () (thread-wait (thread (lambda () (values)) #f 'results)))))))

(test "keyword forms: thunk first, keywords after, any order"
  (let ([t (thread (lambda () (values (get-thread-id) 7)) #:pool 'own #:keep 'results)])
    (let ([r (values->list (lambda () (thread-wait t)))])
      (check "own pool runs on another OS thread" (not (= (car r) (get-thread-id))))
      (check-equal "value" 7 (cadr r))))
  (check-equal "keep before pool" '(8)
    (values->list (lambda () (thread-wait (thread (lambda () 8) #:keep 'results #:pool #f)))))
  (check-equal "keep only" '(9 10)
    (values->list (lambda () (thread-wait (thread (lambda () (values 9 10)) #:keep 'results))))))

(test "keyword forms: keywords before the thunk"
  (let* ([b (box #f)]
         [t (thread #:pool 'own (lambda () (set-box! b (get-thread-id))))])
    (thread-wait t)
    (check "ran on its own OS thread" (and (unbox b) (not (= (unbox b) (get-thread-id))))))
  (check-equal "keep first" '(1 2)
    (values->list (lambda () (thread-wait (thread #:keep 'results (lambda () (values 1 2)))))))
  (check-equal "mixed" '(3)
    (values->list (lambda () (thread-wait (thread #:keep 'results (lambda () 3) #:pool 'own)))))
  (let ([pool (make-parallel-thread-pool 2)])
    (check-equal "explicit pool by keyword" '(4)
      (values->list (lambda () (thread-wait (thread #:pool pool #:keep 'results (lambda () 4))))))
    (check-equal "explicit pool positional" '(5)
      (values->list (lambda () (thread-wait (thread (lambda () 5) pool 'results)))))
    (parallel-thread-pool-close pool)))

(test "keyword arguments are evaluated once, left to right as written"
  (let* ([log '()]
         [note (lambda (x v) (set! log (cons x log)) v)]
         [t (thread #:keep (note 'keep 'results) (note 'thunk (lambda () 1)) #:pool (note 'pool #f))])
    (check-equal "order" '(keep thunk pool) (reverse log))
    (check-equal "result" '(1) (values->list (lambda () (thread-wait t))))))

(test "thread used as a variable: map and apply"
  (let* ([ts (map thread (list (lambda () 1) (lambda () 2) (lambda () 3)))])
    (check "all threads" (andmap thread? ts))
    (for-each thread-wait ts)
    (check "all dead" (andmap thread-dead? ts)))
  (let ([t (apply thread (list (lambda () (values 'a 'b)) 'own 'results))])
    (check-equal "apply with positional optionals" '(a b) (values->list (lambda () (thread-wait t))))))

(test "keyword syntax errors are &syntax"
  (for-each
    (lambda (form)
      (check-raises (format "~s" form) syntax-violation? (lambda () (eval form spindle-env))))
    (list '(thread (lambda () 1) #:colour 'red)
          '(thread (lambda () 1) #:pool #f #:pool #f)
          '(thread (lambda () 1) #:keep)
          '(thread (lambda () 1) #f #:pool #f)
          '(thread (lambda () 1) #f #f #f))))

;; ---------------------------------------------------------------- bad input
(test "thread: bad thunk"
  (check-raises "(thread 5)" (both (assertion-from? 'thread) (irritant? 5)) (lambda () (thread 5)))
  (check-raises "one-argument procedure" (assertion-from? 'thread) (lambda () (thread (lambda (x) x))))
  (check-raises "no thunk at all" (assertion-from? 'thread) (lambda () (thread #:pool 'own #f))))

(test "thread: #:keep 'result is &assertion suggesting 'results"
  (let ([c (raised (lambda () (thread (lambda () 1) #:keep 'result)))])
    (check "assertion" (and c ((assertion-from? 'thread) c)))
    (check "irritant result" ((irritant? 'result) c))
    (check "message suggests 'results" (string-contains? (condition-message c) "'results")))
  (check-raises "other keep" (both (assertion-from? 'thread) (irritant? 'all))
    (lambda () (thread (lambda () 1) #f 'all))))

(test "thread: bad pool"
  (check-raises "symbol" (both (assertion-from? 'thread) (irritant? 'shared))
    (lambda () (thread (lambda () 1) #:pool 'shared)))
  (check-raises "number" (assertion-from? 'thread) (lambda () (thread (lambda () 1) 3))))

(test "closed pool refuses threads; its threads keep running; close is idempotent"
  (let* ([pool (make-parallel-thread-pool 2)]
         [sem (make-semaphore 0)]
         [t (thread (lambda () (semaphore-wait sem) 'done) #:pool pool #:keep 'results)])
    (parallel-thread-pool-close pool)
    (parallel-thread-pool-close pool)
    (let ([c (raised (lambda () (thread (lambda () 1) #:pool pool)))])
      (check "assertion from thread" (and c ((assertion-from? 'thread) c)))
      (check "message" (string-contains? (condition-message c) "closed")))
    (semaphore-post sem)
    (check-equal "existing thread finished" '(done) (values->list (lambda () (thread-wait t))))))

(test "pool constructor and close: bad input"
  (for-each
    (lambda (n)
      (check-raises (format "pool size ~s" n)
        (both (assertion-from? 'make-parallel-thread-pool) (irritant? n))
        (lambda () (make-parallel-thread-pool n))))
    '(0 -1 1.5 2.0 x))
  (check-raises "close non-pool" (assertion-from? 'parallel-thread-pool-close)
    (lambda () (parallel-thread-pool-close 'pool)))
  (check "pool?" (parallel-thread-pool? (make-parallel-thread-pool 1)))
  (check "not pool" (not (parallel-thread-pool? 5)))
  (check "default size" (parallel-thread-pool? (make-parallel-thread-pool))))

(test "other procedures: bad arguments name the procedure and the argument"
  (for-each
    (lambda (who thunk)
      (check-raises (symbol->string who) (both (assertion-from? who) (irritant? 'nope)) thunk))
    '(thread-wait kill-thread break-thread thread-suspend thread-resume thread-running?
      thread-dead? thread-send thread-dead-evt)
    (list (lambda () (thread-wait 'nope)) (lambda () (kill-thread 'nope))
          (lambda () (break-thread 'nope)) (lambda () (thread-suspend 'nope))
          (lambda () (thread-resume 'nope)) (lambda () (thread-running? 'nope))
          (lambda () (thread-dead? 'nope)) (lambda () (thread-send 'nope 1))
          (lambda () (thread-dead-evt 'nope))))
  (let ([t (thread void)])
    (check-raises "thread-wait fail-k" (assertion-from? 'thread-wait) (lambda () (thread-wait t 5)))
    (check-raises "break kind" (both (assertion-from? 'break-thread) (irritant? 'stop))
      (lambda () (break-thread t 'stop)))
    (check-raises "rewind non-list" (assertion-from? 'thread-rewind-receive)
      (lambda () (thread-rewind-receive 5)))))

(test "sleep: bad arguments"
  (check-raises "negative" (both (assertion-from? 'sleep) (irritant? -1)) (lambda () (sleep -1)))
  (check-raises "negative real" (assertion-from? 'sleep) (lambda () (sleep -0.5)))
  (check-raises "symbol" (assertion-from? 'sleep) (lambda () (sleep 'soon)))
  (check-raises "complex" (assertion-from? 'sleep) (lambda () (sleep 1+2i))))

;; ---------------------------------------------------------------- failure
(test "an exception ends only its thread, is reported with its name, thread-wait calls fail-k"
  (let* ([err (open-output-string)]
         [t (thread (lambda ()
                      (current-error-port err)
                      (error 'worker-proc "boom in thread" 17)))]
         [other (thread (lambda () (values 'fine)) #:keep 'results)])
    (check-equal "fail-k value, tail position" '(failed 1 2)
      (values->list (lambda () (thread-wait t (lambda () (values 'failed 1 2))))))
    (check "default fail-k returns void" (eq? (void) (thread-wait t)))
    (check-equal "other thread unaffected" '(fine) (values->list (lambda () (thread-wait other))))
    (let ([report (get-output-string err)])
      (check (format "report names the thread: ~s" report)
        (and (> (string-length report) 7) (string=? (substring report 0 7) "thread ")))
      (check "report shows the message" (string-contains? report "boom in thread")))
    (check "creator still alive" (thread-running? (current-thread)))))

(test "a condition whose display raises is reported whole, in one piece"
  (define-record-type unprintable (fields x))
  (record-writer (record-type-descriptor unprintable) (lambda (r p wr) (error 'unprintable "cannot print")))
  (let* ([err (open-output-string)]
         [t (thread (lambda ()
                      (current-error-port err)
                      (raise (condition (make-error) (make-message-condition "bad value")
                                        (make-irritants-condition (list (make-unprintable 1)))))))])
    (thread-wait t)
    (let ([report (get-output-string err)])
      (check (format "one line naming the thread: ~s" report)
        (and (> (string-length report) 7) (string=? (substring report 0 7) "thread ")
             (char=? #\newline (string-ref report (- (string-length report) 1)))))
      (check (format "says it could not be displayed: ~s" report)
        (string-contains? report "could not be displayed (cannot print)")))))

(test "an exception in a parallel thread spares the pool and its worker"
  (let* ([pool (make-parallel-thread-pool 1)]
         [err (open-output-string)]
         [bad (thread (lambda () (current-error-port err) (raise 'not-a-condition)) #:pool pool)])
    (check-equal "fail-k" 'failed (thread-wait bad (lambda () 'failed)))
    (check "non-condition reported" (string-contains? (get-output-string err) "not-a-condition"))
    (check-equal "pool still works" '(ok)
      (values->list (lambda () (thread-wait (thread (lambda () 'ok) #:pool pool #:keep 'results)))))
    (parallel-thread-pool-close pool)))

(test "killed and broken threads make thread-wait call fail-k"
  (let ([t (thread (lambda () (sync never-evt)))])
    (kill-thread t)
    (check-equal "killed" 'fail (thread-wait t (lambda () 'fail))))
  ;; real: under a simulation a thread that a break ends fails the run
  (let* ([quiet (make-semaphore 0)]
         [t (thread (lambda () (current-error-port (open-output-string)) (semaphore-post quiet) (sync never-evt)))])
    (semaphore-wait quiet)
    (break-thread t)
    (check-equal "broken" 'fail (thread-wait t (lambda () 'fail)))))

;; ---------------------------------------------------------------- kill
(test "kill-thread: a thread blocked in sync, under simulation"
  (simulated 200 1
    (lambda ()
      (let* ([ch (make-channel)] [after (box #f)]
             [t (thread (lambda () (channel-get ch) (set-box! after #t)))])
        (sleep 0.02)                    ; t waits in channel-get
        (check "running before" (thread-running? t))
        (kill-thread t)
        (check "dead once kill-thread returns" (thread-dead? t))
        (check "did not continue" (not (unbox after)))
        (let ([t0 (now-ms)])
          (check "channel has no stale getter" (not (sync/timeout 0.05 (channel-put-evt ch 1))))
          (check-equal "the put timed out at 50 ms" 50. (- (now-ms) t0)))
        (kill-thread t)))))   ; no effect on a dead thread

(define (check-kill-looping-thread pool)
  (let* ([counter (box 0)]
         [t (thread (lambda () (let loop () (set-box! counter (+ (unbox counter) 1)) (loop)))
                    #:pool pool)])
    (check "loop ran" (wait-until (lambda () (> (unbox counter) 0)) 2))
    (kill-thread t)
    (check "dead" (thread-dead? t))
    (let ([c (unbox counter)])
      (sleep 0.02)
      (check-equal "stopped" c (unbox counter)))))

(test "kill-thread: a coroutine thread in an infinite loop"
  (check-kill-looping-thread #f))

(test "kill-thread: a parallel thread in an infinite loop"
  (check-kill-looping-thread 'own))

(test "kill-thread: a thread killing itself does not return; no unwinding"
  (let* ([log '()]
         [t (thread (lambda ()
                      (dynamic-wind
                        void
                        (lambda ()
                          (guard (c [#t (set! log (cons 'handler log))])
                            (kill-thread (current-thread))
                            (set! log (cons 'returned log))))
                        (lambda () (set! log (cons 'after log))))))])
    (check-equal "fail-k" 'killed (thread-wait t (lambda () 'killed)))
    (check-equal "nothing ran after the kill" '() log))
  (let ([t (thread (lambda () (kill-thread (current-thread)) 'no) #:pool 'own #:keep 'results)])
    (check-equal "parallel self-kill" 'killed (thread-wait t (lambda () 'killed)))))

(test "kill-thread runs no dynamic-wind after thunk of the target, under simulation"
  (simulated 200 1
    (lambda ()
      (let* ([after (box #f)]
             [t (thread (lambda () (dynamic-wind void (lambda () (sync never-evt)) (lambda () (set-box! after #t)))))])
        (sleep 0.01)                    ; t waits inside the dynamic-wind
        (kill-thread t)
        (check "no after thunk" (not (unbox after)))
        (sleep 1)
        (check "nor later" (not (unbox after)))))))

;; ---------------------------------------------------------------- break
(test "break-thread wakes a thread blocked in channel sync, under simulation"
  (simulated 200 1
    (lambda ()
      (let* ([b (box #f)] [ch (make-channel)]
             [t (spawn-catching b (lambda () (sync ch)))])
        (sleep 0.02)                    ; t waits in its sync
        (break-thread t)
        (thread-wait t)
        (check "break condition" (break-condition? (unbox b)))
        (check "not &error" (not (error? (unbox b))))
        (check "no stale getter left" (not (sync/timeout 0.05 (channel-put-evt ch 1))))))))

(test "break-thread wakes semaphore-wait, sleep and thread-wait, under simulation"
  (simulated 200 1
    (lambda ()
      (for-each
        (lambda (what blocker)
          (let* ([b (box #f)] [t (spawn-catching b blocker)])
            (sleep 0.02)                ; t waits in blocker
            (let ([ms (elapsed-ms (lambda () (break-thread t) (thread-wait t)))])
              (check-equal (format "~a woke at once (virtual ms)" what) 0. ms))
            (check (format "~a raised a break" what) (break-condition? (unbox b)))))
        '(semaphore sleep join self-join thread-receive)
        (list (lambda () (semaphore-wait (make-semaphore 0)))
              (lambda () (sleep 10))
              (lambda () (thread-wait (thread (lambda () (sync never-evt)))))
              (lambda () (thread-wait (current-thread)))     ; blocks until a break
              (lambda () (thread-receive)))))))

(test "break-thread of a parallel thread in sync (simulated and real) and in a loop"
  (simulated 200 1
    (lambda ()
      (let* ([b (box #f)] [t (spawn-catching b (lambda () (sync (make-semaphore))) 'own)])
        (sleep 0.02)                    ; t waits in its sync
        (break-thread t)
        (thread-wait t)
        (check "blocked parallel thread broken" (break-condition? (unbox b))))))
  ;; for real, on its own OS thread: broken wherever it is, waiting or not
  (let* ([b (box #f)] [t (spawn-catching b (lambda () (sync (make-semaphore))) 'own)])
    (break-thread t)
    (thread-wait t)
    (check "parallel thread broken" (break-condition? (unbox b))))
  ;; a compute loop is broken at a preemption: real time
  (let* ([b (box #f)] [t (spawn-catching b (lambda () (let loop () (loop))) 'own)])
    (sleep 0.02)
    (break-thread t)
    (thread-wait t)
    (check "looping parallel thread broken" (break-condition? (unbox b)))))

(test "a break or kill before the thread runs ends only that thread"
  (for-each
    (lambda (pool)
      (let* ([err (open-output-string)]
             [ran (box #f)]
             [t (parameterize ([current-error-port err])
                  (thread (lambda () (set-box! ran #t) (sync never-evt)) pool))])
        (break-thread t)
        (check-equal (format "~a: fail-k" pool) 'failed (thread-wait t (lambda () 'failed)))
        (check (format "~a: reported as a break" pool)
          (let ([s (get-output-string err)]) (or (unbox ran) (string-contains? s "break"))))))
    '(#f own))
  (let* ([ran (box #f)] [t (thread (lambda () (set-box! ran #t)))])
    (kill-thread t)
    (check "killed before start: never ran" (not (unbox ran)))
    (check "dead" (thread-dead? t))))

(test "break kinds: hang-up and terminate, under simulation"
  (simulated 200 1
    (lambda ()
      (let* ([b (box #f)] [t (spawn-catching b (lambda () (sleep 10)))])
        (sleep 0.01)                    ; t sleeps
        (break-thread t 'hang-up)
        (thread-wait t)
        (check "hang-up" (break-hang-up-condition? (unbox b))))
      (let* ([b (box #f)] [t (spawn-catching b (lambda () (sleep 10)))])
        (sleep 0.01)
        (break-thread t 'terminate)
        (thread-wait t)
        (check "terminate" (break-terminate-condition? (unbox b)))
        (check "terminate is a break" (break-condition? (unbox b)))))))

(test "a break stays pending while breaks are disabled, under simulation"
  (simulated 200 1
    (lambda ()
      (let* ([t0 (now-ms)] [b (box #f)] [reached (box #f)]
             [t (spawn-catching b
                          (lambda ()
                            (parameterize-break #f
                              (sleep 0.1)
                              (set-box! reached #t))
                            (sleep 10)))])
        (sleep 0.02)                    ; t sleeps with breaks disabled
        (break-thread t)
        (thread-wait t)
        (check-equal "the thread ended when its disabled sleep did" 100. (- (now-ms) t0))
        (check "disabled section completed" (unbox reached))
        (check "raised once enabled" (break-condition? (unbox b)))))))

(test "stress: a thread broken while suspended in sync/timeout/enable-break, a putter waiting, raises the break and takes nothing"
  ;; suspend it in its sync, start a putter, break it, resume it: the
  ;; break must win (the put could not commit while it was suspended),
  ;; the put's value must stay in the channel; syncer and putter on the
  ;; main pool or a pool of their own, steps apart or back to back: for
  ;; real (120 trials, random gaps), then under simulation, where each
  ;; seed picks the pools and the gaps
  (define (trial pool-m pool-p gap)
    (let* ([ch (make-channel)] [got (box 'none)] [in (make-semaphore 0)]
           [m (thread (lambda ()
                        (guard (e [(break-condition? e) (if (eq? (unbox got) 'none) 'broken-in-sync 'broken-after)])
                          (parameterize-break #f
                            (semaphore-post in)
                            (set-box! got (sync/timeout/enable-break 5 ch))
                            'returned)))
                      #:pool pool-m #:keep 'results)])
      (semaphore-wait in)
      (case (gap) [(0) (void)] [(1) (yield)] [else (sleep 0.001)])
      (thread-suspend m)
      (let ([p (thread (lambda () (channel-put ch 'v)) #:pool pool-p)])
        (case (gap) [(0) (void)] [(1) (yield)] [else (sleep 0.001)])
        (break-thread m)
        (thread-resume m)
        (let* ([r (sync/timeout 5 (wrap-evt m (lambda (m) (thread-wait m))))]
               [left (sync/timeout 5 ch)])
          (kill-thread p)
          (list r (unbox got) left)))))
  (let ([bad '()])
    (do ([i 0 (+ i 1)]) ((= i 120))
      (let* ([pm (if (even? i) #f 'own)] [pp (if (even? (quotient i 2)) #f 'own)]
             [r (trial pm pp (lambda () (random 3)))])
        (unless (equal? r '(broken-in-sync none v)) (set! bad (cons (list i pm pp r) bad)))))
    (check-equal "every trial: break raised in the sync, value left" '() bad))
  (simulated 200 1
    (lambda ()
      (let* ([i (quotient (simulation-seed) 2)]   ; both schedulers see each choice
             [gaps (list (mod (quotient i 4) 3) (mod (quotient i 12) 3))]
             [gap (lambda () (let ([g (car gaps)]) (set! gaps (cdr gaps)) g))])
        (check-equal "break raised in the sync, value left" '(broken-in-sync none v)
          (trial (if (even? i) #f 'own) (if (even? (quotient i 2)) #f 'own) gap))))))

(test "stress: a break sent from another OS thread as the target enables breaks for its sync is never lost"
  ;; the target loops entering sync/timeout/enable-break from a disabled
  ;; extent; a break that both sides miss (the target's look at the
  ;; pending break and the breaker's look at its flag passing each other)
  ;; would wait for the sync's timeout (0.5 s)
  (let ([pm (make-parallel-thread-pool 1)] [pt (make-parallel-thread-pool 1)] [late '()])
    (do ([i 0 (+ i 1)]) ((= i 300))
      (let* ([ready (make-semaphore 0)]
             [m (thread (lambda ()
                          (current-error-port (open-output-string))
                          (semaphore-post ready)
                          (let loop () (parameterize-break #f (sync/timeout/enable-break 0.5 never-evt)) (loop)))
                        pm)])
        (semaphore-wait ready)
        (let ([ms (thread-wait (thread (lambda ()
                                        (let spin ([k (random 20000)]) (unless (= k 0) (spin (- k 1))))
                                        (let ([t0 (current-inexact-monotonic-milliseconds)])
                                          (break-thread m)
                                          (sync/timeout 5 m)
                                          (- (current-inexact-monotonic-milliseconds) t0)))
                                      pt 'results))])
          (when (> ms 250) (set! late (cons (list i ms) late))))))
    (parallel-thread-pool-close pm)
    (parallel-thread-pool-close pt)
    (check-equal "no break waited for a timeout" '() late)))

(test "break-thread of oneself raises at once"
  (let ([c (raised (lambda () (break-thread (current-thread))))])
    (check "break" (break-condition? c))))

(test "a break caught in an inner parameterize-break #t leaves the outer #f in force, under simulation"
  (simulated 200 1
    (lambda ()
      (let* ([t0 (now-ms)]
             [in (make-semaphore 0)]
             [t (thread (lambda ()
                          (parameterize-break #f
                            (semaphore-post in)
                            (sleep 0.05)
                            (list (guard (e [(break-condition? e) 'caught]) (parameterize-break #t 'x))
                                  (break-enabled))))
                        #:keep 'results)])
        (semaphore-wait in)
        (break-thread t)
        (check-equal "caught inside, breaks still off after" '(caught #f)
          (sync/timeout 5 (wrap-evt t (lambda (t) (thread-wait t)))))
        (check-equal "after its 50 ms sleep" 50. (- (now-ms) t0))))))

(test "leaving parameterize-break #f delivers a pending break at once"
  ;; normal return, an escape through a continuation, and re-entry by
  ;; (break-enabled #t): the break comes before the next step
  (let* ([steps (box 0)]
         [t (thread (lambda ()
                      (current-error-port (open-output-string))
                      (parameterize-break #f (break-thread (current-thread)))
                      (let loop ([i 0]) (when (< i 50000000) (set-box! steps i) (loop (+ i 1))))))])
    (check "ended" (sync/timeout 5 t))
    (check-equal "no step ran after the parameterize-break" 0 (unbox steps))
    (check "counted as broken, not returned" (eq? 'failed (thread-wait t (lambda () 'failed)))))
  (let ([c (raised (lambda ()
                     (call/cc (lambda (k) (parameterize-break #f (break-thread (current-thread)) (k 'escaped))))
                     'after-escape))])
    (check "an escape out of parameterize-break #f is broken" (break-condition? c)))
  (let ([c (raised (lambda ()
                     (parameterize-break #f
                       (break-thread (current-thread))
                       (break-enabled #t)
                       'after-enable)))])
    (check "(break-enabled #t) delivers" (break-condition? c)))
  (let ([r (guard (e [(break-condition? e) 'broken])
             (parameterize-break #f
               (break-thread (current-thread))
               (parameterize-break #f 'inner)))])
    (check-equal "a nested #f delivers nothing; the outer one's end does" 'broken r)))

;; ---------------------------------------------------------------- suspend
(test "a suspended thread takes no part in a channel rendezvous, under simulation"
  (simulated 200 1
    (lambda ()
      (let* ([ch (make-channel)] [got (box '())]
             [t (thread (lambda () (let loop () (set-box! got (cons (channel-get ch) (unbox got))) (loop))))])
        (sleep 0.02)                    ; t waits in channel-get
        (thread-suspend t)
        (check "not running" (not (thread-running? t)))
        (check "not dead" (not (thread-dead? t)))
        (let ([t0 (now-ms)])
          (check "no rendezvous while suspended" (not (sync/timeout 0.1 (channel-put-evt ch 1))))
          (check-equal "the put timed out at 100 ms" 100. (- (now-ms) t0)))
        (thread-suspend t)                 ; no effect
        (thread-resume t)
        (check "running again" (thread-running? t))
        (channel-put ch 2)
        (sleep 0.01)                    ; t waits in channel-get again
        (check-equal "resumed thread got the value, once" '(2) (unbox got))
        (kill-thread t)))))

(test "suspend stops a looping thread (coroutine and parallel); resume restarts it"
  (for-each
    (lambda (pool)
      (let* ([counter (box 0)]
             [t (thread (lambda () (let loop () (set-box! counter (+ (unbox counter) 1)) (loop))) pool)])
        (check "started" (wait-until (lambda () (> (unbox counter) 0)) 2))
        (thread-suspend t)
        ;; a running parallel thread stops at its next safe point: wait
        ;; until the counter holds still for 50 ms
        (let ([c (let loop ([tries 0])
                   (let ([c (unbox counter)])
                     (sleep 0.05)
                     (if (or (= c (unbox counter)) (> tries 40)) c (loop (+ tries 1)))))])
          (check-equal (format "~a: stopped" pool) c (unbox counter))
          (sleep 0.05)
          (check-equal (format "~a: stays stopped" pool) c (unbox counter))
          (thread-resume t)
          (check (format "~a: restarted" pool) (wait-until (lambda () (> (unbox counter) c)) 2)))
        (kill-thread t)
        (check "dead" (thread-dead? t))))
    (list #f 'own)))

(test "a thread can suspend itself; suspend/resume evts; kill while suspended"
  (let* ([flag (box #f)]
         [t (thread (lambda () (thread-suspend (current-thread)) (set-box! flag #t)))])
    (check-equal "suspend evt" t (sync/timeout 2 (thread-suspend-evt t)))
    (check "suspended" (not (thread-running? t)))
    (check "not yet" (not (unbox flag)))
    (let ([re (thread-resume-evt t)])
      (check "resume evt not ready" (not (sync/timeout 0 re)))
      (thread-resume t)
      (check-equal "resume evt ready" t (sync/timeout 2 re)))
    (thread-wait t)
    (check "continued" (unbox flag))
    (check "dead: suspend evt never ready" (not (sync/timeout 0 (thread-suspend-evt t)))))
  (let ([t (thread (lambda () (sync never-evt)))])
    (thread-suspend t)
    (kill-thread t)
    (check "killed while suspended" (thread-dead? t))
    (thread-resume t)))

(test "thread-suspend and thread-resume return void"
  (let ([t (thread (lambda () (sync never-evt)))])
    (check "suspend" (eq? (void) (thread-suspend t)))
    (check "resume" (eq? (void) (thread-resume t)))
    (check "resume of a running thread" (eq? (void) (thread-resume t)))
    (kill-thread t)))

;; ---------------------------------------------------------------- state
(test "thread-running? and thread-dead?"
  (let* ([sem (make-semaphore 0)] [t (thread (lambda () (semaphore-wait sem)))])
    (check "running (blocked counts as running)" (thread-running? t))
    (check "not dead" (not (thread-dead? t)))
    (semaphore-post sem)
    (thread-wait t)
    (check "dead" (thread-dead? t))
    (check "not running" (not (thread-running? t)))
    (check "main running" (thread-running? (current-thread)))))

(test "thread-dead-evt is the same evt on each call; a thread is an evt; under simulation"
  (simulated 200 1
    (lambda ()
      (let* ([t0 (now-ms)] [t (thread (lambda () (sleep 0.02)))])
        (check "eq" (eq? (thread-dead-evt t) (thread-dead-evt t)))
        (check "not ready yet" (not (sync/timeout 0 (thread-dead-evt t))))
        (check-equal "sync on the thread gives the thread" t (sync t))
        (check-equal "at the end of its 20 ms sleep" 20. (- (now-ms) t0))
        (check-equal "dead evt result is the evt" (thread-dead-evt t) (sync (thread-dead-evt t)))))))

(test "current-thread"
  (let* ([ch (make-channel)] [ch2 (make-channel)]
         [t (thread (lambda () (channel-put ch (current-thread))))]
         [p (thread (lambda () (channel-put ch2 (current-thread))) #:pool 'own)])
    (check "coroutine" (eq? t (channel-get ch)))
    (check "parallel" (eq? p (channel-get ch2)))
    (check "main is a thread" (thread? (current-thread)))
    (check "stable" (eq? (current-thread) (current-thread)))
    (check "distinct" (not (eq? t (current-thread))))))

;; ---------------------------------------------------------------- time
(test "sleep durations are roughly right"
  (let ([ms (elapsed-ms (lambda () (sleep 0.1)))])
    (check (format "sleep 0.1 took ~a ms" ms) (and (>= ms 95) (< ms 600))))
  (let ([ms (elapsed-ms (lambda () (sleep (make-time 'time-duration 50000000 0))))])
    (check (format "time-duration 50ms took ~a ms" ms) (and (>= ms 45) (< ms 500))))
  (let ([ms (elapsed-ms (lambda () (sleep 0) (sleep) (sleep 1/100)))])
    (check "sleep 0, no argument, exact fraction" (< ms 500)))
  (let* ([t (thread (lambda () (elapsed-ms (lambda () (sleep 0.05)))) #:pool 'own #:keep 'results)]
         [ms (thread-wait t)])
    (check (format "parallel sleep 0.05 took ~a ms" ms) (and (>= ms 45) (< ms 500)))))

(test "sleeping threads wake in deadline order, at their deadlines, under simulation"
  (simulated 200 1
    (lambda ()
      (let* ([t0 (now-ms)]
             [out (make-async-channel)]
             [ts (map (lambda (d) (thread (lambda () (sleep (/ d 1000.)) (async-channel-put out (cons d (- (now-ms) t0))))))
                      '(60 20 40))])
        (for-each thread-wait ts)
        (check-equal "order and wake times" '((20 . 20.) (40 . 40.) (60 . 60.))
          (list (async-channel-get out) (async-channel-get out) (async-channel-get out)))))))

(test "yield lets other runnable threads go first"
  (let* ([log '()]
         [mk (lambda (tag) (thread (lambda () (do ([i 0 (+ i 1)]) ((= i 3)) (set! log (cons tag log)) (yield)))))]
         [a (mk 'a)] [b (mk 'b)])
    (thread-wait a) (thread-wait b)
    (check-equal "interleaved" '(a b a b a b) (reverse log))
    (yield)                                  ; alone: returns
    (check "yield returns void" (eq? (void) (yield)))))

(test "a coroutine thread in an infinite loop does not starve the others"
  (let* ([spin (thread (lambda () (let loop () (loop))))]
         [flag (box #f)]
         [t (thread (lambda () (set-box! flag #t)))])
    (check "other thread ran" (eq? t (sync/timeout 3 t)))
    (check "main still runs" (unbox flag))
    (let ([ms (elapsed-ms (lambda () (sleep 0.05)))])
      (check (format "main sleeps despite the spinner (~a ms)" ms) (< ms 1000)))
    (kill-thread spin)))

(test "a parallel pool with more threads than workers runs them all"
  (let* ([pool (make-parallel-thread-pool 2)]
         [n 8]
         [counters (make-vector n 0)]
         [stop (box #f)]
         [ts (map (lambda (i)
                    (thread (lambda ()
                              (let loop ()
                                (unless (unbox stop)
                                  (vector-set! counters i (+ 1 (vector-ref counters i)))
                                  (loop)))
                              i)
                            #:pool pool #:keep 'results))
                  (iota n))])
    (check "all progress"
      (wait-until (lambda () (let loop ([i 0]) (or (= i n) (and (> (vector-ref counters i) 0) (loop (+ i 1)))))) 5))
    (set-box! stop #t)
    (check-equal "all finish" (iota n) (map thread-wait ts))
    (parallel-thread-pool-close pool)))

(test "processor-count"
  (let ([n (processor-count)])
    (check "exact positive integer" (and (fixnum? n) (> n 0)))))

;; ---------------------------------------------------------------- mailboxes
(test "mailbox: send, receive, try-receive, FIFO"
  (let* ([t (thread (lambda ()
                      (let* ([a (thread-receive)] [b (thread-receive)] [c (thread-try-receive)])
                        (list a b c)))
                    #:keep 'results)])
    (thread-send t 1)
    (thread-send t 2)
    (check-equal "order" '(1 2 #f) (thread-wait t)))
  (check "try-receive on empty" (not (thread-try-receive)))
  (thread-send (current-thread) 'self)
  (check-equal "send to self" 'self (thread-receive)))

(test "mailbox: receive-evt does not dequeue; rewind puts the LAST element next"
  (check "receive-evt not ready" (not (sync/timeout 0 (thread-receive-evt))))
  (thread-send (current-thread) 'm1)
  (check-equal "receive-evt result is itself" (thread-receive-evt) (sync/timeout 0 (thread-receive-evt)))
  (check-equal "still there" 'm1 (thread-receive))
  (thread-send (current-thread) 'old)
  (thread-rewind-receive '(1 2 3))
  (check-equal "rewind order" '(3 2 1 old)
    (list (thread-receive) (thread-receive) (thread-receive) (thread-receive)))
  (thread-rewind-receive '())
  (check "empty" (not (thread-try-receive))))

(test "mailbox: receive-evt wakes a waiting thread (simulated); mail across pools (real)"
  (define (exchange line-up?)
    (let* ([main (current-thread)]
           [t (thread (lambda ()
                        (let ([e (sync (thread-receive-evt))])
                          (thread-send main (list 'got (thread-receive) (eq? e (thread-receive-evt))))))
                      #:pool 'own)])
      (when line-up? (sleep 0.02))      ; simulated: t waits on its receive-evt
      (thread-send t 'hello)
      (check "reply arrives" (sync/timeout 2 (thread-receive-evt)))
      (check-equal "reply" '(got hello #t) (thread-try-receive))
      (thread-wait t)))
  (simulated 200 1 (lambda () (exchange #t)))
  (exchange #f))

(test "thread-send to a dead thread"
  (let ([t (thread void)])
    (thread-wait t)
    (let ([c (raised (lambda () (thread-send t 1)))])
      (check "default raises &assertion" (and c ((assertion-from? 'thread-send) c)))
      (check "message" (string-contains? (condition-message c) "not running")))
    (check-equal "fail thunk in tail position" '(x y)
      (values->list (lambda () (thread-send t 1 (lambda () (values 'x 'y))))))
    (check "fail #f gives #f" (eq? #f (thread-send t 1 #f)))
    (check-raises "bad fail" (assertion-from? 'thread-send) (lambda () (thread-send t 1 5))))
  (let* ([t (thread (lambda () (sync never-evt)))])
    (thread-suspend t)
    (check "suspended thread still receives" (eq? (void) (thread-send t 'x)))
    (kill-thread t)))

;; ---------------------------------------------------------------- parameters
(test "parameterize in interleaving coroutine threads never leaks"
  (let* ([p (make-parameter 'top)]
         [bad (box '())]
         [mk (lambda (tag)
               (thread (lambda ()
                         (parameterize ([p tag])
                           (do ([i 0 (+ i 1)]) ((= i 200))
                             (unless (eq? (p) tag) (set-box! bad (cons (list tag (p)) (unbox bad))))
                             (when (even? i) (p tag))    ; set inside the parameterize
                             (yield)))
                         (unless (eq? (p) 'top) (set-box! bad (cons (list tag 'after (p)) (unbox bad)))))))]
         [a (mk 'a)] [b (mk 'b)])
    (do ([i 0 (+ i 1)]) ((= i 50))
      (unless (eq? (p) 'top) (set-box! bad (cons (list 'main (p)) (unbox bad))))
      (yield))
    (thread-wait a) (thread-wait b)
    (check-equal "no leaks" '() (unbox bad))
    (check-equal "main" 'top (p))))

(test "parameterize isolation under preemption (no yield)"
  (let* ([p (make-parameter 0)]
         [bad (box 0)]
         [mk (lambda (tag)
               (thread (lambda ()
                         (parameterize ([p tag])
                           (let ([end (+ (now-ms) 150)])
                             (let loop ()
                               (unless (eqv? (p) tag) (set-box! bad (+ 1 (unbox bad))))
                               (when (< (now-ms) end) (loop))))))))]
         [a (mk 1)] [b (mk 2)])
    (thread-wait a) (thread-wait b)
    (check-equal "no leaks" 0 (unbox bad))))

(test "a new thread gets a snapshot of its creator's parameter values"
  ;; under simulation: the child sleeps while its creator sets its own values
  (simulated 200 1
    (lambda ()
      (let ([p (make-parameter 1)] [q (make-parameter 'q0)])
        (q 'q1)                                   ; a plain set before creation
        (parameterize ([p 5])
          (let ([t (thread (lambda ()
                             (let ([seen (list (p) (q))])
                               (p 6) (q 'child)
                               (sleep 0.03)
                               (append seen (list (p) (q)))))
                           #:keep 'results)])
            (p 7)
            (q 'parent)
            (check-equal "child's view" '(5 q1 6 child) (thread-wait t))
            (check-equal "creator unaffected" '(7 parent) (list (p) (q)))))
        (check-equal "outside parameterize" 1 (p)))))
  (let ([p (make-parameter 1)])
    ;; across pools, for real
    (parameterize ([p 'pooled])
      (check-equal "parallel child" 'pooled (thread-wait (thread (lambda () (p)) #:pool 'own #:keep 'results))))))

(test "make-parameter: filter and bad arguments"
  (let ([p (make-parameter 1 (lambda (x) (* x 10)))])
    (check-equal "filtered initial" 10 (p))
    (parameterize ([p 2]) (check-equal "filtered parameterize" 20 (p)))
    (p 3)
    (check-equal "filtered set" 30 (p)))
  (check-raises "bad filter" (assertion-from? 'make-parameter) (lambda () (make-parameter 1 5)))
  (check-raises "parameterize non-parameter" assertion-violation?
    (lambda () (parameterize ([5 1]) 'x))))

(test "current-output-port parameterize does not leak to another thread, under simulation"
  (simulated 200 1
    (lambda ()
      (let* ([sp (open-output-string)]
             [seen (box #f)]
             [go (make-semaphore 0)]
             [a (thread (lambda () (parameterize ([current-output-port sp]) (semaphore-post go) (sleep 0.05) (display "in-a"))))]
             [b (thread (lambda () (semaphore-wait go) (set-box! seen (eq? (current-output-port) sp))))])
        (thread-wait a) (thread-wait b)
        (check "b did not see a's port" (not (unbox seen)))
        (check-equal "a wrote to its port" "in-a" (get-output-string sp))
        (check "main's port restored" (not (eq? (current-output-port) sp)))))))

(test "current-thread-pool: #f on the main pool, the pool inside a parallel thread"
  (check-equal "main" #f (current-thread-pool))
  (check-equal "coroutine thread" #f (thread-wait (thread (lambda () (current-thread-pool)) #:keep 'results)))
  (let* ([p (make-parallel-thread-pool 2)]
         [r (thread-wait
              (thread (lambda ()
                        (let* ([q (current-thread-pool)]
                               [sib (thread (lambda () (current-thread-pool)) #:pool q #:keep 'results)])
                          (list q (thread-wait sib))))
                      #:pool p #:keep 'results))])
    (check "the parallel pool" (eq? (car r) p))
    (check "a sibling made with it runs on the same pool" (eq? (cadr r) p))
    (parallel-thread-pool-close p)))

(test "sleep durations are exact on the virtual clocks under simulation"
  ;; the real durations: "sleep durations are roughly right" above
  (simulated 50 1
    (lambda ()
      (define (both-clocks thunk)
        (let ([w0 (current-inexact-milliseconds)] [ms (elapsed-ms thunk)])
          (check-equal "the wall clock moves with the monotonic one" ms (- (current-inexact-milliseconds) w0))
          ms))
      (check-equal "sleep 0.05" 50. (both-clocks (lambda () (sleep 0.05))))
      (check-equal "sleep 1/100" 10. (both-clocks (lambda () (sleep 1/100))))
      (check-equal "time-duration 50 ms" 50. (both-clocks (lambda () (sleep (make-time 'time-duration 50000000 0)))))
      (check-equal "sleep 0 and no argument" 0. (both-clocks (lambda () (sleep 0) (sleep))))
      (check-equal "parallel sleep 0.05" 50.
        (thread-wait (thread (lambda () (elapsed-ms (lambda () (sleep 0.05)))) #:pool 'own #:keep 'results))))))

(test "records print briefly"
  (define (printed x) (with-output-to-string (lambda () (write x))))
  (check-equal "thread mailbox is an async channel" "#<async-channel>" (printed (make-async-channel)))
  (check-equal "thread" #t (let ([s (printed (current-thread))]) (string=? "#<thread" (substring s 0 8)))))

(test "death latch: waiters racing a thread's end on two parallel pools see it once"
  ;; the latch is made only when someone waits; waiters that come before,
  ;; during and after the end must all return, and thread-dead-evt stays one evt
  (let ([pools (list (make-parallel-thread-pool 2) (make-parallel-thread-pool 2))] [n 2000] [woken (box 0)])
    (let ([targets (map (lambda (i) (thread (lambda () (when (odd? i) (yield)) i) #:pool (list-ref pools (mod i 2)) #:keep 'results))
                        (iota n))])
      (let ([waiters (map (lambda (t i)
                            (thread (lambda ()
                                      (when (zero? (mod i 3)) (yield))
                                      (check-equal "thread-wait result" i (thread-wait t))
                                      (check "dead-evt ready" (eq? t (sync t)))
                                      (let loop () (let ([v (unbox woken)]) (unless (box-cas! woken v (+ v 1)) (loop)))))
                                    #:pool (list-ref pools (mod (+ i 1) 2))))
                          targets (iota n))])
        (for-each thread-wait waiters)
        (check-equal "every waiter woke once" n (unbox woken))
        (let ([t (car targets)])
          (check "thread-dead-evt is one evt" (eq? (thread-dead-evt t) (thread-dead-evt t)))
          (check "a dead thread's evt is ready" (eq? (thread-dead-evt t) (sync/timeout 0 (thread-dead-evt t)))))
        (for-each parallel-thread-pool-close pools)))))

(done)
