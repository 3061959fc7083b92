#!chezscheme
;;; spindle trace / SPINDLE_TRACE and spindle trace-view: a small program
;;; traced (coroutine and parallel threads, a future, a sleep), its JSON
;;; checked, its HTML page loaded in headless chromium (when installed;
;;; `make test` installs it) and the page's DOM compared with the trace.
;;; The screenshot stays in the test's directory for a person to look at.
(import (chezscheme) (harness)
        (only (spindle private os processes) own-pid shell-command))

(test-limit 120)

(define work (format "/tmp/spindle-test-trace-~a" (own-pid)))
(define (path f) (string-append work "/" f))
(define (sh fmt . args) (shell-command (string-append "set -e; " (apply format fmt args))))

(define program-text "#!chezscheme
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
(define (spin n) (let loop ([i 0] [s 0]) (if (fx= i n) s (loop (fx+ i 1) (fx+ s i)))))
(define pool (make-parallel-thread-pool 2))
(define ch (make-channel))
(define ts (list (thread (lambda () (channel-put ch (spin 300000))))
                 (thread (lambda () (spin 300000) (sleep 0.01)) #:pool pool)
                 (thread (lambda () (spin 300000) (make-list 100000)) #:pool pool)))
(define f (future (lambda () (spin 200000))))
(channel-get ch)
(touch f)
(for-each thread-wait ts)
(sleep 0.005)
(printf \"done\\n\")
")

;; ------------------------------------------------------------ a small JSON reader
;; objects -> alists (string keys), arrays -> lists, null -> 'null.
(define (read-json p)
  (define (skip) (let ([c (peek-char p)]) (when (and (char? c) (char-whitespace? c)) (read-char p) (skip))))
  (define (expect s) (string-for-each (lambda (c) (unless (eqv? (read-char p) c) (error 'read-json "bad literal" s))) s))
  (define (str)
    (read-char p)
    (let loop ([acc '()])
      (let ([c (read-char p)])
        (cond
          [(char=? c #\") (list->string (reverse acc))]
          [(char=? c #\\)
           (let ([e (read-char p)])
             (case e
               [(#\n) (loop (cons #\newline acc))]
               [(#\t) (loop (cons #\tab acc))]
               [(#\u) (let ([hex (list->string (list (read-char p) (read-char p) (read-char p) (read-char p)))])
                        (loop (cons (integer->char (string->number hex 16)) acc)))]
               [else (loop (cons e acc))]))]
          [else (loop (cons c acc))]))))
  (define (num)
    (let loop ([acc '()])
      (let ([c (peek-char p)])
        (if (and (char? c) (or (char-numeric? c) (memv c '(#\- #\+ #\. #\e #\E))))
            (begin (read-char p) (loop (cons c acc)))
            (string->number (list->string (reverse acc)))))))
  (define (value)
    (skip)
    (let ([c (peek-char p)])
      (cond
        [(char=? c #\{) (read-char p)
         (let loop ([acc '()])
           (skip)
           (if (char=? (peek-char p) #\}) (begin (read-char p) (reverse acc))
               (let ([k (begin (skip) (str))])
                 (skip) (read-char p)              ; :
                 (let ([v (value)])
                   (skip)
                   (when (char=? (peek-char p) #\,) (read-char p))
                   (loop (cons (cons k v) acc))))))]
        [(char=? c #\[) (read-char p)
         (let loop ([acc '()])
           (skip)
           (if (char=? (peek-char p) #\]) (begin (read-char p) (reverse acc))
               (let ([v (value)])
                 (skip)
                 (when (char=? (peek-char p) #\,) (read-char p))
                 (loop (cons v acc)))))]
        [(char=? c #\") (str)]
        [(char=? c #\t) (expect "true") #t]
        [(char=? c #\f) (expect "false") #f]
        [(char=? c #\n) (expect "null") 'null]
        [else (num)])))
  (value))

(define (get e k) (let ([x (assoc k e)]) (and x (cdr x))))
(define (arg e k) (let ([a (get e "args")]) (and a (get a k))))
(define (count pred l) (fold-left (lambda (n x) (if (pred x) (+ n 1) n)) 0 l))
(define (lane e) (cons (get e "pid") (get e "tid")))
(define (run? e) (and (equal? (get e "ph") "X") (equal? (get e "cat") "run")))
(define (named? name) (lambda (e) (equal? (get e "name") name)))

(define (string-count s sub)
  (let ([n (string-length s)] [k (string-length sub)])
    (let loop ([i 0] [c 0])
      (cond [(> (+ i k) n) c]
            [(string=? (substring s i (+ i k)) sub) (loop (+ i k) (+ c 1))]
            [else (loop (+ i 1) c)]))))

(define events #f)

(test "spindle trace writes a Chrome trace of the program"
  (check-equal "work directory" 0 (sh "rm -rf ~a && mkdir -p ~a" work work))
  (call-with-output-file (path "prog.ss") (lambda (p) (put-string p program-text)))
  (check-equal "spindle trace runs the program" 0
    (sh "bin/spindle trace -o ~a ~a > ~a 2> ~a" (path "run.json") (path "prog.ss") (path "out") (path "err")))
  (check-equal "the program's output" "done\n" (call-with-input-file (path "out") get-string-all))
  (let ([doc (call-with-input-file (path "run.json") read-json)])
    (check "an object with traceEvents" (and (list? doc) (list? (get doc "traceEvents"))))
    (set! events (filter (lambda (e) (not (equal? (get e "ph") "M"))) (get doc "traceEvents")))))

(test "the trace has the events of threads, futures and the collector"
  (let ([runs (filter run? events)])
    (check "run spans" (> (length runs) 3))
    (check "on several OS threads (main pool and the parallel pool)"
           (> (length (fold-left (lambda (acc e) (if (member (lane e) acc) acc (cons (lane e) acc))) '() runs)) 2))
    (check-equal "4 threads spawned (3 and the future's)" 4 (count (named? "spawn") events))
    (check-equal "and 4 finished" 4 (count (named? "finish") events))
    (check "a park on the sleep" (exists (lambda (e) (and ((named? "park") e) (equal? (arg e "reason") "sleep"))) events))
    (check "a park on the channel" (exists (lambda (e) (and ((named? "park") e) (equal? (arg e "reason") "channel"))) events))
    (check "wakes" (> (count (named? "wake") events) 0))
    (check-equal "future created" 1 (count (named? "future-create") events))
    (check-equal "future touched" 1 (count (named? "future-touch") events))
    (check-equal "future ran" 1 (count (lambda (e) (equal? (get e "cat") "future")) (filter (lambda (e) (get e "dur")) events)))
    (check "every event has a ts, pid and tid"
           (for-all (lambda (e) (and (integer? (get e "ts")) (integer? (get e "pid")) (integer? (get e "tid")))) events))))

(test "spans are well formed and time runs forward on each lane"
  (let ([lanes (fold-left (lambda (acc e) (if (member (lane e) acc) acc (cons (lane e) acc))) '() events)])
    (for-each
      (lambda (l)
        (let* ([mine (filter (lambda (e) (equal? (lane e) l)) events)]
               [instants (filter (lambda (e) (equal? (get e "ph") "i")) mine)]
               [runs (filter run? mine)])
          (check (list 'instants-in-order l)
                 (let loop ([es instants] [t 0])
                   (or (null? es) (and (>= (get (car es) "ts") t) (loop (cdr es) (get (car es) "ts"))))))
          (check (list 'durations-not-negative l) (for-all (lambda (e) (>= (get e "dur") 0)) runs))
          ;; one thread at a time on an OS thread: run spans never overlap
          (check (list 'run-spans-in-order-without-overlap l)
                 (let loop ([es runs] [end 0])
                   (or (null? es)
                       (and (>= (get (car es) "ts") end)
                            (loop (cdr es) (+ (get (car es) "ts") (get (car es) "dur")))))))))
      lanes)))

(test "off by default: no SPINDLE_TRACE, no file"
  (check-equal "plain run" 0 (sh "cd ~a && env -u SPINDLE_TRACE ~a/bin/spindle run prog.ss > out2" work (current-directory)))
  (check-equal "only what the test made" '("err" "out" "out2" "prog.ss" "run.json")
    (list-sort string<? (directory-list work))))

(define ring-program-text "#!chezscheme
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
(define n (string->number (cadr (command-line))))
(define a (make-channel))
(define b (make-channel))
(define p (dynamic-place (string-append (current-directory) \"/pinger.ss\") 'start))
(define t (thread (lambda () (let loop ([i 0]) (when (< i n) (channel-put b (channel-get a)) (loop (+ i 1)))))))
(let loop ([i 0])
  (when (< i n)
    (channel-put a i)
    (channel-get b)
    (when (= 0 (mod i 1000)) (place-channel-put/get p i))
    (loop (+ i 1))))
(thread-wait t)
(place-channel-put p 'stop)
(place-wait p)
(printf \"done\\n\")
")

(define pinger-text "#!chezscheme
(import (only (spindle) place-channel-get place-channel-put))
(define (start ch)
  (let loop ()
    (let ([m (place-channel-get ch)])
      (unless (eq? m 'stop) (place-channel-put ch m) (loop)))))
")

(define (file-size f) (call-with-port (open-file-input-port f) port-length))

;; A bounded trace keeps the end of the run: a run whose full trace is
(test "a fork-join run shows each member's barriers on its own place's lane"
  (call-with-output-file (path "fj.ss")
    (lambda (p) (put-string p "(import (chezscheme) (fork-join-lib))\n(write (fj-barrier-many 2 20))\n")))
  (check-equal "traced" 0
    (sh "SPINDLE_LIBDIRS=~a/tests/support bin/spindle trace -o ~a ~a > ~a 2>/dev/null" (current-directory) (path "fj.json") (path "fj.ss") (path "fj.out")))
  (check-equal "no mismatch, 20 barriers in each member" "#((0 20) (0 20))"
    (call-with-input-file (path "fj.out") get-string-all))
  (let* ([es (get (call-with-input-file (path "fj.json") read-json) "traceEvents")]
         [bs (filter (lambda (e) (and (equal? (get e "ph") "X") (equal? (get e "cat") "cg"))) es)])
    (check-equal "20 barrier spans per member" '(20 20)
      (map (lambda (m) (count (lambda (e) (equal? (arg e "member") m)) bs)) '(0 1)))
    (check "the two members' spans are in two processes"
      (not (equal? (get (find (lambda (e) (equal? (arg e "member") 0)) bs) "pid")
                   (get (find (lambda (e) (equal? (arg e "member") 1)) bs) "pid"))))
    (check "each span has a duration" (for-all (lambda (e) (integer? (get e "dur"))) bs)))
  (check-equal "trace-view draws it" 0 (sh "bin/spindle trace-view ~a -o ~a 2>/dev/null" (path "fj.json") (path "fj.html")))
  (check "with the barrier table" (> (string-count (call-with-input-file (path "fj.html") get-string-all) "id=\"barriers\"") 0)))

;; ~75 MB (100,000 channel round trips and a place) written with --limit
;; 300KB, then with SPINDLE_TRACE_LIMIT=1s.
(test "spindle trace --limit keeps the newest events within the limit, and the viewer reads them"
  (call-with-output-file (path "ring.ss") (lambda (p) (put-string p ring-program-text)))
  (call-with-output-file (path "pinger.ss") (lambda (p) (put-string p pinger-text)))
  (check-equal "traced with --limit 300KB" 0
    (sh "cd ~a && ~a/bin/spindle trace --limit 300KB -o ring.json ring.ss 100000 > ring.out 2> ring.err" work (current-directory)))
  (check-equal "the program ran" "done\n" (call-with-input-file (path "ring.out") get-string-all))
  (check "the file is within the limit" (<= (file-size (path "ring.json")) (* 300 1024)))
  (check "and holds most of it" (> (file-size (path "ring.json")) (* 250 1024)))
  (let* ([doc (call-with-input-file (path "ring.json") read-json)]
         [all (get doc "traceEvents")]
         [es (filter (lambda (e) (not (equal? (get e "ph") "M"))) all)])
    (check "names for the processes (the program and its place)" (= 2 (count (named? "process_name") all)))
    (check "the ponger thread's finish, one of the last events, is kept" (exists (named? "finish") es))
    (check "events of the place are kept" (> (length (fold-left (lambda (acc e) (if (memv (get e "pid") acc) acc (cons (get e "pid") acc))) '() es)) 1))
    (for-each
      (lambda (l)
        (let ([mine (filter (lambda (e) (equal? (lane e) l)) es)])
          (check (list 'instants-in-order l)
                 (let loop ([es (filter (lambda (e) (equal? (get e "ph") "i")) mine)] [t 0])
                   (or (null? es) (and (>= (get (car es) "ts") t) (loop (cdr es) (get (car es) "ts"))))))
          (check (list 'run-spans-in-order-without-overlap l)
                 (let loop ([es (filter run? mine)] [end 0])
                   (or (null? es)
                       (and (>= (get (car es) "ts") end)
                            (loop (cdr es) (+ (get (car es) "ts") (get (car es) "dur")))))))))
      (fold-left (lambda (acc e) (if (member (lane e) acc) acc (cons (lane e) acc))) '() es)))
  (check-equal "trace-view reads it" 0 (sh "bin/spindle trace-view ~a -o ~a 2>/dev/null" (path "ring.json") (path "ring.html")))
  (check "the page holds it" (> (file-size (path "ring.html")) (file-size (path "ring.json"))))
  (check-equal "traced with SPINDLE_TRACE_LIMIT=1s" 0
    (sh "cd ~a && SPINDLE_TRACE_LIMIT=1s ~a/bin/spindle trace -o ring-s.json ring.ss 20000 > /dev/null 2>&1" work (current-directory)))
  (let* ([es (filter (lambda (e) (not (equal? (get e "ph") "M"))) (get (call-with-input-file (path "ring-s.json") read-json) "traceEvents"))]
         [ts (map (lambda (e) (get e "ts")) es)])
    (check "events within the last second" (< (- (apply max ts) (apply min ts)) 1200000))))

(test "trace-view writes one self-contained page"
  (check-equal "trace-view" 0 (sh "bin/spindle trace-view ~a -o ~a 2>/dev/null" (path "run.json") (path "run.html")))
  (let ([html (call-with-input-file (path "run.html") get-string-all)])
    (check "the trace is in it" (> (string-count html "\"traceEvents\"") 0))
    (check "nothing loaded from the network" (= 0 (+ (string-count html "src=\"http") (string-count html "href=\"http"))))))

(define chromium
  (let ([p (path "which")])
    (and (= 0 (shell-command (format "command -v chromium > ~a 2>/dev/null" p)))
         (let ([l (call-with-input-file p get-line)]) (and (string? l) l)))))

(if (not chromium)
    (begin
      (printf "skip: chromium is not installed, the page was not checked in a browser (make test installs it: apt-get install -y chromium)\n")
      (flush-output-port (current-output-port)))
    (test "the page in headless chromium: lanes and spans as in the trace, and a screenshot"
      (let ([flags (format "--headless --no-sandbox --disable-gpu --user-data-dir=~a --window-size=1400,900" (path "chromium-profile"))]
            [url (string-append "file://" (path "run.html"))])
        (check-equal "dump-dom" 0
          (sh "timeout -k 5 60 ~a ~a --dump-dom ~a > ~a 2>/dev/null" chromium flags url (path "dom.html")))
        (let ([dom (call-with-input-file (path "dom.html") get-string-all)]
              [lanes (fold-left (lambda (acc e)
                                  (if (or (equal? (get e "cat") "gc") (member (lane e) acc)) acc (cons (lane e) acc)))
                                '() events)])
          (check-equal "a bar per run span" (count run? events) (string-count dom "class=\"run\""))
          (check-equal "a lane per OS thread" (length lanes) (string-count dom "class=\"lane\""))
          (check "the summary table was filled" (> (string-count dom "busy %") 0)))
        (check-equal "screenshot" 0
          (sh "timeout -k 5 60 ~a ~a --screenshot=~a ~a > /dev/null 2>&1" chromium flags (path "timeline.png") url))
        (check-equal "it is not empty" 0 (sh "test $(stat -c %s ~a) -gt 5000" (path "timeline.png")))
        (printf "screenshot: ~a\n" (path "timeline.png")))))

(done)
