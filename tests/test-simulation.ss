#!chezscheme
;;; Deterministic simulation (issue 33): a seed replays a run exactly
;;; (output and step count); virtual time jumps over sleeps and timeouts;
;;; deadlocks, raises and livelocks fail the run with the seed that
;;; replays it; simulate-many finds ordering bugs; nondeterministic I/O is
;;; refused; and spindle's own primitives (threads, channels, semaphores,
;;; events, scopes, futures, custodians, (util concurrent)) keep their
;;; contracts under many seeds of both schedulers.  Seeds are fixed, so a
;;; failure here is a failure every run.
(import (except (chezscheme) thread? sleep make-parameter parameterize make-mutex mutex?
                mutex-name mutex-acquire mutex-release condition-wait condition-signal)
        (except (spindle) current-thread thread?)
        (only (spindle) thread?)
        (spindle simulation)
        (only (srfi :18) make-mutex mutex-lock! mutex-unlock!)
        (only (util concurrent shared-queue) make-shared-queue shared-queue-get! shared-queue-put!)
        (only (spindle private os processes) shell-command own-pid)
        (harness))

(test-limit 60)

(define (failure-of thunk)
  (guard (c [(simulation-failure? c) c]) (thunk) #f))

(define (real-ms) (real-time))

;; A chatty program: coroutine and parallel threads, a channel, a
;; semaphore, a choice with a timeout, sleeps, futures.  Its transcript
;; depends on the interleaving.
(define (chatty)
  (let* ([log '()]
         [say (lambda (x) (set! log (cons x log)))]
         [ch (make-channel)]
         [sem (make-semaphore 1)]
         [p (make-parallel-thread-pool 3)]
         [workers
          (map (lambda (i)
                 (thread (lambda ()
                           (do ([k 0 (+ k 1)]) ((= k 3))
                             (call-with-semaphore sem (lambda () (say (list 'w i k))))
                             (channel-put ch (* i k))
                             (sleep (* 0.001 i))))
                         #:pool (if (odd? i) p #f)))
               '(1 2 3 4))]
         [sum (let loop ([n 0] [acc 0])
                (if (= n 12)
                    acc
                    (let ([v (sync/timeout 1 ch)]) (say (list 'got v)) (loop (+ n 1) (+ acc v)))))])
    (for-each thread-wait workers)
    (parallel-thread-pool-close p)
    (let ([f (future (lambda () (say 'future) 7))])
      (say (list 'touched (touch f))))
    (list sum (reverse log) (simulation-steps) (current-inexact-monotonic-milliseconds))))

(test "the same seed replays the same run 100 times out of 100"
  (for-each
    (lambda (seed)
      (let ([first (simulate chatty #:seed seed)])
        (do ([i 0 (+ i 1)]) ((= i 99))
          (check-equal (list 'seed seed 'replay i) first (simulate chatty #:seed seed)))))
    '(11 12)))

(test "different seeds give different interleavings"
  (let ([runs (map (lambda (s) (cadr (simulate chatty #:seed s))) (iota 20))])
    (check "several transcripts" (> (length (fold-left (lambda (acc r) (if (member r acc) acc (cons r acc))) '() runs)) 3))
    (check "same sum" (for-all (lambda (s) (= (car (simulate chatty #:seed s)) 30)) (iota 20)))))

(test "keywords, positional arguments and the scheduler a seed picks"
  (check-equal "positional" (simulate chatty 5 'random) (simulate chatty #:scheduler 'random #:seed 5))
  (check-equal "odd seeds are pct" 'pct (simulation-failure-scheduler (failure-of (lambda () (simulate (lambda () (car '())) #:seed 3)))))
  (check-equal "even seeds are random" 'random (simulation-failure-scheduler (failure-of (lambda () (simulate (lambda () (car '())) #:seed 4)))))
  (check-equal "seed inside" 42 (simulate (lambda () (simulation-seed)) #:seed 42))
  (check "in-simulation?" (and (not (in-simulation?)) (simulate (lambda () (in-simulation?)) #:seed 1)))
  (check-raises "bad scheduler" (assertion-from? 'simulate) (lambda () (simulate void #:scheduler 'fifo)))
  (check-raises "bad seed" (assertion-from? 'simulate) (lambda () (simulate void #:seed -1)))
  (check-raises "bad thunk" (assertion-from? 'simulate) (lambda () (simulate 5)))
  (check-raises "steps outside" (assertion-from? 'simulation-steps) simulation-steps)
  (check-raises "nested" (lambda (c) (and (simulation-failure? c) (eq? (simulation-failure-kind c) 'exception)))
                (lambda () (simulate (lambda () (simulate void)) #:seed 1))))

(test "SPINDLE_SEED picks the seed"
  (putenv "SPINDLE_SEED" "77")
  (let ([a (simulate (lambda () (simulation-seed)))]
        [n (simulate-many (lambda () (simulation-seed)) #:runs 50)])
    (putenv "SPINDLE_SEED" "")
    (check-equal "simulate" 77 a)
    (check-equal "simulate-many replays one run" 1 n)))

(test "a simulated hour of sleeps takes well under a second"
  (let* ([t0 (real-ms)]
         [r (simulate
              (lambda ()
                (let ([start (current-inexact-monotonic-milliseconds)]
                      [ts (map (lambda (i) (thread (lambda () (do ([k 0 (+ k 1)]) ((= k 60)) (sleep 1)))))
                               (iota 60))])
                  (for-each thread-wait ts)
                  (- (current-inexact-monotonic-milliseconds) start)))
              #:seed 3)]
         [took (- (real-ms) t0)])
    (printf "  60 threads x 60 sleeps of 1 s: ~a simulated s in ~a ms\n" (/ r 1000.) took)
    (check-equal "virtual minute per thread" 60000. r)
    (check "under a second" (< took 1000)))
  (let* ([t0 (real-ms)]
         [r (simulate (lambda () (do ([k 0 (+ k 1)]) ((= k 3600)) (sleep 1)) (current-inexact-monotonic-milliseconds)) #:seed 4)]
         [took (- (real-ms) t0)])
    (printf "  one thread, 3600 sleeps of 1 s: ~a ms\n" took)
    (check-equal "an hour" (+ 1000000. 3600000.) r)
    (check "under a second" (< took 1000))))

(test "virtual time: alarms, sync/timeout, deadlines, the clocks"
  (simulate
    (lambda ()
      (let ([m0 (current-inexact-monotonic-milliseconds)] [w0 (current-inexact-milliseconds)])
        (check-equal "fixed start" 1767226600000. w0)
        (check-equal "timeout" #f (sync/timeout 2.5 (make-channel)))
        (check-equal "2.5 s passed" 2500. (- (current-inexact-monotonic-milliseconds) m0))
        (sync (alarm-evt (+ (current-inexact-milliseconds) 500)))
        (check-equal "alarm" 3000. (- (current-inexact-milliseconds) w0))
        (check-raises "with-timeout" timeout-condition? (lambda () (with-timeout 10 (sleep 3600))))
        (check-equal "10 s more" 13000. (- (current-inexact-monotonic-milliseconds) m0))
        (check-equal "move-on-after" #f (move-on-after 1 (semaphore-wait (make-semaphore 0))))
        (check-equal "done" 'ok (move-on-after 5 (sleep 4) 'ok))
        (check-equal "total" 18000. (- (current-inexact-monotonic-milliseconds) m0))))
    #:seed 8))

(test "a deadlock fails the run with the dump and the seed"
  (let ([c (failure-of
             (lambda ()
               (simulate (lambda ()
                           (let ([a (make-semaphore 0)] [ch (make-channel)])
                             (thread (lambda () (channel-get ch)))
                             (semaphore-wait a)))
                         #:seed 21)))])
    (check "failed" c)
    (check-equal "kind" 'deadlock (simulation-failure-kind c))
    (check-equal "seed" 21 (simulation-failure-seed c))
    (check "dump names both threads"
           (and (string-contains? (simulation-failure-detail c) "thread root: parked waits on semaphore")
                (string-contains? (simulation-failure-detail c) "thread 1: parked waits on channel")))
    (check "message says how to replay" (string-contains? (condition-message c) "SPINDLE_SEED=21"))
    (check-equal "replays" (simulation-failure-steps c)
                 (simulation-failure-steps
                   (failure-of (lambda () (simulate (lambda ()
                                                      (let ([a (make-semaphore 0)] [ch (make-channel)])
                                                        (thread (lambda () (channel-get ch)))
                                                        (semaphore-wait a)))
                                                    #:seed 21)))))))

(test "a raise in any thread fails the run; a livelock fails at max-steps"
  (let ([c (failure-of (lambda () (simulate (lambda () (thread (lambda () (error 'child "boom"))) (sleep 1) 'end)
                                            #:seed 2)))])
    (check-equal "kind" 'exception (simulation-failure-kind c))
    (check "thread and raised" (and (thread? (car (simulation-failure-detail c))) (error? (cdr (simulation-failure-detail c)))))
    (check "message" (string-contains? (condition-message c) "thread 1 raised")))
  (let ([c (failure-of (lambda () (simulate (lambda () (car 1)) #:seed 2)))])
    (check "the thunk's raise" (and (not (car (simulation-failure-detail c))) (assertion-violation? (cdr (simulation-failure-detail c))))))
  (let ([c (failure-of (lambda () (simulate (lambda () (let loop () (yield) (loop))) #:seed 2 #:max-steps 300)))])
    (check-equal "max-steps" '(max-steps 300) (list (simulation-failure-kind c) (simulation-failure-steps c))))
  (check-equal "a caught raise is no failure" 'caught
               (simulate (lambda () (thread-wait (thread (lambda () (guard (e [#t 'caught]) (raise 'x))))) 'caught) #:seed 2)))

;; Thread 1 publishes a value after setting a flag: a reader that sees
;; the flag and reads the value at once may read it before it is set.
(define (publish-race)
  (let ([ready #f] [value #f])
    (thread (lambda () (set! ready #t) (yield) (set! value 42)))
    (let loop () (unless ready (yield) (loop)))
    (unless (eqv? value 42) (error 'reader "read the value before it was published" value))))

(test "simulate-many finds an ordering bug and its seed replays it"
  (let ([c (failure-of (lambda () (simulate-many publish-race #:runs 200 #:seed 1000)))])
    (check "found" c)
    (printf "  publish race: run ~a, seed ~a, step ~a\n"
            (simulation-failure-run c) (simulation-failure-seed c) (simulation-failure-steps c))
    (let ([again (failure-of (lambda () (simulate publish-race #:seed (simulation-failure-seed c))))])
      (check-equal "replay" (list 'exception (simulation-failure-steps c))
                   (list (simulation-failure-kind again) (simulation-failure-steps again)))))
  (check-equal "a correct program passes every run" 100
               (simulate-many (lambda () (let ([ch (make-channel)]) (thread (lambda () (channel-put ch 1))) (channel-get ch)))
                              #:runs 100)))

(test "real I/O is refused; pipes and call-blocking run in the simulation"
  (for-each
    (lambda (thunk)
      (let ([c (failure-of (lambda () (simulate thunk #:seed 1)))])
        (check "refused" (and c (string-contains? (condition-message (cdr (simulation-failure-detail c)))
                                                  "not deterministic in a simulation")))))
    (list (lambda () (tcp-connect "localhost" 9))
          (lambda () (tcp-listen 0))
          (lambda () (subprocess #f #f #f "/bin/true"))
          (lambda () (dynamic-place '(places kinds) 'silent-place))))
  (check-equal "allowed" #t
               (simulate (lambda () (let ([l (tcp-listen 0 4 #t "127.0.0.1")]) (tcp-close l) #t)) #:seed 1 #:allow-io #t))
  (check-equal "pipe" (list 100 "hello")
               (simulate
                 (lambda ()
                   (let-values ([(in out) (make-pipe 16)])
                     (thread (lambda ()
                               (put-bytevector out (make-bytevector 100 65)) (flush-output-port out)
                               (put-bytevector out (string->utf8 "hello")) (close-port out)))
                     (let* ([a (get-bytevector-n in 100)] [b (get-bytevector-all in)])
                       (list (bytevector-length a) (utf8->string b)))))
                 #:seed 6))
  (check-equal "call-blocking" 6 (simulate (lambda () (call-blocking * 2 3)) #:seed 1)))

;; ---------------------------------------------------------------- spindle under many seeds
(define runs 300)

(test "channels, choice and NACKs under simulation: each value once"
  (simulate-many
    (lambda ()
      (let* ([a (make-channel)] [b (make-channel)] [p (make-parallel-thread-pool 2)] [nacked 0]
             [senders (map (lambda (i) (thread (lambda () (channel-put (if (even? i) a b) i)) #:pool (and (odd? i) p)))
                           (iota 6))]
             [got (map (lambda (i)
                         (sync (nack-guard-evt (lambda (nack) (thread (lambda () (sync nack) (set! nacked (+ nacked 1)))) a))
                               b))
                       (iota 6))])
        (for-each thread-wait senders)
        (parallel-thread-pool-close p)
        (unless (equal? (list-sort < got) (iota 6)) (error 'channels "lost or duplicated" got))))
    #:runs runs #:seed 1))

(test "semaphores: mutual exclusion, and a killed waiter takes nothing"
  (simulate-many
    (lambda ()
      (let* ([s (make-semaphore 1)] [inside 0] [p (make-parallel-thread-pool 3)])
        (semaphore-wait s)
        ;; the victim waits behind main: killed, it must not keep the unit
        (let ([victim (thread (lambda () (call-with-semaphore s (lambda () (sleep 1)))))])
          (yield)
          (kill-thread victim)
          (semaphore-post s))
        (let ([ts (map (lambda (i)
                         (thread (lambda ()
                                   (do ([k 0 (+ k 1)]) ((= k 4))
                                     (call-with-semaphore s
                                       (lambda ()
                                         (set! inside (+ inside 1))
                                         (unless (= inside 1) (error 'semaphore "two holders"))
                                         (yield)
                                         (set! inside (- inside 1))))))
                                 #:pool (and (odd? i) p)))
                       (iota 4))])
          (for-each thread-wait ts)
          (parallel-thread-pool-close p)
          (unless (semaphore-try-wait? s) (error 'semaphore "unit lost")))))
    #:runs runs #:seed 100))

(test "a break never comes between call-with-semaphore's take and its winder"
  ;; the victim says where it is, then takes the unit; a break sent as it
  ;; does must either stop it before the take or reach it inside proc,
  ;; where the unit is given back
  (check-equal "every run passes" 300
    (simulate-many
      (lambda ()
        (let* ([s (make-semaphore 1)] [ch (make-channel)]
               [victim (thread (lambda ()
                                 (guard (e [(break-condition? e) 'broken])
                                   (channel-put ch 'here)
                                   (call-with-semaphore s (lambda () (sleep 1))))))])
          (channel-get ch)
          (break-thread victim)
          (thread-wait victim)
          (unless (semaphore-try-wait? s) (error 'call-with-semaphore "unit lost to a break"))))
      #:runs 300 #:seed 1)))

(test "thread mailboxes, kill, break and suspend under simulation"
  (simulate-many
    (lambda ()
      (let* ([got '()]
             [t (thread (lambda () (let loop () (set! got (cons (thread-receive) got)) (loop))))]
             [started (make-semaphore 0)]
             [sleeper (thread (lambda () (guard (e [(break-condition? e) 'broken]) (semaphore-post started) (sleep 100))))])
        (semaphore-wait started)
        (for-each (lambda (i) (thread-send t i)) (iota 5))
        (let loop () (unless (= (length got) 5) (sleep 0.01) (loop)))
        (kill-thread t)
        (break-thread sleeper)
        (thread-wait sleeper)
        (unless (equal? (reverse got) (iota 5)) (error 'mailbox "order" got))
        (unless (thread-dead? t) (error 'kill "alive"))))
    #:runs runs #:seed 200))

(test "task scopes and deadlines under simulation"
  (simulate-many
    (lambda ()
      (let ([ended 0])
        (check-equal "moved on" #f
                     (move-on-after 1
                       (call-with-task-scope
                         (lambda (sc)
                           (do ([i 0 (+ i 1)]) ((= i 3))
                             (scope-thread sc (lambda () (dynamic-wind void (lambda () (sleep 10)) (lambda () (set! ended (+ ended 1)))))))
                           (sleep 5)))))
        (unless (= ended 3) (error 'scope "children not unwound" ended))
        (let ([r (call-with-task-scope
                   (lambda (sc)
                     (let ([fs (map (lambda (i) (scope-future sc (lambda () (sleep (* 0.1 i)) (* i i)))) (iota 4))])
                       (map touch fs))))])
          (unless (equal? r '(0 1 4 9)) (error 'scope "futures" r)))))
    #:runs runs #:seed 300))

(test "futures and fsemaphores under simulation"
  (simulate-many
    (lambda ()
      (let* ([fs (make-fsemaphore 0)]
             [f1 (future (lambda () (fsemaphore-wait fs) 'after))]
             [f2 (future (lambda () (fsemaphore-post fs) (apply + (map/async (lambda (x) (* x x)) '(1 2 3)))))])
        (unless (equal? (list (touch f2) (touch f1)) '(14 after)) (error 'futures "values"))))
    #:runs runs #:seed 400))

(test "custodians under simulation: a shutdown ends every thread"
  (simulate-many
    (lambda ()
      (let* ([c (make-custodian)]
             [ts (parameterize ([current-custodian c])
                   (map (lambda (i) (thread (lambda () (let loop () (sync (make-channel) (alarm-evt (+ (current-inexact-milliseconds) 10))) (loop)))))
                        (iota 4)))])
        (sleep 0.05)
        (custodian-shutdown-all c)
        (unless (for-all thread-dead? ts) (error 'custodian "a thread survived"))))
    #:runs runs #:seed 500))

(test "SRFI-18 mutexes and (util concurrent) under simulation"
  (simulate-many
    (lambda ()
      (let* ([m (make-mutex)] [n 0] [q (make-shared-queue)]
             [ts (map (lambda (i)
                        (thread (lambda ()
                                  (do ([k 0 (+ k 1)]) ((= k 3))
                                    (mutex-lock! m) (let ([v n]) (yield) (set! n (+ v 1))) (mutex-unlock! m))
                                  (shared-queue-put! q i))))
                      (iota 3))])
        (let ([got (map (lambda (i) (shared-queue-get! q)) (iota 3))])
          (for-each thread-wait ts)
          (unless (= n 9) (error 'mutex "lost update" n))
          (unless (equal? (list-sort < got) '(0 1 2)) (error 'shared-queue "items" got)))))
    #:runs 150 #:seed 600))

;; The trace of a run under `spindle trace`: its events (name, kind,
;; thread), in order, without the times.
(define (traced-run seed out)
  (shell-command (format "bin/spindle trace -o ~a tests/support/sim-trace-child.ss ~a > ~a.stdout 2>/dev/null"
                         out seed out))
  (let ([text (call-with-input-file out get-string-all)]
        [printed (call-with-input-file (string-append out ".stdout") get-line)])
    (cons printed (trace-events text))))
;; Each event's name, kind (ph) and thread (the green thread its args
;; name), in file order: what orders the run, without times or pids.
(define (trace-events text)
  (let loop ([i 0] [acc '()])
    (let ([j (string-search text "{\"name\":" i)])
      (if (not j)
          (reverse acc)
          (let* ([end (or (string-search text "}" (+ j 1)) (string-length text))]
                 [event (substring text j end)])
            (loop end (cons (map (lambda (k) (field event k)) '("name" "ph" "thread")) acc)))))))
;; The text of "key":value in event, up to the next comma, or #f.
(define (field event key)
  (let ([at (string-search event (string-append "\"" key "\":") 0)])
    (and at
         (let* ([from (+ at (string-length key) 3)]
                [to (or (string-search event "," from) (string-length event))])
           (substring event from to)))))
(define (string-search s pat from)
  (let ([n (string-length s)] [m (string-length pat)])
    (let loop ([i from])
      (cond [(> (+ i m) n) #f]
            [(string=? (substring s i (+ i m)) pat) i]
            [else (loop (+ i 1))]))))

(test "spindle trace of a replay shows the same interleaving; another seed another"
  (let ([dir (format "/tmp/spindle-sim-trace-~a" (own-pid))])
    (shell-command (format "mkdir -p ~a" dir))
    (let ([one (traced-run 7 (format "~a/a.json" dir))]
          [again (traced-run 7 (format "~a/b.json" dir))]
          [other (traced-run 2 (format "~a/c.json" dir))])
      (check-equal "seed 7 puts a first" "(a b)" (car one))
      (check-equal "seed 2 puts b first" "(b a)" (car other))
      (check "the trace has events" (> (length (cdr one)) 10))
      (check-equal "seed 7 twice: the same events in the same order" (cdr one) (cdr again))
      (check "seed 2: another order" (not (equal? (cdr one) (cdr other)))))
    (shell-command (format "rm -rf ~a" dir))))

(test "simulate from a parallel thread, and again after a failed run"
  (check-equal "on an own pool" 42
               (thread-wait (thread (lambda () (simulate (lambda () (sleep 10) 42) #:seed 3)) #:pool 'own #:keep 'results)))
  (check "a deadlock" (failure-of (lambda () (simulate (lambda () (thread (lambda () (sleep 1)))
                                                          (semaphore-wait (make-semaphore 0)))
                                                        #:seed 3))))
  (check-equal "the next run" 'fine (simulate (lambda () (sleep 1) 'fine) #:seed 3)))

(test "outside a simulation, threads and timers are untouched"
  (simulate (lambda () (sleep 100)) #:seed 1)
  (let ([t0 (current-inexact-monotonic-milliseconds)])
    (sleep 0.05)
    (check "real time" (>= (- (current-inexact-monotonic-milliseconds) t0) 45.)))
  (check-equal "threads" 3 (thread-wait (thread (lambda () 3) #:keep 'results))))

(done)
