#!chezscheme
;;; bench/nas.ss -- the NAS Parallel Benchmarks suite (bench/NAS.md):
;;;
;;;   bin/spindle bench nas [--class S|W|A|B] [--np 1,2] [--bench is,ep,...]
;;;                         [--mode serial,places,threads,futures,mpi] [--mpi]
;;;                         [--runs K] [--quiet-wait SECONDS]
;;;
;;; Each benchmark is the library (nas BENCH), file bench/nas/BENCH.sls,
;;; loaded when its turn comes; one whose file is absent is reported "not
;;; built" and skipped, a class or mode it does not take "not supported".
;;; For each benchmark, mode and worker count (serial: np 1 only):
;;;   nas.BENCH.CLASS.MODE.npN         SECONDS s     the time the benchmark
;;;                                                  reports (what NPB times)
;;;   nas.BENCH.CLASS.MODE.npN-mops    MOPS Mop/s    NPB's operation rate
;;;   nas.BENCH.CLASS.MODE.npN-speedup X x           serial's time / this one,
;;;                                                  when serial ran here too
;;;   nas.BENCH.CLASS.MODE.npN-alloc   MB MB         bytes allocated by this
;;;                                                  process during the whole
;;;                                                  call (set-up included;
;;;                                                  places: member 0's only)
;;;   nas.BENCH.CLASS.MODE.npN-gc      PERCENT %     collector time / wall time
;;;                                                  of the same call
;;;   nas.BENCH.CLASS.MODE.npN-verification VERIFIED|FAILED, then the
;;;                                                  result's notes (# lines)
;;; Mode mpi (--mpi is --mode mpi): each run is a job of np ranks,
;;; `spindle mpirun -np N bench/nas-rank.ss BENCH CLASS`, whose rank 0
;;; reports the result and its own alloc and GC figures; the lines are the
;;; same.  Without Open MPI the mode is reported "not supported".
;;; --runs K: each configuration K times, the fastest reported (every run
;;; must verify).  Before each run the suite waits (at most --quiet-wait
;;; seconds in all, default 30) until other processes leave the machine
;;; quiet.  A table of everything ends the output.  Exit code 1 when a run
;;; FAILED or raised, 2 for bad arguments.
(import (chezscheme) (bench-harness) (nas common) (only (spindle) processor-count)
        (only (spindle private os processes) shell-command own-pid))

(define all-benches '(is ep cg mg ft sp bt lu))
(define default-modes '(serial places threads))

(define (usage port)
  (fprintf port "usage: spindle bench nas [--class S|W|A|B] [--np 1,2] [--bench ~a] [--mode ~a] [--mpi] [--runs K] [--quiet-wait SECONDS]\n  defaults: class W, every benchmark built, modes serial,places,threads, np 1,2, 1 run, 30 s of quiet wait; --mpi: --mode mpi\n"
           (join (map symbol->string all-benches) ",") (join (map symbol->string nas-modes) ",")))

(define (join strings sep)
  (if (null? strings) ""
      (fold-left (lambda (acc s) (string-append acc sep s)) (car strings) (cdr strings))))

(define (bad-argument what value)
  (fprintf (current-error-port) "nas: bad ~a ~s\n" what value)
  (usage (current-error-port))
  (exit 2))

;; The symbols of a comma-separated option, each among allowed.
(define (symbol-list name default allowed)
  (let ([s (option name #f)])
    (if (not s)
        default
        (map (lambda (piece)
               (let ([x (string->symbol piece)])
                 (unless (memq x allowed) (bad-argument name piece))
                 x))
             (split-string s #\,)))))

(check-arguments! "nas" '("--mpi") '("--class" "--np" "--bench" "--mode" "--runs" "--quiet-wait") usage)
(define class (let ([c (string->symbol (option "--class" "W"))])
                (unless (memq c '(S W A B C)) (bad-argument "--class" c))
                c))
(define benches (symbol-list "--bench" all-benches all-benches))
(define modes (if (flag? "--mpi") '(mpi) (symbol-list "--mode" default-modes nas-modes)))
(define nps (map (lambda (s) (positive-int "nas" "--np" s)) (split-string (option "--np" "1,2") #\,)))
(define runs (positive-int "nas" "--runs" (option "--runs" "1")))
(define quiet (make-quiet (* 1000 (let ([s (string->number (option "--quiet-wait" "30"))])
                                    (unless (and s (real? s) (>= s 0)) (bad-argument "--quiet-wait" s))
                                    s))))

;; ---------------------------------------------------------------- loading
;; bench/nas/BENCH.sls in one of the library directories, or #f.
(define (library-file bench)
  (let loop ([dirs (map car (library-directories))])
    (and (pair? dirs)
         (let ([f (format "~a/nas/~a.sls" (car dirs) bench)])
           (if (file-exists? f) f (loop (cdr dirs)))))))

;; The procedure BENCH-run of (nas BENCH); raises if the library fails.
(define (bench-runner bench)
  (eval (string->symbol (format "~a-run" bench)) (environment `(nas ,bench))))

(define (condition-text c)
  (call-with-string-output-port
    (lambda (p) (if (condition? c) (display-condition c p) (write c p)))))

;; #t for the &assertion a benchmark raises for a class or mode it does not
;; take (check-nas-arguments: who is BENCH-run, the irritant the class or mode).
(define (not-supported? c bench mode)
  (and (assertion-violation? c) (who-condition? c) (irritants-condition? c)
       (eq? (condition-who c) (string->symbol (format "~a-run" bench)))
       (let ([irritants (condition-irritants c)])
         (and (pair? irritants) (memq (car irritants) (list class mode)) #t))))

;; ---------------------------------------------------------------- one run
(define (load-average)
  (guard (e [#t "?"])
    (car (split-string (call-with-input-file "/proc/loadavg" get-line) #\space))))

;; -> (result bytes gc-seconds wall-seconds), or raises what the run raised
(define (measure bench run mode np)
  (if (eq? mode 'mpi)
      (measure-mpi bench np)
      (let* ([s0 (statistics)]
         [r (run class mode np)]
         [d (sstats-difference (statistics) s0)]
         [secs (lambda (t) (+ (time-second t) (/ (time-nanosecond t) 1e9)))])
    (list r (sstats-bytes d) (secs (sstats-gc-real d)) (secs (sstats-real d))))))

;; ---------------------------------------------------------------- mpi mode
(define root (let ([dir (lambda (f) (let loop ([i (- (string-length f) 1)])
                                      (cond [(< i 0) "."] [(char=? (string-ref f i) #\/) (substring f 0 i)] [else (loop (- i 1))])))])
               (dir (dir (car (command-line))))))

(define (read-file path)
  (call-with-input-file path (lambda (p) (let ([s (get-string-all p)]) (if (eof-object? s) "" s)))))

;; The datum after "nas-mpi-result BENCH " in text, or #f.
(define (mpi-result-line text bench)
  (let ([key (format "nas-mpi-result ~a " bench)])
    (let loop ([i 0])
      (cond
        [(> (+ i (string-length key)) (string-length text)) #f]
        [(string=? (substring text i (+ i (string-length key))) key)
         (read (open-string-input-port (substring text (+ i (string-length key)) (string-length text))))]
        [else (loop (+ i 1))]))))

;; One mpi-mode run as a job of np ranks (at most an hour).
(define (measure-mpi bench np)
  (unless (eqv? 0 (shell-command "command -v mpirun >/dev/null 2>&1"))
    (assertion-violation (string->symbol (format "~a-run" bench)) "Open MPI is not installed (mpirun not found)" 'mpi))
  (let* ([out (format "/tmp/spindle-nas-mpi-~a.out" (own-pid))]
         [rc (shell-command (format "timeout -k 10 3600 ~a/bin/spindle mpirun -np ~a ~a/bench/nas-rank.ss ~a ~a >~a 2>&1"
                                    root np root bench class out))]
         [text (read-file out)])
    (delete-file out)
    (let ([v (and (eqv? rc 0) (mpi-result-line text bench))])
      (unless v
        (error 'nas (format "the mpi job failed (exit code ~a): ~a" rc text)))
      (apply (lambda (seconds mops verified? notes bytes gc wall)
               (list (make-nas-result bench class 'mpi np seconds mops verified? notes) bytes gc wall))
             v))))

(define failed? #f)
(define rows '())                       ; table rows, newest first
(define serial-seconds #f)              ; of the current benchmark
(define load-before "?")                ; of the current configuration

(define (run-configuration bench run mode np)
  (let ([name (format "nas.~a.~a.~a.np~a" bench class mode np)])
    (call/cc
      (lambda (skip)
        (let loop ([k 0] [best #f] [all-verified? #t])
          (if (= k runs)
              (let* ([r (car best)] [secs (nas-result-seconds r)]
                     [mb (/ (cadr best) 1048576.)]
                     [gc% (* 100 (/ (caddr best) (max (cadddr best) 1e-9)))]
                     [speedup (and serial-seconds (not (eq? mode 'serial)) (/ serial-seconds secs))])
                (when (eq? mode 'serial) (set! serial-seconds secs))
                (report name secs "s")
                (report (string-append name "-mops") (nas-result-mops r) "Mop/s")
                (when speedup (report (string-append name "-speedup") speedup "x"))
                (report (string-append name "-alloc") mb "MB")
                (report (string-append name "-gc") gc% "%")
                (printf "~a-verification ~a\n" name (if all-verified? "VERIFIED" "FAILED"))
                (for-each (lambda (n) (note "  ~a" n)) (nas-result-notes r))
                (note "  load average ~a before the run" load-before)
                (unless all-verified? (set! failed? #t))
                (set! rows (cons (list bench mode np secs (nas-result-mops r) speedup mb gc%
                                       (if all-verified? "VERIFIED" "FAILED"))
                                 rows)))
              (begin
                (wait-for-quiet! quiet)
                (let ([m (guard (c [(not-supported? c bench mode)
                                    (note "~a: not supported (~a)" name (condition-text c))
                                    (skip #f)]
                                   [#t (note "~a: raised: ~a" name (condition-text c))
                                       (printf "~a-verification FAILED\n" name)
                                       (set! failed? #t)
                                       (set! rows (cons (list bench mode np #f #f #f #f #f "FAILED (raised)") rows))
                                       (skip #f)])
                           (when (= k 0) (set! load-before (load-average)))
                           (measure bench run mode np))])
                  (loop (+ k 1)
                        (if (or (not best) (< (nas-result-seconds (car m)) (nas-result-seconds (car best)))) m best)
                        (and all-verified? (nas-result-verified? (car m))))))))))))

(define (run-bench bench)
  (set! serial-seconds #f)
  (cond
    [(not (library-file bench))
     (note "nas.~a: not built (no nas/~a.sls in the library path)" bench bench)
     (set! rows (cons (list bench "not built") rows))]
    [else
     (let ([run (guard (c [#t (note "nas.~a: cannot load: ~a" bench (condition-text c))
                              (set! failed? #t)
                              #f])
                  (bench-runner bench))])
       (when run
         (for-each
           (lambda (mode)
             (for-each (lambda (np) (run-configuration bench run mode np))
                       (if (eq? mode 'serial) '(1) nps)))
           modes)))]))

(note "NAS class ~a, benchmarks ~a, modes ~a, np ~a, best of ~a; ~a processors, load average ~a"
      class benches modes nps runs (processor-count) (load-average))
(for-each run-bench benches)

;; ---------------------------------------------------------------- table
(define (cell x) (cond [(not x) "-"] [(string? x) x] [else (format-figure x)]))
(note "")
(note "| benchmark | mode | np | time s | Mop/s | speedup | alloc MB | GC % | |")
(note "|---|---|---|---|---|---|---|---|---|")
(for-each
  (lambda (row)
    (if (= (length row) 2)
        (note "| ~a.~a | ~a | | | | | | | |" (car row) class (cadr row))
        (apply (lambda (bench mode np secs mops speedup mb gc% verdict)
                 (note "| ~a.~a | ~a | ~a | ~a | ~a | ~a | ~a | ~a | ~a |" bench class mode np
                       (cell secs) (cell mops) (cell speedup) (cell mb) (cell gc%) verdict))
               row)))
  (reverse rows))
(when (> (quiet-waited-ms quiet) 0)
  (note "waited ~a s in all for a quiet machine" (format-figure (/ (quiet-waited-ms quiet) 1000))))
(flush-output-port (current-output-port))
(exit (if failed? 1 0))
