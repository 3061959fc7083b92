#!chezscheme
;;; dump-threads, thread-state and thread-waits: what each thread waits on,
;;; for every kind of wait; a dump of many threads; SIGQUIT.
(import (except (chezscheme) thread? sleep make-parameter parameterize make-mutex mutex? mutex-name)
        (spindle) (harness) (wait-until)
        (only (srfi :18) make-mutex mutex-lock! mutex-unlock! make-condition-variable)
        (only (places kinds) echo-place))

(test-limit 30)

(define (now-ms) (current-inexact-monotonic-milliseconds))

(define (dump-text)
  (let-values ([(port get) (open-string-output-port)]) (dump-threads port) (get)))

;; The dump's line for thread t (and the lines of its choice's branches).
(define (dump-lines-of t)
  (let ([head (format "  thread ~s " (thread-name* t))])
    (let loop ([lines (split-lines (dump-text))] [acc #f])
      (cond
        [(null? lines) (and acc (apply string-append acc))]
        [(and (>= (string-length (car lines)) (string-length head))
              (string=? (substring (car lines) 0 (string-length head)) head))
         (loop (cdr lines) (list (car lines)))]
        [(and acc (>= (string-length (car lines)) 6) (string=? (substring (car lines) 0 6) "      "))
         (loop (cdr lines) (append acc (list "\n" (car lines))))]
        [acc (apply string-append acc)]
        [else (loop (cdr lines) #f)]))))

(define (split-lines s)
  (let loop ([i 0] [start 0] [acc '()])
    (cond
      [(= i (string-length s)) (reverse (if (< start i) (cons (substring s start i) acc) acc))]
      [(char=? (string-ref s i) #\newline) (loop (+ i 1) (+ i 1) (cons (substring s start i) acc))]
      [else (loop (+ i 1) start acc)])))

;; A thread's name as the dump shows it: the number in #<thread N>.
(define (thread-name* t)
  (let* ([s (format "~a" t)] [n (string-length s)])
    (read (open-string-input-port (substring s 9 (- n 1))))))

(define (thread-wait* t) (sync/timeout 5 (wrap-evt t (lambda (_) 7))))

(define (parked t) (wait-until (lambda () (eq? (thread-state t) 'parked)) 5))

;; ---------------------------------------------------------------- states
(test "thread-state: running, runnable, parked, suspended, dead"
  (check-equal "the current thread runs" 'running (thread-state (current-thread)))
  (let ([t (thread (lambda () (sync never-evt)))])
    (check-equal "made, not yet run" 'runnable (thread-state t))
    (check "then parked" (parked t))
    (thread-suspend t)
    (check-equal "suspended" 'suspended (thread-state t))
    (check "the dump says suspended" (string-contains? (dump-lines-of t) "suspended for"))
    (kill-thread t)
    (check-equal "dead" 'dead (thread-state t))
    (check-equal "a dead thread waits on nothing" '() (thread-waits t))
    (check "a dead thread is not listed" (not (dump-lines-of t)))))

;; ---------------------------------------------------------------- each kind of wait
(test "channel-get and channel-put name the channel"
  (let* ([ch (make-channel)] [g (thread (lambda () (channel-get ch)))]
         [ch2 (make-channel)] [p (thread (lambda () (channel-put ch2 1)))])
    (check "parked" (and (parked g) (parked p)))
    (let ([w (thread-waits g)])
      (check-equal "one wait" 1 (length w))
      (check "reason channel, get" (and (eq? (car (car w)) 'channel) (eq? (caddr (car w)) 'get)))
      (check "the channel itself" (eq? (cadr (car w)) ch)))
    (check "put: the channel" (eq? (cadr (car (thread-waits p))) ch2))
    (check "text" (string-contains? (dump-lines-of g) "parked for"))
    (check "text names the channel" (string-contains? (dump-lines-of g) "on channel #<channel>@"))
    (kill-thread g) (kill-thread p)))

(test "semaphore-wait names the semaphore"
  (let* ([s (make-semaphore 0)] [t (thread (lambda () (semaphore-wait s)))])
    (check "parked" (parked t))
    (let ([w (car (thread-waits t))])
      (check-equal "reason" 'semaphore (car w))
      (check "the semaphore" (eq? (cadr w) s)))
    (check "text" (string-contains? (dump-lines-of t) "on semaphore #<semaphore>@"))
    (kill-thread t)))

(test "sleep shows its alarm and when it is due"
  (let ([t (thread (lambda () (sleep 20)))])
    (check "parked" (parked t))
    (let ([w (car (thread-waits t))])
      (check-equal "reason" 'sleep (car w))
      (check "due in at most 20 s" (let ([ms (cadddr w)]) (and (< 10000 ms) (<= ms 20000)))))
    (check "text" (string-contains? (dump-lines-of t) "on sleep #<alarm-evt>@"))
    (kill-thread t)))

(test "thread-wait names the thread waited for"
  (let* ([a (thread (lambda () (sync never-evt)))] [b (thread (lambda () (thread-wait a)))])
    (check "parked" (parked b))
    (let ([w (car (thread-waits b))])
      (check-equal "reason" 'wait (car w))
      (check "the thread" (eq? (cadr w) a)))
    (check "text" (string-contains? (dump-lines-of b) (format "on wait ~a" a)))
    (kill-thread a) (kill-thread b)))

(test "a future touched names the future"
  (let* ([s (make-semaphore 0)] [started (make-semaphore 0)]
         [f (future (lambda () (semaphore-post started) (semaphore-wait s) 1))]
         [_ (semaphore-wait started)]
         [t (thread (lambda () (touch f)))])
    (check "parked" (parked t))
    (let ([w (car (thread-waits t))])
      (check-equal "reason" 'wait (car w))
      (check "the future" (eq? (cadr w) f)))
    (semaphore-post s)
    (check-equal "touched" 1 (touch f))))

(test "a socket read names the descriptor and the direction"
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")])
    (let-values ([(ci co) (tcp-connect "127.0.0.1" (let-values ([(a p b q) (tcp-addresses l #t)]) p))])
      (let-values ([(si so) (tcp-accept l)])
        (let ([t (thread (lambda () (get-u8 si)))])
          (check "parked" (parked t))
          (let ([w (car (thread-waits t))])
            (check-equal "reason" 'io (car w))
            (check "fd and read" (and (eq? (cadr w) 'fd) (fixnum? (caddr w)) (eq? (cadddr w) 'read))))
          (check "text" (string-contains? (dump-lines-of t) "on io fd "))
          (put-u8 co 7) (flush-output-port co)
          (check-equal "read" 7 (thread-wait* t)))
        (close-port si) (close-port so))
      (close-port ci) (close-port co))
    (tcp-close l)))

(test "a sync on a choice lists each branch"
  (let* ([ch (make-channel)] [s (make-semaphore 0)]
         [t (thread (lambda () (sync ch (semaphore-peek-evt s) (alarm-evt (+ (current-inexact-milliseconds) 60000)))))])
    (check "parked" (parked t))
    (let ([w (thread-waits t)])
      (check-equal "three branches" 3 (length w))
      (check "the channel" (exists (lambda (b) (and (eq? (car b) 'channel) (eq? (cadr b) ch))) w))
      (check "the semaphore" (exists (lambda (b) (and (eq? (car b) 'semaphore) (eq? (cadr b) s))) w))
      (check "the alarm" (exists (lambda (b) (eq? (car b) 'sleep)) w)))
    (let ([text (dump-lines-of t)])
      (check "text: a choice of 3" (string-contains? text "on a choice of 3:"))
      (check "text: each branch" (and (string-contains? text "channel #<channel>@")
                                      (string-contains? text "semaphore #<semaphore>@")
                                      (string-contains? text "sleep #<alarm-evt>@"))))
    (kill-thread t)))

(test "a parallel thread: its kind and pool"
  (let* ([pool (make-parallel-thread-pool 1)] [ch (make-channel)]
         [t (thread (lambda () (channel-get ch)) #:pool pool)])
    (check "parked" (parked t))
    (check "the channel" (eq? (cadr (car (thread-waits t))) ch))
    (check "text" (string-contains? (dump-lines-of t) "(parallel, #<parallel-thread-pool 1>@"))
    (kill-thread t)
    (parallel-thread-pool-close pool)))

(test "the main thread is listed"
  (check "main" (string-contains? (dump-text) "  thread main (main, main pool): running")))

;; ---------------------------------------------------------------- more kinds of wait
(test "a SRFI-18 mutex-lock! names the mutex and its holder"
  (let* ([m (make-mutex 'the-lock)] [got (make-semaphore 0)] [done (make-semaphore 0)]
         [holder (thread (lambda () (mutex-lock! m) (semaphore-post got) (semaphore-wait done) (mutex-unlock! m)))]
         [_ (semaphore-wait got)]
         [t (thread (lambda () (mutex-lock! m) (mutex-unlock! m)))])
    (check "parked" (parked t))
    (check-equal "reason, mutex, holder" (list (list 'mutex m 'held-by holder)) (thread-waits t))
    (check "text" (string-contains? (dump-lines-of t) (format "on mutex #<mutex the-lock>@")))
    (check "text: the holder" (string-contains? (dump-lines-of t) (format "held-by ~a" holder)))
    (semaphore-post done)
    (check "locks" (sync/timeout 5 (thread-dead-evt t)))))

(test "a SRFI-18 condition-variable wait names the condition variable"
  (let* ([m (make-mutex)] [cv (make-condition-variable 'ready)]
         [t (thread (lambda () (mutex-lock! m) (mutex-unlock! m cv)))])
    (check "parked" (parked t))
    (check "reason and cv" (let ([w (car (thread-waits t))]) (and (eq? (car w) 'condition-variable) (eq? (cadr w) cv))))
    (check "text" (string-contains? (dump-lines-of t) "on condition-variable #<condition-variable ready>@"))
    (kill-thread t)))

(test "subprocess-wait names the subprocess and its pid"
  (let-values ([(p o i e) (subprocess (current-output-port) #f (current-error-port) "/bin/sleep" "20")])
    (close-port i)
    (let ([t (thread (lambda () (subprocess-wait p)))])
      (check "parked" (parked t))
      (check "the subprocess" (let ([w (car (thread-waits t))]) (and (eq? (car w) 'wait) (eq? (cadr w) p))))
      (check "text" (string-contains? (dump-lines-of t) (format "on wait #<subprocess ~a>" (subprocess-pid p))))
      (subprocess-kill p #t)
      (check "ends" (sync/timeout 5 (thread-dead-evt t))))))

(define c-usleep (foreign-procedure __collect_safe "usleep" (unsigned) int))

(test "call-blocking names the call"
  (let ([t (thread (lambda () (call-blocking c-usleep 300000)))])
    (check "parked" (parked t))
    (check "text" (string-contains? (dump-lines-of t) "on wait #<call-blocking #<procedure"))
    (check "ends" (sync/timeout 5 (thread-dead-evt t)))))

(test "a thread's custodian is shown"
  (let* ([c (make-custodian)]
         [t (parameterize ([current-custodian c]) (thread (lambda () (sync never-evt))))]
         [r (thread (lambda () (sync never-evt)))])
    (check "parked" (and (parked t) (parked r)))
    (check "its custodian" (string-contains? (dump-lines-of t) "[#<custodian>@"))
    (check "the root one" (string-contains? (dump-lines-of r) "[root custodian]"))
    (custodian-shutdown-all c)
    (kill-thread r)))

;; ---------------------------------------------------------------- places
(test "places are listed with their pids; a place-channel-get names the inbox"
  ;; (the get raises "peer place ended" once the place stops: caught, so
  ;; that no failure report is being written when the thread is killed)
  (let* ([p (echo-place)] [t (thread (lambda () (guard (c [#t 'ended]) (place-channel-get p))))])
    (check "parked" (parked t))
    (let ([w (car (thread-waits t))])
      (check-equal "reason" 'channel (car w))
      (check "the inbox" (string-contains? (format "~a" (cadr w)) "place-channel-inbox")))
    (check "the place and its pid"
      (wait-until (lambda ()
                    (let ([text (dump-text)])
                      (exists (lambda (l) (and (string-contains? l "  place ") (string-contains? l " pid ")
                                               (not (string-contains? l "(starting)"))
                                               (string-contains? l " running")))
                              (split-lines text))))
                  5))
    (place-channel-put p 'stop)
    (check "ends" (sync/timeout 10 (place-dead-evt p)))
    (check-equal "exit 0" 0 (place-wait p))
    (kill-thread t)))

;; ---------------------------------------------------------------- many threads
(test "a dump of 10,000 parked threads is bounded"
  (let* ([ch (make-channel)]
         [ts (let loop ([i 0] [acc '()]) (if (= i 10000) acc (loop (+ i 1) (cons (thread (lambda () (channel-get ch))) acc))))])
    (check "all parked" (wait-until (lambda () (for-all (lambda (t) (eq? (thread-state t) 'parked)) ts)) 10))
    (let* ([t0 (now-ms)] [text (dump-text)] [ms (- (now-ms) t0)])
      (check "at least 10,000 lines" (>= (length (split-lines text)) 10000))
      (check (format "well under the limit (~a ms)" (round ms)) (< ms 10000)))
    (for-each kill-thread ts)))

(test "dump-threads checks its port"
  (check-raises "not a port" (both (assertion-from? 'dump-threads) (irritant? 'nope)) (lambda () (dump-threads 'nope)))
  (check-raises "thread-state" (assertion-from? 'thread-state) (lambda () (thread-state 5)))
  (check-raises "thread-waits" (assertion-from? 'thread-waits) (lambda () (thread-waits 5))))

;; ---------------------------------------------------------------- SIGQUIT
(define child (string-append (current-directory) "/tests/support/dump-child.ss"))
(define spindle (string-append (current-directory) "/bin/spindle"))

;; Runs the child in mode, sends it SIGQUIT once ready, waits for the dump
;; on its stderr, then lets it finish.  Returns (status stdout stderr).
(define (run-child mode)
  (let-values ([(p out in err) (subprocess #f #f #f spindle "run" child (symbol->string mode))])
    (let ([line (get-bytevector-n out 6)])
      (unless (equal? line (string->utf8 "ready\n")) (error 'run-child "no ready line" mode line)))
    (let ([errs (box "")])
      (thread (lambda ()
                (let loop ([err (transcoded-port err (native-transcoder))])
                  (let ([l (get-line err)])
                    (unless (eof-object? l)
                      (set-box! errs (string-append (unbox errs) l "\n"))
                      (loop err))))))
      ;; bin/spindle dump PID sends the SIGQUIT
      (let-values ([(k o i e) (subprocess (current-output-port) #f (current-error-port)
                                          spindle "dump" (number->string (subprocess-pid p)))])
        (close-port i)
        (subprocess-wait k))
      (wait-until (lambda () (string-contains? (unbox errs) "thread 1 (coroutine")) 8)
      (put-bytevector in (string->utf8 "go\n"))
      (flush-output-port in)
      (let ([done (sync/timeout 8 p)])
        (unless done (subprocess-kill p #t) (subprocess-wait p))
        (let ([o (let ([b (get-bytevector-all out)]) (if (eof-object? b) "" (utf8->string b)))])
          (close-port out) (close-port in)
          (wait-until (lambda () #f) 0.1)
          (list (subprocess-status p) o (unbox errs)))))))

(test "SIGQUIT (bin/spindle dump PID) prints the dump to stderr and the program goes on"
  (for-each
    (lambda (mode main-state)
      (let ([r (run-child mode)])
        (check-equal (list mode 'status) 0 (car r))
        (check (list mode "still running" (cadr r)) (string-contains? (cadr r) "still running"))
        (check (list mode "the dump" (caddr r)) (string-contains? (caddr r) "spindle threads ("))
        (check (list mode "the waiting thread" (caddr r))
               (string-contains? (caddr r) "thread 1 (coroutine, main pool): parked for"))
        (check (list mode "on its channel") (string-contains? (caddr r) "on channel #<channel>@"))
        (check (list mode "main thread" (caddr r))
               (string-contains? (caddr r) (format "thread main (main, main pool): ~a" main-state)))))
    '(idle spin) '(parked running)))

(test "bin/spindle dump checks its argument"
  (let-values ([(p o i e) (subprocess #f #f #f spindle "dump" "not-a-pid")])
    (close-port i)
    (let ([text (utf8->string (let ([b (get-bytevector-all e)]) (if (eof-object? b) (bytevector) b)))])
      (close-port o) (close-port e)
      (subprocess-wait p)
      (check-equal "usage status" 2 (subprocess-status p))
      (check "usage text" (string-contains? text "spindle dump PID")))))

(test "bin/spindle dump refuses a process that is not a spindle program"
  ;; a typo'd PID must not core-dump an unrelated program (issue 31, item 10)
  (let-values ([(other o i e) (subprocess #f #f #f "/bin/sleep" "30")])
    (close-port i) (close-port o) (close-port e)
    (let-values ([(p o i e) (subprocess #f #f #f spindle "dump" (number->string (subprocess-pid other)))])
      (close-port i)
      (let ([text (utf8->string (let ([b (get-bytevector-all e)]) (if (eof-object? b) (bytevector) b)))])
        (close-port o) (close-port e)
        (subprocess-wait p)
        (check-equal "refused" 1 (subprocess-status p))
        (check (list "says why" text) (string-contains? text "not a spindle program"))))
    (check "the other program still runs" (not (sync/timeout 0.3 other)))
    (subprocess-kill other #t)
    (subprocess-wait other))
  (let-values ([(p o i e) (subprocess #f #f #f spindle "dump" "999999999")])
    (close-port i)
    (let ([text (utf8->string (let ([b (get-bytevector-all e)]) (if (eof-object? b) (bytevector) b)))])
      (close-port o) (close-port e)
      (subprocess-wait p)
      (check-equal "no such process" 1 (subprocess-status p))
      (check (list "says so" text) (string-contains? text "no process 999999999")))))

(done)
