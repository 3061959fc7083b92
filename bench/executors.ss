#!chezscheme
;;; bench/executors.ss -- the executor suite (issue 5):
;;;
;;;   bin/spindle bench executors [--quick] [--runs K] [--no-peers]
;;;
;;; (1) Kato's (util concurrent) executor benchmark: COUNT tasks (100, 1000,
;;;     10000; --quick: 100, 1000), task i computing (fib (+ 20 (mod i 6))),
;;;     under four models:
;;;       nomgmt   one SRFI-18 thread per task, all started, then all joined
;;;       manual   batches of 10 threads, each batch started then joined
;;;       pool     a (util concurrent) thread pool of 10, results through a
;;;                shared queue
;;;       executor a thread-pool executor of 10 (push-future-handler), futures
;;;     with coroutine workers (srfi-18-thread-pool #f) and parallel workers
;;;     (the default 'own: an OS thread per SRFI-18 thread / pool worker).
;;;     Pool and executor creation and release are inside the timing.
;;;     Peers: bench/peers/guile-executors.scm (Guile OS threads; a
;;;     queue+mutex+condvar pool; (ice-9 futures) for the executor) and
;;;     bench/peers/racket-executors.rkt (green threads; racket/future).
;;; (2) The Ruby article's thread-versus-process table: sum 1..n (50 000,
;;;     500 000, 5 000 000; --quick drops 5 000 000) split over 1, 2, 4, 8
;;;     workers, as coroutine threads, parallel ('own) threads and places
;;;     (dynamic-place '(bench-places) 'worker, bench/bench-places.sls):
;;;       place       W places started, sent their range, their sums
;;;                   received, stopped and waited for, all inside the
;;;                   timing (like Ruby's fork+pipe, which includes fork and
;;;                   Process.wait); the program's first place (the template
;;;                   process) is started before the table
;;;       place-warm  W places started and waited for (first message) before
;;;                   the clock: only sending the ranges and receiving the sums
;;;     Peer: bench/peers/ruby-sum.rb (threads, fork+pipe).
;;;
;;; Every figure is the best of --runs (default 3) real-time timings.
;;; Prints `executors.MODEL.WORKERS.COUNT MS ms` and
;;; `sum.MODE.nN.wW MS ms` lines (WORKERS: coroutine, parallel, guile,
;;; racket; MODE: coroutine, parallel, place, place-warm, ruby-thread,
;;; ruby-fork), then tables.
(import (except (chezscheme) thread? sleep make-parameter parameterize
                make-mutex mutex? mutex-name)
        (prefix (util concurrent) uc:)
        (srfi :18)
        (only (spindle) thread thread-wait make-parallel-thread-pool processor-count
              srfi-18-thread-pool parameterize
              place-channel-put place-channel-get place-kill)
        (only (bench-places) start-workers stop-places)
        (only (bench-harness) check-arguments! flag? option positive-int split-string now-ms)
        (only (spindle private os processes) shell-command))

;; ---------------------------------------------------------------- arguments
(check-arguments! "executors" '("--quick" "--no-peers") '("--runs")
  (lambda (port) (fprintf port "usage: spindle bench executors [--quick] [--runs K] [--no-peers]\n")))
(define quick? (flag? "--quick"))
(define peers? (not (flag? "--no-peers")))
(define runs (positive-int "executors" "--runs" (option "--runs" "3")))
(define counts (if quick? '(100 1000) '(100 1000 10000)))
(define sum-ns (if quick? '(50000 500000) '(50000 500000 5000000)))
(define sum-ws '(1 2 4 8))
(define models '(nomgmt manual pool executor))
(define model-title
  '((nomgmt . "no management") (manual . "manual management")
    (pool . "thread pool + queue") (executor . "thread-pool executor")))

;; ---------------------------------------------------------------- timing
(define (runs-for count) runs)
;; best of k real-time timings of (thunk); thunk returns a check value
(define (best-of k thunk check)
  (let loop ([i 0] [best #f])
    (if (= i k)
        best
        (let* ([t0 (now-ms)] [v (thunk)] [dt (- (now-ms) t0)])
          (unless (equal? v check)
            (errorf 'executors "wrong result ~s, expected ~s" v check))
          (loop (+ i 1) (if (or (not best) (< dt best)) dt best))))))

(define results (make-hashtable equal-hash equal?)) ; "name" -> ms or #f
(define (record! name ms)
  (hashtable-set! results name ms)
  (printf "~a ~a ms\n" name (fmt ms))
  (flush-output-port (current-output-port)))
(define (fmt ms) (cond [(not ms) "n/a"] [(< ms 10) (format "~,2f" ms)] [else (format "~,1f" ms)]))

;; ---------------------------------------------------------------- (1) executors
(define (fib n) (if (fx< n 2) n (fx+ (fib (fx- n 1)) (fib (fx- n 2)))))
(define (task i) (lambda () (fib (fx+ 20 (fxmod i 6)))))
(define (expected count)
  (let loop ([i 0] [s 0]) (if (= i count) s (loop (+ i 1) (+ s ((task i)))))))

(define (run-nomgmt count)
  (let ([ts (let loop ([i 0] [acc '()])
              (if (= i count) (reverse acc)
                  (loop (+ i 1) (cons (thread-start! (make-thread (task i))) acc))))])
    (fold-left (lambda (s t) (+ s (thread-join! t))) 0 ts)))

(define (run-manual count)
  (let loop ([i 0] [s 0])
    (if (>= i count)
        s
        (let* ([n (min 10 (- count i))]
               [ts (map (lambda (j) (thread-start! (make-thread (task (+ i j)))))
                        (iota n))])
          (loop (+ i n) (fold-left (lambda (s t) (+ s (thread-join! t))) s ts))))))

(define (run-pool count)
  (let ([tp (uc:make-thread-pool 10)] [q (uc:make-shared-queue)])
    (do ([i 0 (+ i 1)]) ((= i count))
      (let ([t (task i)])
        (uc:thread-pool-push-task! tp (lambda () (uc:shared-queue-put! q (t))))))
    (let ([s (let loop ([i 0] [s 0])
               (if (= i count) s (loop (+ i 1) (+ s (uc:shared-queue-get! q)))))])
      (uc:thread-pool-release! tp)
      s)))

(define (run-executor count)
  (let* ([e (uc:make-thread-pool-executor 10 uc:push-future-handler)]
         [fs (let loop ([i 0] [acc '()])
               (if (= i count) (reverse acc)
                   (loop (+ i 1) (cons (uc:executor-submit! e (task i)) acc))))]
         [s (fold-left (lambda (s f) (+ s (uc:future-get f))) 0 fs)])
    (uc:shutdown-executor! e)
    s))

(define runners `((nomgmt . ,run-nomgmt) (manual . ,run-manual)
                  (pool . ,run-pool) (executor . ,run-executor)))

(define (bench-executors workers)
  (for-each
    (lambda (count)
      (let ([check (expected count)])
        (for-each
          (lambda (m)
            (let ([ms (parameterize ([srfi-18-thread-pool
                                      (if (eq? workers 'coroutine) #f 'own)])
                        (best-of (runs-for count)
                                 (lambda () ((cdr (assq m runners)) count))
                                 check))])
              (record! (format "executors.~a.~a.~a" m workers count) ms)))
          models)))
    counts))

;; ---------------------------------------------------------------- (2) sum
(define (range-sum lo hi)                ; lo..hi inclusive
  (let loop ([i lo] [s 0]) (if (> i hi) s (loop (+ i 1) (+ s i)))))
(define (run-sum n w pool)
  (let* ([chunk (quotient n w)]
         [ts (map (lambda (k)
                    (let ([lo (+ 1 (* k chunk))]
                          [hi (if (= k (- w 1)) n (* (+ k 1) chunk))])
                      (thread (lambda () (range-sum lo hi)) pool 'results)))
                  (iota w))])
    (fold-left (lambda (s t) (+ s (thread-wait t))) 0 ts)))
(define (ranges n w)
  (let ([chunk (quotient n w)])
    (map (lambda (k) (list (+ 1 (* k chunk)) (if (= k (- w 1)) n (* (+ k 1) chunk))))
         (iota w))))

;; places (every one started here is waited for, or killed on an error)
(define live-places '())
(define (start-places w)
  (let ([ps (start-workers 'executors w)])
    (set! live-places (append ps live-places))
    ps))
(define (stop-places* ps)
  (stop-places 'executors ps)
  (set! live-places (filter (lambda (p) (not (memq p ps))) live-places)))
(define (place-sums ps n w)
  (for-each (lambda (p r) (place-channel-put p (vector "range-sum" r))) ps (ranges n w))
  (fold-left (lambda (s p) (+ s (vector-ref (place-channel-get p) 0))) 0 ps))
(define (run-sum-places n w)
  (let* ([ps (start-places w)] [s (place-sums ps n w)])
    (stop-places* ps)
    s))
;; best of k, places started before each timing
(define (best-warm k n w check)
  (let loop ([i 0] [best #f])
    (if (= i k)
        best
        (let* ([ps (start-places w)] [t0 (now-ms)] [v (place-sums ps n w)] [dt (- (now-ms) t0)])
          (stop-places* ps)
          (unless (equal? v check) (errorf 'executors "wrong result ~s, expected ~s" v check))
          (loop (+ i 1) (if (or (not best) (< dt best)) dt best))))))

(define (bench-sum)
  (stop-places* (start-places 1))        ; the template process starts with the first place
  (for-each
    (lambda (n)
      (for-each
        (lambda (w)
          (let ([check (/ (* n (+ n 1)) 2)])
            (for-each
              (lambda (mode)
                (record! (format "sum.~a.n~a.w~a" mode n w)
                         (case mode
                           [(place) (best-of runs (lambda () (run-sum-places n w)) check)]
                           [(place-warm) (best-warm runs n w check)]
                           [else (best-of runs (lambda () (run-sum n w (if (eq? mode 'coroutine) #f 'own)))
                                          check)])))
              '(coroutine parallel place place-warm))))
        sum-ws))
    sum-ns))

;; ---------------------------------------------------------------- peers
(define here
  (let ([p (car (command-line))])       ; the program's path
    (let loop ([i (- (string-length p) 1)])
      (cond [(< i 0) "."] [(char=? (string-ref p i) #\/) (substring p 0 i)]
            [else (loop (- i 1))]))))
(define (have? exe) (zero? (shell-command (format "command -v ~a >/dev/null 2>&1" exe))))
(define notes '())
(define (note! s) (set! notes (append notes (list s))))
(define (run-peer name exe cmd)
  (cond
    [(not peers?) (void)]
    [(not (have? exe)) (note! (format "~a: ~a not found, skipped" name exe))]
    [else
     (let-values ([(to from err pid)
                   (open-process-ports (string-append cmd " 2>&1") (buffer-mode block)
                                       (native-transcoder))])
       (close-port to)
       (let loop ()
         (let ([line (get-line from)])
           (unless (eof-object? line)
             (let ([ws (split-string line #\space #\tab)])
               (cond
                 [(and (>= (string-length line) 3) (string=? (substring line 0 3) ";;;")) (void)]
                 [(and (= (length ws) 3) (string=? (caddr ws) "ms") (string->number (cadr ws)))
                  (record! (car ws) (string->number (cadr ws)))]
                 [else (note! (format "~a: ~a" name line))
                       (printf "# ~a: ~a\n" name line)]))
             (loop))))
       (close-port from))]))

;; ---------------------------------------------------------------- main
(define flags (format "~a--runs ~a" (if quick? "--quick " "") runs))
(printf "# spindle executors suite, ~a cores, runs ~a~a\n" (processor-count) runs
        (if quick? ", quick" ""))
(define t-start (now-ms))
(bench-executors 'coroutine)
(bench-executors 'parallel)
(run-peer "guile" "guile" (format "guile ~a/peers/guile-executors.scm ~a" here flags))
(run-peer "racket" "racket" (format "racket ~a/peers/racket-executors.rkt ~a" here flags))
(guard (e [#t (for-each place-kill live-places) (raise e)])
  (bench-sum))
(run-peer "ruby" "ruby" (format "ruby ~a/peers/ruby-sum.rb ~a" here flags))

(define (cell name)
  (let ([v (hashtable-ref results name 'missing)])
    (if (eq? v 'missing) "-" (fmt v))))
(define (pad s w) (if (>= (string-length s) w) s
                      (string-append (make-string (- w (string-length s)) #\space) s)))
(define (padr s w) (if (>= (string-length s) w) s
                       (string-append s (make-string (- w (string-length s)) #\space))))

(printf "\n## Executors: fib(20..25) tasks, ms (best of ~a)\n\n" runs)
(let ([ws '(coroutine parallel guile racket)])
  (printf "| ~a | workers   |~{ ~a |~}\n" (padr "model" 22) (map (lambda (c) (pad (number->string c) 8)) counts))
  (printf "|~a|-----------|~{~a|~}\n" (make-string 24 #\-) (map (lambda (c) "---------:") counts))
  (for-each
    (lambda (m)
      (for-each
        (lambda (w)
          (printf "| ~a | ~a |~{ ~a |~}\n" (padr (cdr (assq m model-title)) 22) (padr (symbol->string w) 9)
                  (map (lambda (c) (pad (cell (format "executors.~a.~a.~a" m w c)) 8)) counts)))
        ws))
    models))
(printf "\nguile: OS threads (ice-9 threads); pool = queue+mutex+condvar pool of 10; executor = (ice-9 futures).\n")
(printf "racket: green threads for nomgmt/manual/pool (pool of 10 over an async channel); executor = racket/future (touch).\n")

(printf "\n## Sum 1..n over W workers, ms (best of ~a)\n\n" runs)
(let ([modes '(coroutine parallel place place-warm ruby-thread ruby-fork)])
  (printf "| ~a | W |~{ ~a |~}\n" (pad "n" 9) (map (lambda (m) (pad (symbol->string m) 11)) modes))
  (printf "|----------:|--:|~{~a|~}\n" (map (lambda (m) "------------:") modes))
  (for-each
    (lambda (n)
      (for-each
        (lambda (w)
          (printf "| ~a | ~a |~{ ~a |~}\n" (pad (number->string n) 9) w
                  (map (lambda (m)
                         (pad (cell (format "sum.~a.n~a.w~a" m n w)) 11))
                       modes)))
        sum-ws))
    sum-ns))
(printf "\nplace: W places started, sent their range, summed, stopped and waited for, all timed (cf. ruby-fork).\n")
(printf "place-warm: W places started before the clock; only the ranges out and the sums back are timed.\n")
(for-each (lambda (s) (printf "note: ~a\n" s)) notes)
(printf "\n# total ~,1f s\n" (/ (- (now-ms) t-start) 1000))
(exit 0)
