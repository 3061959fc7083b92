#!chezscheme
;;; Threads that run with no timer: a thread alone on its pool (no other
;;; runnable thread, no timer, no request, no cancel scope, no I/O poller)
;;; runs unarmed, so Chez's event check at the end of each critical section
;;; costs it nothing; whatever needs the worker pokes it, and the timer is
;;; armed again: a kill, a break, a suspend, a thread enqueued on its pool,
;;; a sleeper's timer, a deadline, the poller's installation.  Each case
;;; checks that the thread was unarmed first, then that the event reached
;;; it in time; a stress test pokes computing threads on many pools.  No
;;; I/O before the last test: the poller keeps every worker armed.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness))

(test-limit 60)

(define (now-ms) (current-inexact-monotonic-milliseconds))
(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
;; The ticks left on this OS thread's timer (0: unarmed), unchanged.
(define (timer-left) (let ([x (set-timer 0)]) (set-timer x) x))
;; A computing loop that records, once, whether it ran unarmed, and stops
;; when stop is set.
(define (computer unarmed stop)
  (lambda ()
    (let loop ([i 0])
      (fib 18)
      (when (= i 3) (set-box! unarmed (= 0 (timer-left))))
      (unless (unbox stop) (loop (+ i 1))))))
;; Waits (really, up to 2 s) until the box is no longer 'unset.
(define (until-set b) (let loop ([k 0]) (when (and (eq? (unbox b) 'unset) (< k 2000)) (sleep 0.001) (loop (+ k 1)))))

(test "a thread alone on its pool runs unarmed; with company it is armed"
  (check-equal "alone on 'own" 0 (thread-wait (thread (lambda () (fib 22) (timer-left)) #:pool 'own #:keep 'results)))
  (let* ([p (make-parallel-thread-pool 1)] [stop (box #f)] [u (box 'unset)]
         [a (thread (computer u stop) #:pool p)])
    (until-set u)
    (check-equal "alone on a pool of one" #t (unbox u))
    ;; a second thread on the same worker: the first is poked, armed, and
    ;; the two take turns
    (let ([b (thread (lambda () (fib 22) (timer-left)) #:pool p #:keep 'results)])
      (check "the second runs" (sync/timeout 10 b))
      (check "armed while it had company" (> (thread-wait b) 0)))
    (set-box! stop #t)
    (thread-wait a)
    (parallel-thread-pool-close p))
  ;; an unarmed thread starts a sibling on its own pool, then computes on:
  ;; the sibling runs (the worker armed itself as it enqueued)
  (let* ([sibling-ran (box #f)]
         [t (thread (lambda ()
                      (fib 22)
                      (let ([before (timer-left)])
                        (thread (lambda () (set-box! sibling-ran #t)) #:pool (current-thread-pool))
                        (let loop ([k 0]) (unless (or (unbox sibling-ran) (> k 2000000)) (fib 10) (loop (+ k 1))))
                        (list before (unbox sibling-ran))))
                    #:pool 'own #:keep 'results)])
    (check-equal "unarmed, then the sibling ran while it computed" '(0 #t) (thread-wait t))))

(test "kill, break and suspend reach a computing thread that runs unarmed"
  (let* ([stop (box #f)] [u (box 'unset)] [t (thread (computer u stop) #:pool 'own)])
    (until-set u)
    (check-equal "unarmed" #t (unbox u))
    (kill-thread t)
    (check "killed" (sync/timeout 5 (thread-dead-evt t))))
  (let* ([stop (box #f)] [u (box 'unset)] [broken (box #f)]
         [t (thread (lambda () (guard (c [(break-condition? c) (set-box! broken #t)]) ((computer u stop))))
                    #:pool 'own)])
    (until-set u)
    (check-equal "unarmed" #t (unbox u))
    (break-thread t)
    (check "broken" (sync/timeout 5 (thread-dead-evt t)))
    (check "the break was raised in it" (unbox broken)))
  (let* ([stop (box #f)] [u (box 'unset)] [t (thread (computer u stop) #:pool 'own)])
    (until-set u)
    (check-equal "unarmed" #t (unbox u))
    (thread-suspend t)
    (check "suspended" (sync/timeout 5 (thread-suspend-evt t)))
    (thread-resume t)
    (set-box! stop #t)
    (check "resumed and ended" (sync/timeout 5 (thread-dead-evt t)))))

(test "a sleeper on the pool of an unarmed thread wakes on time; a deadline cuts one"
  (let* ([p (make-parallel-thread-pool 1)] [stop (box #f)] [u (box 'unset)]
         [a (thread (computer u stop) #:pool p)])
    (until-set u)
    (check-equal "unarmed" #t (unbox u))
    (let* ([t0 (now-ms)]
           [s (thread (lambda () (sleep 0.05) (now-ms)) #:pool p #:keep 'results)]
           [late (- (thread-wait s) t0 50)])
      (printf "  sleeper late by ~,1f ms\n" late)
      (check "not early" (>= late -1))
      (check "on time (generous: the machine is shared)" (< late 400)))
    (set-box! stop #t)
    (thread-wait a)
    (parallel-thread-pool-close p))
  (check-equal "move-on-after cuts a computing 'own thread" #f
    (thread-wait (thread (lambda () (move-on-after 0.05 (let loop () (fib 18) (loop)))) #:pool 'own #:keep 'results)))
  ;; a scope entered while unarmed arms the thread: its cancellation by
  ;; another thread reaches the loop
  (let* ([scope (box 'unset)] [u (box 'unset)]
         [t (thread (lambda ()
                      (fib 22)
                      (set-box! u (= 0 (timer-left)))
                      (call-with-task-scope
                        (lambda (s) (set-box! scope s) (let loop () (fib 18) (loop)))))
                    #:pool 'own #:keep 'results)])
    (until-set scope)
    (check-equal "unarmed before the scope" #t (unbox u))
    (scope-cancel! (unbox scope))
    (check "cancelled" (sync/timeout 5 t))))

(test "stress: computing threads on 12 pools poked over and over lose nothing"
  ;; each round: 12 computing threads, each alone on its pool; main sends
  ;; each a value through a channel (a thread enqueued on its pool), breaks
  ;; half of them, and every thread must account for its value once
  (do ([round 0 (+ round 1)]) ((= round 10))
    (let* ([pools (map (lambda (i) (make-parallel-thread-pool 1)) (iota 12))]
           [stop (box #f)]
           [got (make-vector 12 0)]
           [chs (map (lambda (i) (make-channel)) (iota 12))]
           [ts (map (lambda (i p ch)
                      (thread (lambda ()
                                (parameterize-break #f
                                  (let ([r (thread (lambda () (vector-set! got i (+ (vector-ref got i) (channel-get ch))))
                                                   #:pool p)])
                                    (guard (c [(break-condition? c) 'broken])
                                      (parameterize-break #t
                                        (let loop () (fib 16) (unless (unbox stop) (loop)))))
                                    (thread-wait r))))
                              #:pool p))
                    (iota 12) pools chs)])
      (sleep 0.005)
      (for-each (lambda (i ch) (channel-put ch (+ i 1))) (iota 12) chs)
      (for-each (lambda (t i) (when (even? i) (break-thread t))) ts (iota 12))
      (set-box! stop #t)
      (for-each (lambda (t) (check "ended" (sync/timeout 10 (thread-dead-evt t)))) ts)
      (check-equal "each value once" (list->vector (map (lambda (i) (+ i 1)) (iota 12))) got)
      (for-each parallel-thread-pool-close pools))))

(test "the I/O poller's installation arms every unarmed worker"
  (let* ([stop (box #f)] [u (box 'unset)] [t (thread (computer u stop) #:pool 'own)])
    (until-set u)
    (check-equal "unarmed" #t (unbox u))
    ;; the first pipe read installs the poller
    (let-values ([(in out) (make-pipe)])
      (let ([r (thread (lambda () (get-u8 in)) #:keep 'results)])
        (put-u8 out 7) (flush-output-port out)
        (check-equal "the read" 7 (thread-wait r))))
    (let ([armed (thread (lambda () (fib 18) (timer-left)) #:pool 'own #:keep 'results)])
      (check "a new thread now runs armed" (> (thread-wait armed) 0)))
    (set-box! stop #t)
    (check "ended" (sync/timeout 5 (thread-dead-evt t)))))

(done)
