#!chezscheme
;;; Subprocesses (issue 10, part 4) and console ports (part 5): exit codes,
;;; pipes, kill, no zombies, subprocesses as evts, waits that never stop
;;; other threads, a child reading stdin from a slow pipe.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness))

(test-limit 60)

(define (now-ms) (current-inexact-monotonic-milliseconds))

(define c-waitpid (begin (load-shared-object "libc.so.6") (foreign-procedure "waitpid" (int uptr int) int)))

;; No child left, running or zombie: waitpid(-1, WNOHANG) fails (ECHILD).
(define (no-children?) (fx= -1 (c-waitpid -1 0 1)))

(define (read-all-string in) (let ([b (get-bytevector-all in)]) (if (eof-object? b) "" (utf8->string b))))

(test "exit codes"
  (let-values ([(p o i e) (subprocess #f #f #f "/bin/sh" "-c" "exit 3")])
    (check "subprocess?" (subprocess? p))
    (check "not subprocess?" (not (subprocess? 3)))
    (check "pid" (> (subprocess-pid p) 0))
    (subprocess-wait p)
    (check-equal "exit 3" 3 (subprocess-status p))
    (for-each close-port (list o i e)))
  (check-equal "/bin/true" #t (system* "/bin/true"))
  (check-equal "/bin/false" #f (system* "/bin/false"))
  (check-equal "exit code of false" 1 (system*/exit-code "/bin/false"))
  (check-equal "shell variant" 7 (shell-command/exit-code "exit 7")))

(test "read a child's stdout, write its stdin (cat)"
  (let-values ([(p o i e) (subprocess #f #f #f "/bin/cat")])
    (check "running" (eq? 'running (subprocess-status p)))
    (let ([writer (thread (lambda ()
                            (do ([k 0 (+ k 1)]) ((= k 1000))
                              (put-bytevector i (string->utf8 (format "line ~a\n" k))))
                            (close-port i)))])
      (let ([text (read-all-string o)])
        (check-equal "all lines back" 1000 (length (filter (lambda (c) (char=? c #\newline)) (string->list text))))
        (check "last line" (string=? "line 999\n" (substring text (- (string-length text) 9) (string-length text)))))
      (thread-wait writer))
    (subprocess-wait p)
    (check-equal "cat exits 0" 0 (subprocess-status p))
    (close-port o) (close-port e)))

(test "stderr 'stdout, and ports given by the caller"
  (let-values ([(p o i e) (subprocess #f #f 'stdout "/bin/sh" "-c" "echo out; echo err >&2")])
    (check "no stderr port" (not e))
    (close-port i)
    (check-equal "both on stdout" "out\nerr\n" (read-all-string o))
    (subprocess-wait p)
    (close-port o))
  ;; the child writes into a pipe of ours given as its stdout
  (let-values ([(p1 o1 i1 e1) (subprocess #f #f #f "/bin/cat")])
    (let-values ([(p2 o2 i2 e2) (subprocess i1 #f #f "/bin/echo" "through")])
      (check "no stdout port when given" (not o2))
      (subprocess-wait p2)
      (close-port i1)                        ; the only writer left was echo
      (check-equal "echo into cat" "through\n" (read-all-string o1))
      (subprocess-wait p1)
      (for-each close-port (list i2 e2 o1 e1)))))

(test "kill, forced and not"
  (let-values ([(p o i e) (subprocess #f #f #f "/bin/sleep" "10")])
    (check "running" (eq? 'running (subprocess-status p)))
    (subprocess-kill p #t)
    (check-equal "SIGKILL: 128 + 9" 137 (subprocess-status p))
    (subprocess-kill p #t)                   ; no effect once ended
    (for-each close-port (list o i e)))
  (let-values ([(p o i e) (subprocess #f #f #f "/bin/sleep" "10")])
    (subprocess-kill p #f)
    (subprocess-wait p)
    (check-equal "SIGINT: 128 + 2" 130 (subprocess-status p))
    (for-each close-port (list o i e))))

(test "a custodian kills its subprocesses; a shut-down one refuses new ones"
  (let ([c (make-custodian)])
    (let-values ([(p out in err) (parameterize ([current-custodian c])
                                   (subprocess #f #f #f "/bin/sleep" "10"))])
      (check "listed" (memq p (custodian-managed-list c (current-custodian))))
      (custodian-shutdown-all c)
      (check-equal "killed" 137 (sync/timeout 5 (wrap-evt p (lambda (p) (subprocess-status p)))))
      (for-each close-port (list out in err))
      (check-raises "refused" (lambda (x) (and (error? x) (eq? (condition-who x) 'subprocess)))
        (lambda () (parameterize ([current-custodian c]) (subprocess #f #f #f "/bin/true")))))))

(test "200 subprocesses from 20 threads, no zombie left"
  (let ([ts (map (lambda (k)
                   (thread (lambda ()
                             (let loop ([j 0] [ok 0])
                               (if (= j 10)
                                   ok
                                   (let-values ([(p o i e) (subprocess #f #f #f "/bin/sh" "-c" (format "exit ~a" (mod j 5)))])
                                     (for-each close-port (list o i e))
                                     (subprocess-wait p)
                                     (loop (+ j 1) (if (= (subprocess-status p) (mod j 5)) (+ ok 1) ok))))))
                           #f 'results))
                 (iota 20))])
    (check-equal "every exit code" (make-list 20 10) (map thread-wait ts))
    (check "no child left" (no-children?))))

(test "a subprocess is an evt; in a choice with an alarm"
  (let-values ([(p o i e) (subprocess #f #f #f "/bin/sleep" "1")])
    (check "alarm first" (not (sync/timeout 0.05 p)))
    (check-equal "alarm wins the choice" 'alarm
                 (sync (choice-evt (wrap-evt p (lambda (_) 'exited))
                                   (wrap-evt (alarm-evt (+ (current-inexact-milliseconds) 50)) (lambda (_) 'alarm)))))
    (subprocess-kill p #t)
    (check-equal "ready after exit, result is itself" p (sync p))
    (for-each close-port (list o i e))))

(test "a thread waiting on `sleep 1` does not stop the others"
  (let* ([count 0]
         [spinner (thread (lambda () (let loop () (set! count (+ count 1)) (loop))))]
         [t0 (now-ms)]
         [waiter (thread (lambda () (system*/exit-code "/bin/sleep" "1")) #f 'results)])
    (sleep 0.3)
    (let ([c count])
      (check "the spinner ran while one thread waited" (> c 10000))
      (check-equal "sleep exits 0" 0 (thread-wait waiter))
      (check "took about 1 s" (< 900 (- (now-ms) t0) 3000)))
    (kill-thread spinner)))

(test "20 threads each running sleep 0.1 overlap"
  (let* ([t0 (now-ms)]
         [ts (map (lambda (k) (thread (lambda () (system* "sleep" "0.1")) #f 'results)) (iota 20))])
    (check "all ok" (andmap values (map thread-wait ts)))
    (let ([ms (- (now-ms) t0)])
      (check "well under 2 s" (< ms 1000))
      (printf "  20 x sleep 0.1: ~a ms\n" (round ms)))))

(test "process*, run-command, find-executable-path"
  (let ([l (process* "sh" "-c" "read x; echo got $x; exit 4")])
    (let ([o (list-ref l 0)] [i (list-ref l 1)] [ctl (list-ref l 4)])
      (check "pid" (integer? (list-ref l 2)))
      (put-bytevector i (string->utf8 "hello\n")) (close-port i)
      (check-equal "output" "got hello\n" (read-all-string o))
      (ctl 'wait)
      (check-equal "status" 'done-error (ctl 'status))
      (check-equal "exit-code" 4 (ctl 'exit-code))
      (close-port o) (close-port (list-ref l 3))))
  (let-values ([(code out) (run-command "echo" "a" "b")])
    (check-equal "code" 0 code)
    (check-equal "output" "a b\n" out))
  (check "sh on PATH" (let ([f (find-executable-path "sh")]) (and f (file-exists? f))))
  (check "not on PATH" (not (find-executable-path "no-such-command-spindle"))))

(test "errors: command not found, bad arguments"
  (check-raises "not found" (lambda (c) (and (error? c) (who-condition? c) (eq? 'subprocess (condition-who c))))
                (lambda () (subprocess #f #f #f "/no/such/program")))
  (check-raises "relative name not searched" (lambda (c) (and (error? c) (eq? 'subprocess (condition-who c))))
                (lambda () (subprocess #f #f #f "no-such-command-spindle")))
  (check-raises "not executable" (lambda (c) (and (error? c) (eq? 'subprocess (condition-who c))))
                (lambda () (subprocess #f #f #f "/etc/passwd")))
  (check-raises "run-command not found" (lambda (c) (and (error? c) (eq? 'run-command (condition-who c))))
                (lambda () (run-command "no-such-command-spindle")))
  (check-raises "command not a string" (assertion-from? 'subprocess) (lambda () (subprocess #f #f #f 'ls)))
  (check-raises "arg not a string" (assertion-from? 'subprocess) (lambda () (subprocess #f #f #f "/bin/echo" 3)))
  (check-raises "string port as stdout" (assertion-from? 'subprocess)
                (lambda () (subprocess (open-output-string) #f #f "/bin/true")))
  (check-raises "bad stdin" (assertion-from? 'subprocess) (lambda () (subprocess #f 'stdout #f "/bin/true")))
  (let-values ([(p o i e) (subprocess #f #f #f "/bin/true")])
    (check-raises "an input port as stdout" (assertion-from? 'subprocess) (lambda () (subprocess o #f #f "/bin/true")))
    (check-raises "an output port as stdin" (assertion-from? 'subprocess) (lambda () (subprocess #f i #f "/bin/true")))
    (subprocess-wait p)
    (for-each close-port (list o i e)))
  (check-raises "status of a non-subprocess" (assertion-from? 'subprocess-status) (lambda () (subprocess-status 1)))
  (check "no child left after the errors" (no-children?)))

(test "a child reads stdin from a slow pipe while its spinner keeps running"
  (let-values ([(p o i e) (subprocess #f #f #f (string-append (current-directory) "/bin/spindle")
                                      "run" (string-append (current-directory) "/tests/support/stdin-child.ss"))])
    (sleep 1.0)                              ; the child starts and waits on its stdin
    (do ([k 0 (+ k 1)]) ((= k 3))
      (put-bytevector i (string->utf8 (format "line ~a\n" k)))
      (flush-output-port i)
      (sleep 0.2))
    (close-port i)
    (let* ([text (read-all-string o)]
           [words (let loop ([cs (string->list text)] [w '()] [acc '()])
                    (cond
                      [(null? cs) (reverse (if (null? w) acc (cons (list->string (reverse w)) acc)))]
                      [(char-whitespace? (car cs)) (loop (cdr cs) '() (if (null? w) acc (cons (list->string (reverse w)) acc)))]
                      [else (loop (cdr cs) (cons (car cs) w) acc)]))])
      (subprocess-wait p)
      (check-equal "child exit" 0 (subprocess-status p))
      (check "report line" (and (= 4 (length words)) (string=? "lines" (car words))))
      (check-equal "three lines" "3" (cadr words))
      (let ([spun (string->number (cadddr words))])
        (printf "  child's spinner ran ~a times while its reader waited\n" spun)
        (check "the spinner ran while the reader waited" (> spun 10000))))
    (close-port o) (close-port e)))

(test "a child writing to a full stdout pipe parks; its spinner keeps running"
  (let-values ([(p o i e) (subprocess #f #f #f (string-append (current-directory) "/bin/spindle")
                                      "run" (string-append (current-directory) "/tests/support/stdout-child.ss"))])
    (close-port i)
    (sleep 1.5)                              ; the child fills the pipe and waits
    (let* ([n (bytevector-length (get-bytevector-all o))] [report (read-all-string e)])   ; in this order
      (subprocess-wait p)
      (check-equal "child exit" 0 (subprocess-status p))
      (check-equal "every byte" 1000000 n)
      (let ([spun (string->number (substring report 5 (- (string-length report) 1)))])
        (printf "  child's spinner ran ~a times while its writer waited\n" spun)
        (check "the spinner ran while the writer waited" (and spun (> spun 10000)))))
    (close-port o) (close-port e)))

(done)
