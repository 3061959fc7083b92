#!chezscheme
;;; A small test harness.  Every test runs under a watchdog OS thread: one
;;; that overruns its limit prints FAIL and ends the process, so a deadlock
;;; fails the test instead of hanging.
(library (harness)
  (export test test-limit check check-equal check-raises done
          values->list assertion-from? irritant? both string-contains?)
  (import (chezscheme))

  (define test-limit (make-parameter 30))   ; seconds
  (define failures 0)
  (define passes 0)
  (define current-name #f)
  (define generation 0)
  (define lock (make-mutex))

  (define os-exit
    (begin (load-shared-object "libc.so.6") (foreign-procedure "_exit" (int) void)))

  ;; Interrupts stay disabled while the lock is held: a collection must never
  ;; start on an OS thread that holds it while the other waits for it.
  (define-syntax locked
    (syntax-rules ()
      [(_ body ...) (with-interrupts-disabled (with-mutex lock body ...))]))

  (define (watchdog gen name limit)
    (fork-thread
      (lambda ()
        (let loop ([left (* limit 10)])
          (sleep (make-time 'time-duration 100000000 0))
          (locked
            (when (= gen generation)
              (when (<= left 0)
                (printf "FAIL ~a: no result within ~as (deadlock?)\n" name limit)
                (flush-output-port (current-output-port))
                ;; Chez's exit in a forked thread ends only that thread
                (os-exit 3))))
          (when (locked (= gen generation)) (loop (- left 1)))))))

  (define-syntax test
    (syntax-rules ()
      [(_ name body ...) (run-test name (lambda () body ...))]))

  (define (run-test name thunk)
    (let ([gen (locked (set! generation (+ generation 1)) generation)])
      (watchdog gen name (test-limit))
      (let ([r (call/cc
                 (lambda (k)
                   (with-exception-handler
                     (lambda (c) (k (cons 'error c)))
                     (lambda () (thunk) 'ok))))])
        (locked (set! generation (+ generation 1)))
        (if (eq? r 'ok)
            (begin (set! passes (+ passes 1)) (printf "ok ~a\n" name))
            (begin
              (set! failures (+ failures 1))
              (printf "FAIL ~a: " name)
              (let ([c (cdr r)])
                (if (condition? c) (display-condition c) (write c)))
              (newline)))
        (flush-output-port (current-output-port)))))

  (define (check what ok?)
    (unless ok? (error 'check "check failed" what)))

  (define (check-equal what expected actual)
    (unless (equal? expected actual)
      (error 'check "not equal" what 'expected expected 'actual actual)))

  ;; Runs thunk; the raised condition must satisfy pred.
  (define (check-raises what pred thunk)
    (let ([r (call/cc (lambda (k) (with-exception-handler (lambda (c) (k (list c))) (lambda () (thunk) #f))))])
      (unless (and r (pred (car r)))
        (error 'check "expected an exception" what (if r (car r) 'none)))))

  ;; Condition predicates for check-raises.
  (define (assertion-from? who)
    (lambda (c) (and (assertion-violation? c) (who-condition? c) (eq? (condition-who c) who))))
  (define (irritant? v)
    (lambda (c) (and (irritants-condition? c) (member v (condition-irritants c)) #t)))
  (define (both p q) (lambda (c) (and (p c) (q c))))
  (define (values->list thunk) (call-with-values thunk list))

  ;; The file's own count, last: tests/run.sh prefers it to counting
  ;; `ok` lines, which another thread's output could join.
  (define (done)
    (printf "harness: ~a passed, ~a failed\n" passes failures)
    (flush-output-port (current-output-port))
    (exit (if (= failures 0) 0 1)))

  ;; #t if sub occurs in s.
  (define (string-contains? s sub)
    (let ([n (string-length s)] [m (string-length sub)])
      (let loop ([i 0])
        (and (<= (+ i m) n)
             (or (string=? (substring s i (+ i m)) sub) (loop (+ i 1))))))))
