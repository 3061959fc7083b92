#!chezscheme
;;; The deadlock report: a program whose every thread is blocked for ever
;;; ends with the report and status 2; a program that waits for anything
;;; that can still come is never reported; find-deadlocks names wait-for
;;; cycles and threads parked on objects nothing running can reach.
(import (except (chezscheme) thread? sleep make-parameter parameterize make-mutex mutex? mutex-name)
        (spindle) (only (srfi :18) make-mutex mutex-lock! mutex-unlock!) (harness))

(test-limit 40)

;; ---------------------------------------------------------------- child programs
(define child (string-append (current-directory) "/tests/support/deadlock-child.ss"))
(define spindle (string-append (current-directory) "/bin/spindle"))

;; Runs the child in mode (env: "NAME=value" strings), reads its first
;; stdout line, calls (action first-line stdin-port), then gives it up
;; to limit seconds to end (killing it after).  Returns (status
;; still-running-when-killed? stdout-rest stderr).
(define (run-child mode action limit . env)
  (let-values ([(p out in err) (apply subprocess #f #f #f "/usr/bin/env"
                                      (append env (list spindle "run" child (symbol->string mode))))])
    (let ([errs (box "")] [tout (transcoded-port out (native-transcoder))]
          [tin (transcoded-port in (native-transcoder))])
      (define reader
        (thread (lambda ()
                  (let ([e (transcoded-port err (native-transcoder))])
                    (let loop ()
                      (let ([l (get-line e)])
                        (unless (eof-object? l)
                          (set-box! errs (string-append (unbox errs) l "\n"))
                          (loop))))))))
      (let ([first (get-line tout)])
        (action first tin p)
        (let* ([done (sync/timeout limit p)]
               [killed? (not done)])
          (when killed? (subprocess-kill p #t) (subprocess-wait p))
          (let ([rest (get-string-all tout)])
            (thread-wait reader)
            (close-port tout) (close-port tin)
            (list (subprocess-status p) killed? (if (eof-object? rest) "" rest) (unbox errs))))))))

(define (no-action line in p) (void))

(test "every thread on an unreachable channel: the report, status 2"
  (let ([r (run-child 'channel no-action 10)])
    (check-equal "status" 2 (car r))
    (check "not killed" (not (cadr r)))
    (check "not past the wait" (not (string-contains? (caddr r) "not reached")))
    (let ([e (cadddr r)])
      (check (list "the report" e) (string-contains? e "spindle: deadlock: every thread is blocked for ever"))
      (check "the dump: main on its channel" (string-contains? e "thread main (main, main pool): parked for"))
      (check "each thread named with its channel" (string-contains? e "thread 3 (coroutine, main pool): parked for"))
      (check "the parallel one too" (string-contains? e "(parallel, "))
      (check "what they wait on" (string-contains? e "on channel #<channel>@")))))

(test "a mutex cycle is named in the report"
  (let ([r (run-child 'mutex-cycle no-action 10)])
    (check-equal "status" 2 (car r))
    (let ([e (cadddr r)])
      (check (list "the cycle" e) (string-contains? e "wait-for cycle of 2 threads:"))
      (check "first step" (string-contains? e "thread 1 waits for mutex #<mutex right>@"))
      (check "its holder" (string-contains? e ", held by thread 2"))
      (check "second step" (string-contains? e "thread 2 waits for mutex #<mutex left>@")))))

;; A child that waits for something that can still come: it ends with
;; status 0 (or is still running when killed, for kill? modes), and
;; never prints the report.
(test "a place has ended, then every thread waits on a channel: reported"
  (let ([r (run-child 'after-place no-action 20)])
    (check-equal "status" 2 (car r))
    (check "the report" (string-contains? (cadddr r) "spindle: deadlock: every thread is blocked for ever"))))

(define (check-not-reported mode action limit kill? . env)
  (let* ([r (apply run-child mode action limit env)] [e (cadddr r)])
    (check (list mode "no report" e) (not (string-contains? e "deadlock")))
    (if kill?
        (check (list mode "still waiting when killed") (cadr r))
        (begin
          (check (list mode "ended by itself" e) (not (cadr r)))
          (check-equal (list mode "status") 0 (car r))))
    (caddr r)))

(test "a timer can wake it: not reported"
  (check "the late message" (string-contains? (check-not-reported 'timer no-action 10 #f) "late")))

(test "timers that never fire (sleep +inf.0, a deadline of +inf.0 s) wake nothing: reported"
  (let ([r (run-child 'forever-timers no-action 10)])
    (check-equal "status" 2 (car r))
    (check "not killed" (not (cadr r)))
    (check "the report" (string-contains? (cadddr r) "spindle: deadlock: every thread is blocked for ever"))))

(test "timers of waits that ended early wake nothing: reported at once, not at their deadlines"
  (let ([r (run-child 'dead-timers no-action 10)])
    (check-equal "status" 2 (car r))
    (check "not killed (the old deadlines are 30 s away)" (not (cadr r)))
    (check "the report" (string-contains? (cadddr r) "spindle: deadlock: every thread is blocked for ever"))))

(test "every thread blocked inside task scopes and move-on-after: reported"
  (let ([r (run-child 'scope-channel no-action 10)])
    (check-equal "status" 2 (car r))
    (check "not killed" (not (cadr r)))
    (check "the report" (string-contains? (cadddr r) "spindle: deadlock: every thread is blocked for ever"))
    (check "its scope's children, with its custodian" (string-contains? (cadddr r) "(coroutine, main pool): parked for"))))

(test "a deadline can wake it: not reported"
  (let ([out (check-not-reported 'deadline no-action 10 #f)])
    (check "moved on" (string-contains? out "moved-on"))
    (check "the scope ended" (string-contains? out "scope-ended"))))

(test "a thread in tcp-accept: not reported"
  (check "accepted"
    (string-contains?
      (check-not-reported 'accept
        (lambda (port in p)
          (sleep 0.8)
          (let-values ([(i o) (tcp-connect "127.0.0.1" (string->number port))])
            (close-port i) (close-port o)))
        10 #f)
      "accepted")))

(test "a thread waiting for a place: not reported"
  (check-not-reported 'place no-action 1.5 #t))

(test "a thread reading the console: not reported"
  (check "the line"
    (string-contains?
      (check-not-reported 'console
        (lambda (line in p) (sleep 0.8) (put-string in "late line\n") (flush-output-port in))
        10 #f)
      "late line")))

(test "a thread in call-blocking: not reported"
  (check "helper" (string-contains? (check-not-reported 'call-blocking no-action 10 #f) "helper-done")))

(test "a thread in subprocess-wait: not reported"
  (check "waited" (string-contains? (check-not-reported 'subprocess no-action 10 #f) "waited")))

(test "a thread waiting for a signal handler: not reported"
  (check "signalled"
    (string-contains?
      (check-not-reported 'signal
        (lambda (line in p)
          (sleep 0.8)
          (system* "/bin/kill" "-USR1" (number->string (subprocess-pid p))))
        10 #f)
      "signalled")))

(test "a main thread whose handler may catch a Ctrl-C: not reported"
  (check "caught"
    (string-contains?
      (check-not-reported 'break
        (lambda (line in p) (sleep 0.8) (subprocess-kill p #f))
        10 #f)
      "caught")))

(test "the main OS thread in a foreign call: not reported"
  (check "after" (string-contains? (check-not-reported 'foreign no-action 10 #f) "after-foreign-call")))

(test "an OS thread spindle does not know: not reported"
  (check "posted" (string-contains? (check-not-reported 'os-thread no-action 10 #f) "posted")))

(test "SPINDLE_DEADLOCK=off: a deadlocked program waits"
  (check-not-reported 'channel no-action 1.5 #t "SPINDLE_DEADLOCK=off"))

;; ---------------------------------------------------------------- find-deadlocks
(define (parked t)
  (let loop ([i 0])
    (or (eq? (thread-state t) 'parked)
        (and (< i 1000) (begin (sleep 0.005) (loop (+ i 1)))))))

(define (cycle-of findings t)
  (find (lambda (f) (and (eq? (car f) 'cycle) (exists (lambda (tw) (eq? (car tw) t)) (cdr f)))) findings))

(test "find-deadlocks: a SRFI-18 mutex cycle"
  (let* ([a (make-mutex 'a)] [b (make-mutex 'b)] [go (make-semaphore 0)]
         [t1 (thread (lambda () (mutex-lock! a) (semaphore-wait go) (mutex-lock! b)))]
         [t2 (thread (lambda () (mutex-lock! b) (semaphore-wait go) (mutex-lock! a)))])
    (check "both hold" (and (parked t1) (parked t2)))
    (semaphore-post go) (semaphore-post go)
    (sleep 0.05)
    (check "both wait" (and (parked t1) (parked t2)))
    (let ([c (cycle-of (find-deadlocks) t1)])
      (check "a cycle" c)
      (check-equal "of two" 2 (length (cdr c)))
      (check "t2 in it" (exists (lambda (tw) (eq? (car tw) t2)) (cdr c)))
      (check "t1 waits for b"
        (let ([w (cadr (assq t1 (cdr c)))]) (and (eq? (car w) 'mutex) (eq? (cadr w) b) (eq? (cadddr w) t2)))))
    (check "thread-waits names the mutex and its holder"
      (equal? (thread-waits t2) (list (list 'mutex a 'held-by t1))))
    (let-values ([(port get) (open-string-output-port)])
      (deadlock-report port)
      (let ([text (get)])
        (check (list "the report" text) (string-contains? text "wait-for cycle of 2 threads:"))
        (check "names the mutex" (string-contains? text "waits for mutex #<mutex b>@"))))
    (kill-thread t1) (kill-thread t2)))

(test "find-deadlocks: semaphores held through call-with-semaphore"
  (let* ([s1 (make-semaphore 1)] [s2 (make-semaphore 1)] [go (make-semaphore 0)]
         [t1 (thread (lambda () (call-with-semaphore s1 (lambda () (semaphore-wait go) (semaphore-wait s2)))))]
         [t2 (thread (lambda () (call-with-semaphore s2 (lambda () (semaphore-wait go) (semaphore-wait s1)))))])
    (check "both hold" (and (parked t1) (parked t2)))
    (semaphore-post go) (semaphore-post go)
    (sleep 0.05)
    (let ([c (cycle-of (find-deadlocks) t1)])
      (check "a cycle" c)
      (check "t1 waits on s2" (let ([w (cadr (assq t1 (cdr c)))]) (and (eq? (car w) 'semaphore) (eq? (cadr w) s2)))))
    (kill-thread t1) (kill-thread t2)))

(test "find-deadlocks: threads waiting for each other's end"
  (let* ([box-b (box #f)] [go (make-semaphore 0)]
         [a (thread (lambda () (semaphore-wait go) (thread-wait (unbox box-b))))]
         [b (thread (lambda () (thread-wait a)))])
    (set-box! box-b b)
    (semaphore-post go)
    (check "parked" (and (parked a) (parked b)))
    (sleep 0.05)
    (check "a cycle" (cycle-of (find-deadlocks) a))
    (kill-thread a) (kill-thread b)))

(test "find-deadlocks: a task scope's body waits for a child that waits for the body's semaphore"
  (let* ([sem (make-semaphore 1)] [child (box #f)] [scope (box #f)]
         [body (thread (lambda ()
                         (call-with-semaphore sem
                           (lambda ()
                             (call-with-task-scope
                               (lambda (s)
                                 (set-box! scope s)
                                 (set-box! child (scope-thread s (lambda () (semaphore-wait sem))))))))))])
    (check "parked" (parked body))
    (check "the child parked" (and (unbox child) (parked (unbox child))))
    (check "thread-waits names the scope and its children"
      (equal? (thread-waits body) (list (list 'children (unbox scope) 'held-by (list (unbox child))))))
    (let ([c (cycle-of (find-deadlocks) body)])
      (check "a cycle" c)
      (check "through the child" (and c (assq (unbox child) (cdr c)))))
    (let-values ([(port get) (open-string-output-port)])
      (deadlock-report port)
      (let ([text (get)])
        (check (list "the report" text) (string-contains? text "waits for its task scope's children to end"))))
    (kill-thread (unbox child))
    (check "the body ends once its child is gone" (sync/timeout 5 (thread-dead-evt body)))))

(test "find-deadlocks: a thread parked on a channel nothing reaches"
  (let* ([kept (make-channel)]
         [held (thread (lambda () (channel-get kept)))]
         [lost (let ([t (thread (lambda () (channel-get (make-channel))))]) (parked t) (format "~a" t))])
    (check "parked" (parked held))
    (let* ([fs (find-deadlocks)]
           [un (filter (lambda (f) (eq? (car f) 'unreachable)) fs)])
      (check "the lost one" (exists (lambda (f) (equal? (format "~a" (cadr f)) lost)) un))
      (check "with its wait" (exists (lambda (f) (and (equal? (format "~a" (cadr f)) lost)
                                                      (eq? (car (caddr f)) 'channel)))
                                     un))
      (check "not the one whose channel is held" (not (exists (lambda (f) (eq? (cadr f) held)) un)))
      (check "no cycle" (not (cycle-of fs held))))
    (channel-put kept 1)
    (check "held one ends" (sync/timeout 5 (thread-dead-evt held)))))

(test "find-deadlocks: nothing in a healthy program"
  (let* ([ch (make-channel)] [t (thread (lambda () (channel-get ch)))])
    (parked t)
    (let ([fs (find-deadlocks)])
      (check "no finding names t" (not (exists (lambda (f) (exists (lambda (x) (or (eq? x t) (and (pair? x) (eq? (car x) t)))) (cdr f))) fs))))
    (channel-put ch 1)))

(test "deadlock-report and deadlock-exit-enabled check their arguments"
  (check-raises "not a port" (both (assertion-from? 'deadlock-report) (irritant? 'nope)) (lambda () (deadlock-report 'nope)))
  (check "on by default" (deadlock-exit-enabled))
  (deadlock-exit-enabled #f)
  (check "off" (not (deadlock-exit-enabled)))
  (deadlock-exit-enabled #t)
  (check "on again" (deadlock-exit-enabled)))

(done)
