#!chezscheme
;;; Subprocesses from coroutine threads: bin/spindle run examples/subprocess.ss
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

;; The common case: run a command, get its exit code and output.
(let-values ([(code out) (run-command "uname" "-s")])
  (printf "uname -s exited ~a and said ~s\n" code out))

;; Racket's subprocess: talk to a child through its pipes.
(let-values ([(p stdout stdin stderr) (subprocess #f #f #f (find-executable-path "sort"))])
  (put-bytevector stdin (string->utf8 "pear\napple\nfig\n"))
  (close-port stdin)
  (printf "sorted: ~s\n" (utf8->string (get-bytevector-all stdout)))
  (subprocess-wait p)
  (printf "sort exited ~a\n" (subprocess-status p))
  (close-port stdout) (close-port stderr))

;; Ten threads each wait on a child; the waits overlap (about 0.2 s, not 2 s).
(let ([t0 (current-inexact-monotonic-milliseconds)])
  (for-each thread-wait
            (map (lambda (i) (thread (lambda () (system* "sleep" "0.2")))) (iota 10)))
  (printf "10 x sleep 0.2 took ~a ms\n" (round (- (current-inexact-monotonic-milliseconds) t0))))

;; A subprocess is an evt: wait for it with a timeout.
(let-values ([(p o i e) (subprocess #f #f #f "/bin/sleep" "5")])
  (unless (sync/timeout 0.1 p)
    (printf "still running after 0.1 s: killing it\n")
    (subprocess-kill p #t))
  (printf "status ~a (128 + SIGKILL)\n" (subprocess-status p))
  (for-each close-port (list o i e)))
