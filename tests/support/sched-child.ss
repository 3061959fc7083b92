;;; Child program of tests/test-scheduler.ss: (exit n) from a thread of a
;;; parallel pool, and Ctrl-C (SIGINT) reaching an idle or busy main thread.
;;; The first argument names the case; "ready" on stdout says the child got
;;; where the parent may signal it.
#!chezscheme
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

(define (ready!) (display "ready\n") (flush-output-port (current-output-port)))

(define mode (string->symbol (cadr (command-line))))

(case mode
  ;; exit from a parallel thread: an 'own thread, then a pool's thread
  [(exit-own)
   (thread (lambda () (display "bye") (exit 7)) #:pool 'own)
   (sleep 5)
   (display "still running\n")]
  [(exit-pool)
   (thread (lambda () (display "bye") (exit 9)) #:pool (make-parallel-thread-pool 2))
   (sleep 5)
   (display "still running\n")]
  ;; Ctrl-C: the main thread parked in tcp-accept, sleep, or a sync, or running
  [(int-accept) (let ([l (tcp-listen 0 4 #t "127.0.0.1")]) (ready!) (tcp-accept l))]
  [(int-sleep) (ready!) (sleep 10)]
  ;; (waits for nothing but the Ctrl-C: without the opt-out, the deadlock
  ;; exit would end it first if the signal came late)
  [(int-sync) (deadlock-exit-enabled #f) (ready!) (sync (make-channel))]
  ;; the main thread idle while a parallel pool's worker, parked in
  ;; tcp-accept, has most likely taken the poller: main sleeps on its pool
  [(int-pool)
   (let ([l (tcp-listen 0 4 #t "127.0.0.1")])
     (thread (lambda () (tcp-accept l)) #:pool (make-parallel-thread-pool 1))
     (sleep 0.05)
     (ready!)
     (sync (make-channel)))]
  [(int-spin)
   (thread (lambda () (let loop () (loop))) #:pool 'own)
   (ready!)
   (let loop ([i 0]) (loop (+ i 1)))]
  ;; the break is an exception of the main thread: it can be caught
  [(int-catch)
   (guard (c [(break-condition? c) (display "caught\n") (flush-output-port (current-output-port)) (exit 0)])
     (ready!)
     (sleep 10))])
(display "not reached\n")
