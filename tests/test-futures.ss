#!chezscheme
;;; Futures and fsemaphores (issue 3).  A scenario that needs threads
;;; lined up (a toucher inside a future's run when it is killed) or an
;;; exact elapsed time runs under `simulated`: many seeds of (spindle
;;; simulation), where a lineup sleep returns only once every other thread
;;; is blocked and virtual time is exact.  Nested, many and stress futures
;;; run on real parallel pools.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness)
        (spindle simulation))

(define (fib n) (if (fx< n 2) n (fx+ (fib (fx- n 1)) (fib (fx- n 2)))))
(define (pfib n)
  (if (fx< n 15)
      (fib n)
      (let ([a (future (lambda () (pfib (fx- n 1))))]
            [b (future (lambda () (pfib (fx- n 2))))])
        (+ (touch a) (touch b)))))

;; Runs thunk under `runs` seeds of the simulation, from seed 1: a failed
;; check fails the test with the seed that replays it.
(define (simulated runs thunk) (simulate-many thunk #:runs runs #:seed 1))
(define (now-ms) (current-inexact-monotonic-milliseconds))

(test "future result and multiple values"
  (check-equal "one" 42 (touch (future (lambda () 42))))
  (check-equal "values" '(1 2 3) (call-with-values (lambda () (touch (future (lambda () (values 1 2 3))))) list))
  (let ([f (future (lambda () (list 'x)))])
    (check "cached eq" (eq? (touch f) (touch f)))))

(test "exception re-raised by every touch"
  (let* ([obj (list 'boom)] [f (future (lambda () (raise obj)))])
    (check "first" (eq? obj (guard (c [#t c]) (touch f))))
    (check "second" (eq? obj (guard (c [#t c]) (touch f))))))

(test "nested futures: parallel fib with a cutoff"
  (check-equal "pfib 24" (fib 24) (pfib 24)))

(test "touch from several threads at once"
  (let* ([f (future (lambda () (sleep 0.05) (fib 20)))]
         [ts (map (lambda (pool) (thread (lambda () (touch f)) pool 'results))
                  (list #f #f 'own 'own (make-parallel-thread-pool 2)))])
    (check-equal "all agree" (make-list 5 (fib 20)) (map thread-wait ts)))
  ;; the same under simulation: the touchers wait for the running future,
  ;; or one of them runs it, in every interleaving
  (simulated 100
    (lambda ()
      (let* ([p (make-parallel-thread-pool 2)]
             [f (future (lambda () (sleep 0.05) (fib 10)))]
             [ts (map (lambda (pool) (thread (lambda () (touch f)) pool 'results))
                      (list #f #f 'own 'own p))])
        (check-equal "all agree" (make-list 5 (fib 10)) (map thread-wait ts))
        (parallel-thread-pool-close p)))))

(test "thousands of futures"
  (let ([fs (map (lambda (i) (future (lambda () (* i i)))) (iota 5000))])
    (check-equal "sum of squares" (apply + (map (lambda (i) (* i i)) (iota 5000))) (apply + (map touch fs)))))

(test "would-be-future runs at the first touch, in the toucher, under simulation"
  (simulated 100
    (lambda ()
      (let* ([ran #f] [f (would-be-future (lambda () (set! ran (current-thread)) (current-future)))])
        (sleep 0.02)                    ; every other thread has had its turn
        (check "not run yet" (not ran))
        (check "current-future is f" (eq? f (touch f)))
        (check "ran in toucher" (eq? ran (current-thread)))
        (check "outside a future" (not (current-future)))))))

(test "a future whose runner is killed is run again by the next touch, under simulation"
  ;; a would-be-future run by its toucher; a future no worker had started
  ;; (its pool's one worker busy), run by its toucher; a custodian
  ;; shutdown; a toucher waiting when the runner is killed.  Each body
  ;; sleeps 300 ms and its runner is killed inside it: a run again from
  ;; the kill ends exactly 300 ms after it.
  (define (touched-after f)             ; a new toucher's result and when it came
    (let* ([t0 (now-ms)]
           [r (sync/timeout 3 (wrap-evt (thread (lambda () (touch f)) #:keep 'results) thread-wait))])
      (list r (- (now-ms) t0))))
  (define toucher-ran 0)                ; runs where a, not f's thread, ran f
  (simulated 100
    (lambda ()
      (let* ([runs (box 0)]
             [f (would-be-future (lambda () (set-box! runs (+ 1 (unbox runs))) (sleep 0.3) 42))]
             [a (thread (lambda () (touch f)))])
        (sleep 0.1)                     ; a is inside f's body
        (kill-thread a)
        (check-equal "would-be-future: a later touch returns, run again" '(42 300.) (touched-after f))
        (check-equal "run twice" 2 (unbox runs)))
      ;; a future's own thread and its toucher race to run it: killed, the
      ;; toucher leaves it to be run again; the future's thread runs it once
      (let* ([pool (make-parallel-thread-pool 1)] [gate (make-semaphore 0)] [runners '()])
        (parameterize ([current-future-pool pool])
          (let* ([busy (future (lambda () (semaphore-wait gate)))]
                 [f (future (lambda () (set! runners (cons (current-thread) runners)) (sleep 0.3) 'late))]
                 [a (thread (lambda () (touch f)))])
            (sleep 0.1)
            (kill-thread a)
            (semaphore-post gate)
            (let ([by-a? (memq a runners)])
              (set! toucher-ran (+ toucher-ran (if by-a? 1 0)))
              (check-equal "future: a later touch returns" (list 'late (if by-a? 300. 200.)) (touched-after f))
              (check-equal "run again only if the toucher ran it" (if by-a? 2 1) (length runners)))
            (touch busy)))
        (parallel-thread-pool-close pool))
      (let* ([c (make-custodian)]
             [f (would-be-future (lambda () (sleep 0.3) 'again))]
             [started (make-semaphore 0)])
        (parameterize ([current-custodian c])
          (thread (lambda () (semaphore-post started) (touch f))))
        (check "toucher started" (sync/timeout 2 started))
        (sleep 0.05)
        (custodian-shutdown-all c)
        (check-equal "custodian shutdown: a later touch returns, run again" '(again 300.) (touched-after f)))
      (let* ([f (would-be-future (lambda () (sleep 0.3) 7))]
             [a (thread (lambda () (touch f)))])
        (sleep 0.05)
        (let ([waiter (thread (lambda () (touch f)) #:keep 'results)])
          (sleep 0.05)                  ; waiter waits on a's run
          (let ([t0 (now-ms)])
            (kill-thread a)
            (check-equal "waiting toucher returns" 7 (sync/timeout 3 (wrap-evt waiter thread-wait)))
            (check-equal "having run f again from the kill" 300. (- (now-ms) t0)))))))
  (check (format "the toucher ran the future in ~a of 100 runs, not all" toucher-ran) (< 0 toucher-ran 100)))

(test "a blocked future does not stop other futures"
  (let* ([s (make-semaphore 0)]
         [blockers (map (lambda (i) (future (lambda () (semaphore-wait s) i))) (iota (* 2 (processor-count))))]
         [worker (future (lambda () (fib 18)))])
    (check-equal "other future finished" (fib 18) (touch worker))
    (for-each (lambda (f) (semaphore-post s)) blockers)
    (check-equal "blockers" (iota (* 2 (processor-count))) (map touch blockers))))

(test "futures may sync on channels"
  (let* ([ch (make-channel)]
         [f (future (lambda () (channel-get ch)))])
    (channel-put ch 'hello)
    (check-equal "got" 'hello (touch f))))

(test "map/async and for/async"
  (check-equal "map/async" '(11 22 33) (map/async + '(1 2 3) '(10 20 30)))
  (let ([v (make-vector 10 0)])
    (for/async ([i 10] [x (make-list 10 3)]) (vector-set! v i (* i x)))
    (check-equal "for/async" (list->vector (map (lambda (i) (* 3 i)) (iota 10))) v)))

(test "futures-enabled? and current-future-pool"
  (check "enabled" (futures-enabled?))
  (let ([p (make-parallel-thread-pool 1)])
    (check-equal "own pool" 7 (touch (parameterize ([current-future-pool p]) (future (lambda () 7)))))))

(test "fsemaphores, under simulation"
  (simulated 100
    (lambda ()
      (let ([fs (make-fsemaphore 2)])
        (check "fsemaphore?" (fsemaphore? fs))
        (check "not an evt" (not (evt? fs)))
        (fsemaphore-wait fs)
        (check-equal "count 1" 1 (fsemaphore-count fs))
        (check "try" (fsemaphore-try-wait? fs))
        (check "try fails" (not (fsemaphore-try-wait? fs)))
        (let ([f (future (lambda () (fsemaphore-wait fs) 'through))])
          (sleep 0.02)                  ; returns once f waits
          (check-equal "waiter blocked" 0 (fsemaphore-count fs))
          (fsemaphore-post fs)
          (check-equal "waiter through" 'through (touch f))
          (check-equal "the post taken" 0 (fsemaphore-count fs)))))))

(test "bad input"
  (check-raises "future 5" assertion-violation? (lambda () (future 5)))
  (check-raises "future of 1 arg" assertion-violation? (lambda () (future (lambda (x) x))))
  (check-raises "touch non-future" assertion-violation? (lambda () (touch 5)))
  (check-raises "make-fsemaphore needs init" (lambda (c) #t) (lambda () (eval '(make-fsemaphore))))
  (check-raises "make-fsemaphore -1" assertion-violation? (lambda () (make-fsemaphore -1)))
  (check-raises "fsemaphore-post non-fs" assertion-violation? (lambda () (fsemaphore-post 'x))))

(test "stress: futures from threads of several pools touching each other"
  (let* ([pools (list #f 'own (make-parallel-thread-pool 2) (make-parallel-thread-pool 2))]
         [ts (map (lambda (pool)
                    (thread (lambda ()
                              (let* ([fs (map (lambda (i) (future (lambda () (+ i 1)))) (iota 500))]
                                     [gs (map (lambda (f) (future (lambda () (* 2 (touch f))))) fs)])
                                (apply + (map touch gs))))
                            pool 'results))
                  pools)])
    (check-equal "sums" (make-list 4 (* 2 (apply + (map (lambda (i) (+ i 1)) (iota 500)))))
                 (map thread-wait ts))))

(done)
