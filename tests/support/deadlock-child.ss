;;; Child program of tests/test-deadlock.ss: one way of waiting per mode.
;;; The deadlocked modes must end with the report and status 2; the others
;;; wait for something that can still come (a timer, a connection, a
;;; place, a line on stdin, a helper, a subprocess, a signal, a foreign
;;; call, an OS thread spindle does not know) and must end by themselves
;;; with status 0, or be killed by the parent, never reported.
#!chezscheme
(import (except (chezscheme) thread? sleep make-parameter parameterize make-mutex mutex? mutex-name)
        (spindle) (only (srfi :18) make-mutex mutex-lock!) (only (places kinds) silent-place echo-place))

(define mode (string->symbol (cadr (command-line))))
(define (say . xs) (for-each display xs) (newline) (flush-output-port (current-output-port)))
(define c-sleep (foreign-procedure __collect_safe "usleep" (unsigned) int))

(case mode
  ;; every thread waits on a channel nothing running can reach
  [(channel)
   (for-each (lambda (i) (thread (lambda () (channel-get (make-channel))))) '(1 2 3))
   (thread (lambda () (semaphore-wait (make-semaphore 0))) #:pool 'own)
   (say "ready")
   (channel-get (make-channel))
   (say "not reached")]
  ;; two threads lock two SRFI-18 mutexes in opposite orders
  [(mutex-cycle)
   (let* ([a (make-mutex 'left)] [b (make-mutex 'right)] [go (make-semaphore 0)]
          [t1 (thread (lambda () (mutex-lock! a) (semaphore-wait go) (mutex-lock! b)))]
          [t2 (thread (lambda () (mutex-lock! b) (semaphore-wait go) (mutex-lock! a)))])
     (sleep 0.05)
     (semaphore-post go) (semaphore-post go)
     (say "ready")
     (thread-wait t1))]
  ;; waits with timers that never fire: a sleep and a deadline of +inf.0 s
  [(forever-timers)
   (thread (lambda () (sleep +inf.0)))
   (say "ready")
   (move-on-after +inf.0 (channel-get (make-channel)))
   (say "not reached")]
  ;; waits that ended before their deadlines left cancelled timers of
  ;; 30 s behind, then every thread waits on a channel
  [(dead-timers)
   (move-on-after 30 (sleep 0.01))
   (let ([c (make-channel)])
     (thread (lambda () (sleep 0.1) (channel-put c 'answer)))
     (sync/timeout 30 c))
   (thread (lambda () (sync/timeout 30 (make-semaphore 1))) #:pool 'own)
   (say "ready")
   (channel-get (make-channel))
   (say "not reached")]
  ;; the main thread inside a task scope and a move-on-after (handlers
  ;; that raise a break on), its children on unreachable channels
  [(scope-channel)
   (call-with-task-scope
     (lambda (s)
       (scope-thread s (lambda () (channel-get (make-channel))))
       (scope-thread s (lambda () (channel-get (make-channel))) (make-parallel-thread-pool 1))
       (say "ready")
       (move-on-after +inf.0 (channel-get (make-channel)))))
   (say "not reached")]
  ;; waits with a deadline: the scope moves on, then a task scope's child
  ;; does, while its body waits for it to end
  [(deadline)
   (say "ready")
   (say (or (move-on-after 0.5 (channel-get (make-channel))) "moved-on"))
   (say (call-with-task-scope
          (lambda (s) (scope-thread s (lambda () (move-on-after 0.5 (channel-get (make-channel))))) "scope-ended")))]
  ;; waits on a timer: a thread sends after a pause
  [(timer)
   (let ([ch (make-channel)])
     (thread (lambda () (sleep 0.8) (channel-put ch 'late)))
     (say "ready")
     (say (channel-get ch)))]
  ;; waits in tcp-accept; the parent connects (a port on the first line)
  [(accept)
   (let ([l (tcp-listen 0 4 #t "127.0.0.1")])
     (thread (lambda () (channel-get (make-channel))))
     (let-values ([(a port b q) (tcp-addresses l #t)]) (say port))
     (let-values ([(i o) (tcp-accept l)]) (say "accepted")))]
  ;; waits for a place that never answers (the parent ends it)
  [(place)
   (let ([p (silent-place)])
     (say "ready")
     (place-channel-get p))]
  ;; a place has come and gone, then every thread waits on a channel
  [(after-place)
   (let ([p (echo-place)])
     (place-channel-put p 'stop)
     (place-wait p)
     (say "ready")
     (channel-get (make-channel)))]
  ;; waits for a line on stdin (the parent writes it late)
  [(console)
   (thread (lambda () (channel-get (make-channel))))
   (say "ready")
   (say (get-line (current-input-port)))]
  ;; waits for a call-blocking helper busy in a foreign call
  [(call-blocking)
   (say "ready")
   (say (call-blocking (lambda () (c-sleep 800000) 'helper-done)))]
  ;; waits for a subprocess to end
  [(subprocess)
   (let-values ([(p o i e) (subprocess (current-output-port) #f (current-error-port) "/bin/sleep" "0.8")])
     (close-port i)
     (say "ready")
     (subprocess-wait p)
     (say "waited"))]
  ;; waits on a semaphore that a signal handler posts (the parent sends SIGUSR1)
  [(signal)
   (let ([s (make-semaphore 0)])
     (register-signal-handler 10 (lambda (n) (semaphore-post s)))
     (say "ready")
     (semaphore-wait s)
     (say "signalled"))]
  ;; waits on a channel for a Ctrl-C it catches (the parent sends SIGINT)
  [(break)
   (thread (lambda () (channel-get (make-channel))))
   (guard (c [(break-condition? c) (say "caught")])
     (say "ready")
     (channel-get (make-channel)))]
  ;; the main OS thread sits in a foreign call while another thread waits for it
  [(foreign)
   (let* ([ch (make-channel)] [t (thread (lambda () (say (channel-get ch))))])
     (say "ready")
     (c-sleep 800000)
     (channel-put ch 'after-foreign-call)
     (thread-wait t))]
  ;; an OS thread spindle does not know posts after a long computation
  [(os-thread)
   (let ([s (make-semaphore 0)])
     (fork-thread (lambda () (c-sleep 800000) (semaphore-post s)))
     (say "ready")
     (semaphore-wait s)
     (say "posted"))])
