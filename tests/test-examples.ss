#!chezscheme
;;; Every program in examples/ runs, exits 0 and prints what it should, so
;;; that none rots: each under `bin/spindle run`, bounded by `timeout`
;;; (60 s), its output checked for its key lines.  The HTTP server answers
;;; a GET on 127.0.0.1 and examples/fetch.ss's workers (never the
;;; internet).  The examples that another test drives are listed in
;;; `elsewhere` with that test; an example in neither list fails the last
;;; test here, so a new one needs a check.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness))

(define bound 60)                       ; seconds an example may run
(test-limit (+ bound 30))

;; Runs `bin/spindle run examples/NAME.ss ARG ...` under timeout; returns
;; its exit status and its output (stdout and stderr).
(define (run-example name . args)
  (let-values ([(p out in err)
                (apply subprocess #f #f 'stdout (find-executable-path "timeout") "-k" "5" (number->string bound)
                       "bin/spindle" "run" (format "examples/~a.ss" name) args)])
    (close-port in)
    (let ([text (let ([bv (get-bytevector-all out)]) (if (eof-object? bv) "" (utf8->string bv)))])
      (close-port out)
      (subprocess-wait p)
      (values (subprocess-status p) text))))

;; Runs the example; it must exit 0 and print each of lines (substrings of
;; its output).  Prints the output when a check fails.
(define (check-example name args lines)
  (let-values ([(rc text) (apply run-example name args)])
    (unless (and (eqv? rc 0) (for-all (lambda (l) (string-contains? text l)) lines))
      (printf "examples/~a.ss exited ~a and printed:\n~a\n" name rc text))
    (check-equal (format "examples/~a.ss: exit status" name) 0 rc)
    (for-each (lambda (l) (check (format "examples/~a.ss printed ~s" name l) (string-contains? text l))) lines)
    text))

;; ---------------------------------------------------------------- programs
;; name, arguments, key lines
(define programs
  '(("channels" () ("(1 2 3)\n" "#<alarm-evt>"))
    ("executor" () ("fib(33) = 3524578" "fib(10) = 55" "fib(32) = 2178309, state now done"
                    "after waiting: 5702887" "a failing task: Exception" "executor state: shutdown"))
    ("futures" () ("sequential fib 36 = 14930352" "futures    fib 36 = 14930352" "touch raised: no luck"))
    ("mandelbrot" () ("@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@" "members drew rows"))
    ("pipeline" () ("12    144     145       (5 29)           #f"
                    "#((12) (12 144) (12 144 145) (12 144 145 (5 29)) (12 144 145 (5 29) #f))"))
    ("subprocess" () ("uname -s exited 0 and said \"Linux\\n\"" "sorted: \"apple\\nfig\\npear\\n\""
                      "sort exited 0" "10 x sleep 0.2 took" "status 137 (128 + SIGKILL)"))
    ;; the seed that fails and the fix's count are a function of the seeds
    ("simulation" () ("simulation failed with seed" "the same failure at the same step: #t"
                      "The fix over 1000 seeds: 1000 runs passed"))
    ;; the timings vary; that both kinds of threads ran does not
    ("sqrt-demo" () ("coroutine" "parallel"))))

(for-each
  (lambda (e)
    (test (format "examples/~a.ss runs and prints its results" (car e))
      (check-example (car e) (cadr e) (caddr e))))
  programs)

;; ---------------------------------------------------------------- the HTTP server and fetch
;; Starts examples/http-server.ss (a free port on 127.0.0.1), calls (f port),
;; then kills the server.
(define (with-http-server args f)
  (let-values ([(p out in err)
                (apply subprocess #f #f 'stdout (find-executable-path "timeout") "-k" "5" (number->string bound)
                       "bin/spindle" "run" "examples/http-server.ss" args)])
    (let ([lines (transcoded-port out (native-transcoder))] [prefix "listening on "])
      (dynamic-wind
        void
        (lambda ()
          (let ([line (get-line lines)])
            (check (format "the server's first line: ~s" line)
                   (and (string? line) (string-contains? line prefix)))
            (f (string->number (substring line (string-length prefix) (string-length line))))))
        (lambda ()
          ;; SIGTERM: timeout passes it on to the server (SIGKILL would
          ;; end only timeout, and leave the server running)
          (subprocess-kill p #f)
          (subprocess-wait p)
          (close-port in)
          (close-port lines))))))

;; One GET / on a new connection: the whole reply as a string.
(define (get-reply port)
  (let-values ([(in out) (tcp-connect "127.0.0.1" port)])
    (put-bytevector out (string->utf8 "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
    (flush-output-port out)
    (let ([reply (sync/timeout 10 (thread (lambda () (get-bytevector-all in)) #:keep 'results))])
      (close-port in)
      (close-port out)
      (check "a reply within 10 s" reply)
      (let ([bv (thread-wait reply)]) (if (eof-object? bv) "" (utf8->string bv))))))

(define (check-get port)
  (let ([reply (get-reply port)])
    (check (format "GET / answers 200: ~s" reply) (string-contains? reply "HTTP/1.1 200 OK"))
    (check (format "GET / says hello: ~s" reply) (string-contains? reply "Hello, world!"))))

(test "examples/http-server.ss answers GET / and examples/fetch.ss's workers"
  (with-http-server '()
    (lambda (port)
      (check-get port)
      (let* ([text (check-example "fetch" (list "--workers" "4" "--requests" "40" (format "http://127.0.0.1:~a/" port))
                                  '("per worker (" "elapsed "))]
             [counts (let ([i (let loop ([i 0]) (if (string=? (substring text i (+ i 11)) "per worker ") i (loop (+ i 1))))])
                       (read (open-string-input-port (substring text (+ i 11) (string-length text)))))])
        (check-equal "fetch: 4 workers made the 40 requests" '(4 40) (list (length counts) (apply + counts)))))))

(test "examples/http-server.ss --pool 2 answers GET /"
  (with-http-server '("--pool" "2") check-get))

;; ---------------------------------------------------------------- every example
;; The examples run by another test: name and that test.
(define elsewhere
  '(("echo-server" . "tests/test-io-writes.ss")
    ("deadline-server" . "tests/test-scope.ss")
    ("shared-table" . "tests/test-sharing.ss")))

(define run-here (append (map car programs) '("http-server" "fetch")))

(test "every program in examples/ is run by this test or by the one named"
  (for-each
    (lambda (file)
      (let ([n (string-length file)])
        (when (and (> n 3) (string=? (substring file (- n 3) n) ".ss"))
          (let* ([name (substring file 0 (- n 3))] [other (assoc name elsewhere)])
            (check (format "examples/~a is run by tests/test-examples.ss or listed in its `elsewhere`" file)
                   (or (member name run-here) other))
            (when other
              (check (format "~a runs examples/~a" (cdr other) file)
                     (string-contains? (call-with-input-file (cdr other) get-string-all)
                                       (format "examples/~a" file))))))))
    (directory-list "examples")))

(done)
