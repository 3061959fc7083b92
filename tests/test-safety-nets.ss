#!chezscheme
;;; Safety nets for blocking code: the watchdog names an OS thread stuck in
;;; a foreign call not declared __collect_safe (in a child program, since
;;; the stall stops every thread), reports long slices, and
;;; define-blocking-foreign keeps the caller's worker running.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness) (wait-until)
        (spindle watchdog) (spindle foreign))

(test-limit 40)

(load-shared-object "libc.so.6")
(define raw-usleep (foreign-procedure "usleep" (unsigned) int))
(define raw-self (foreign-procedure "pthread_self" () uptr))
(define-blocking-foreign blocking-usleep "usleep" (unsigned) int)
(define-blocking-foreign blocking-self "pthread_self" () uptr)

(define (now-ms) (current-inexact-monotonic-milliseconds))

;; ---------------------------------------------------------------- collection stalls
(define child (string-append (current-directory) "/tests/support/safety-child.ss"))
(define spindle (string-append (current-directory) "/bin/spindle"))

;; The line of the child that defines the procedure the report must name.
(define stuck-line
  (call-with-input-file child
    (lambda (in)
      (let loop ([n 1])
        (let ([l (get-line in)])
          (cond
            [(eof-object? l) #f]
            [(string-contains? l "(define (stuck-in-usleep") n]
            [else (loop (+ n 1))]))))))

;; Runs the child in mode; returns (status stdout stderr seconds), seconds:
;; from the child's "ready" line to the report's first line on its stderr
;; (#f without one).
(define (run-child mode)
  (let-values ([(p out in err) (subprocess #f #f #f spindle "run" child (symbol->string mode))])
    (close-port in)
    (let* ([out (transcoded-port out (native-transcoder))]
           [ready (get-line out)]
           [t0 (now-ms)]
           [errs (box "")]
           [first-report (box #f)])
      (thread (lambda ()
                (let loop ([err (transcoded-port err (native-transcoder))])
                  (let ([l (get-line err)])
                    (unless (eof-object? l)
                      (unless (unbox first-report) (set-box! first-report (now-ms)))
                      (set-box! errs (string-append (unbox errs) l "\n"))
                      (loop err))))))
      (let ([done (sync/timeout 20 p)])
        (unless done (subprocess-kill p #t) (subprocess-wait p))
        (let ([rest (get-string-all out)])
          (wait-until (lambda () #f) 0.2)
          (list (subprocess-status p)
                (string-append (if (eof-object? ready) "" ready) "\n" (if (eof-object? rest) "" rest))
                (unbox errs)
                (and (unbox first-report) (/ (- (unbox first-report) t0) 1000.))))))))

(test "a parallel thread stuck in a foreign call that is not __collect_safe is named within 1-2 s"
  (let* ([r (run-child 'stall)] [err (caddr r)] [secs (cadddr r)])
    (check-equal "status" 0 (car r))
    (check (list "the program finishes" (cadr r)) (string-contains? (cadr r) "done"))
    (check (list "the report" err) (string-contains? err "a collection has waited 1.0 s for 1 OS thread not at a safe point"))
    (check (list "the green thread" err) (string-contains? err "running thread 1)"))
    (check (list "its pool" err) (string-contains? err "a worker of #<parallel-thread-pool 1>"))
    (check (list "outside Scheme" err) (string-contains? err "in a foreign call not declared __collect_safe"))
    (check (list "the system call it sits in" err) (string-contains? err "now: in the system call "))
    (check (list "what it last entered" err) (and (string-contains? err "stuck-in-usleep (") (string-contains? err (format "safety-child.ss line ~a)" stuck-line))))
    (check (list "reported once" err) (not (string-contains? (substring err 20 (string-length err)) "a collection has waited")))
    (printf "  (report ~a s after the stuck call began)\n" secs)
    (check (list "within a few seconds of ready" secs) (and secs (< 0.5 secs 3.5)))))

(test "a call-blocking helper stuck the same way"
  (let* ([r (run-child 'helper)] [err (caddr r)])
    (check-equal "status" 0 (car r))
    (check (list "the report" err) (string-contains? err "a collection has waited"))
    (check (list "a helper" err) (string-contains? err "not a worker: a helper OS thread of spindle's"))
    (check (list "what it last entered" err) (string-contains? err "stuck-in-usleep"))
    (check (list "the system call" err) (string-contains? err "now: in the system call "))))

(test "an OS thread made with fork-thread: the watchdog started by setting its threshold"
  (let* ([r (run-child 'raw)] [err (caddr r)])
    (check-equal "status" 0 (car r))
    (check (list "the report" err) (string-contains? err "a collection has waited"))
    (check (list "not a worker" err) (string-contains? err "not a worker: an OS thread spindle did not start"))
    (check (list "what it last entered" err) (string-contains? err "stuck-in-usleep"))))

(test "SPINDLE_WATCHDOG=off: no report"
  (putenv "SPINDLE_WATCHDOG" "off")
  (let ([r (run-child 'stall)])
    (putenv "SPINDLE_WATCHDOG" "on")
    (check-equal "status" 0 (car r))
    (check (list "no report" (caddr r)) (not (string-contains? (caddr r) "spindle watchdog")))))

;; ---------------------------------------------------------------- long slices
;; The number in #<thread N>.
(define (thread-number t)
  (let* ([s (format "~a" t)] [n (string-length s)]) (substring s 9 (- n 1))))

;; The integer right after the first occurrence of prefix in s.
(define (number-after s prefix)
  (let ([n (string-length s)] [k (string-length prefix)])
    (let find ([i 0])
      (cond
        [(> (+ i k) n) -1]
        [(string=? (substring s i (+ i k)) prefix)
         (let digits ([j (+ i k)])
           (if (and (< j n) (char-numeric? (string-ref s j)))
               (digits (+ j 1))
               (or (string->number (substring s (+ i k) j)) -1)))]
        [else (find (+ i 1))]))))

(define reports (box '()))
(define (reports-with s) (filter (lambda (r) (string-contains? r s)) (unbox reports)))

(test "a coroutine thread blocked 500 ms in a raw foreign call is reported with its name and time"
  (let ([old (watchdog-report-handler)])
    (watchdog-report-handler (lambda (text) (set-box! reports (cons text (unbox reports)))))
    (long-slice-report-ms 100)
    (let* ([t (thread (lambda () (raw-usleep 500000)))] [name (format "thread ~a (coroutine" (thread-number t))])
      (thread-wait t)
      (check "the report" (wait-until (lambda () (pair? (reports-with "has held its worker"))) 5))
      (check "the release" (wait-until (lambda () (pair? (reports-with "gave its worker"))) 5))
      (let ([held (car (reports-with "has held its worker"))] [back (car (reports-with "gave its worker"))])
        (check (list "names the thread" held name) (string-contains? held name))
        (check (list "the system call" held) (string-contains? held "; now in the system call "))
        (check (list "at least the limit" held) (>= (number-after held "for ") 100))
        (check (list "about the whole call" back) (<= 150 (number-after back "after about ") 1000))))
    (set-box! reports '())
    ;; a higher limit here: on a loaded machine the OS may not run a
    ;; worker for tens of milliseconds, which looks the same
    (long-slice-report-ms 300)
    (let ([t (thread (lambda () (let loop ([i 0]) (when (< i 30000000) (loop (+ i 1))))))])
      (thread-wait t)
      (sleep 0.3)
      (check (list "a thread that computes is preempted, not reported" (unbox reports))
             (null? (reports-with "has held its worker"))))
    (long-slice-report-ms #f)
    (watchdog-report-handler old)))

;; ---------------------------------------------------------------- define-blocking-foreign
(define (ticks-during thunk)
  (let* ([ticks 0] [stop (box #f)]
         [ticker (thread (lambda () (let loop () (unless (unbox stop) (set! ticks (+ ticks 1)) (sleep 0.01) (loop)))))])
    (sleep 0.03)
    (let ([t0 ticks])
      (thunk)
      (let ([n (- ticks t0)]) (set-box! stop #t) (thread-wait ticker) n))))

(test "define-blocking-foreign: other coroutine threads keep running during the call"
  (let ([blocked (ticks-during (lambda () (thread-wait (thread (lambda () (raw-usleep 400000))))))]
        [routed (ticks-during (lambda () (thread-wait (thread (lambda () (blocking-usleep 400000))))))])
    (printf "  (ticks of 10 ms during a 400 ms call: raw ~a, define-blocking-foreign ~a)\n" blocked routed)
    (check (list "the raw call stops the worker" blocked) (<= blocked 3))
    (check (list "the declared one does not" routed) (>= routed 15))))

(test "define-blocking-foreign: from a green thread on a helper, from a plain OS thread directly"
  (check "main thread: on another OS thread" (not (= (blocking-self) (raw-self))))
  (check "a coroutine thread: likewise"
    (thread-wait (thread (lambda () (not (= (blocking-self) (raw-self)))))))
  (let ([m (make-mutex)] [c (make-condition)] [result (box 'none)])
    (with-mutex m
      (fork-thread (lambda () (let ([same? (= (blocking-self) (raw-self))]) (with-mutex m (set-box! result same?) (condition-signal c)))))
      (let loop () (when (eq? (unbox result) 'none) (condition-wait c m) (loop))))
    (check "a plain OS thread calls directly" (eq? (unbox result) #t)))
  (check "with interrupts disabled: directly" (with-interrupts-disabled (= (blocking-self) (raw-self))))
  (check-equal "values come back" 0 (blocking-usleep 1000)))

;; ---------------------------------------------------------------- bad arguments
(test "bad arguments"
  (check-raises "collect-stall-report-seconds" (both (assertion-from? 'collect-stall-report-seconds) (irritant? -1))
    (lambda () (collect-stall-report-seconds -1)))
  (check-raises "collect-stall-report-seconds: not a number" (assertion-from? 'collect-stall-report-seconds)
    (lambda () (collect-stall-report-seconds 'soon)))
  (check-raises "long-slice-report-ms" (both (assertion-from? 'long-slice-report-ms) (irritant? 0))
    (lambda () (long-slice-report-ms 0)))
  (check-raises "watchdog-report-handler" (both (assertion-from? 'watchdog-report-handler) (irritant? 5))
    (lambda () (watchdog-report-handler 5)))
  (check-raises "define-blocking-foreign: not a name" syntax-violation?
    (lambda () (eval '(define-blocking-foreign 5 "usleep" (unsigned) int)
                     (environment '(chezscheme) '(spindle foreign)))))
  (check-equal "the settings are unchanged" 1.0 (collect-stall-report-seconds))
  (check-equal "long slices off" #f (long-slice-report-ms)))

(done)
