#!chezscheme
;;; What every benchmark suite shares: its command-line options, clocks,
;;; best-of timing, the `SUITE.NAME VALUE UNIT` printer, a major collection
;;; that works while spindle's workers exist, and waiting for a quiet
;;; machine.
;;;
;;; Quiet: a figure that needs every core is spoiled when other processes
;;; run.  machine-busy-ms reads the whole machine's busy CPU time from
;;; /proc/stat; minus this process's CPU time (and its places') it is what
;;; others took.  A suite makes one quiet budget (ms it may spend waiting)
;;; and retakes a timing during which others took over a quarter of the
;;; machine after waiting for a moment when they take under a tenth.
(library (bench-harness)
  (export bench-args flag? option positive-int check-arguments!
          split-string
          now-ns now-ms cpu-ms gc-ms
          best-ns best-of
          format-figure report note
          full-collect
          machine-busy-ms make-quiet quiet-waited-ms quiet-retimed
          wait-for-quiet! retake-while-busy timed/quiet)
  (import (except (chezscheme) sleep) (only (spindle) sleep processor-count))

  ;; ---------------------------------------------------------------- options
  (define bench-args (command-line-arguments))

  (define (flag? s) (and (member s bench-args) #t))

  ;; The value after NAME, or default.
  (define (option name default)
    (let loop ([a bench-args])
      (cond [(or (null? a) (null? (cdr a))) default]
            [(string=? (car a) name) (cadr a)]
            [else (loop (cdr a))])))

  (define (positive-int suite who s)
    (let ([v (string->number s)])
      (unless (and v (exact? v) (integer? v) (> v 0))
        (fprintf (current-error-port) "~a: ~a expects a positive integer, got ~s\n" suite who s)
        (exit 2))
      v))

  ;; Exits 2 with the usage on the first argument that is neither a known
  ;; flag nor a known option followed by its value; --help prints it and
  ;; exits 0.
  (define (check-arguments! suite flags options usage)
    (when (or (flag? "--help") (flag? "-h")) (usage (current-output-port)) (exit 0))
    (let check ([a bench-args])
      (cond
        [(null? a) (void)]
        [(member (car a) flags) (check (cdr a))]
        [(and (member (car a) options) (pair? (cdr a))) (check (cddr a))]
        [else (fprintf (current-error-port) "~a: bad argument ~s\n" suite (car a))
              (usage (current-error-port))
              (exit 2)])))

  ;; The pieces of s between the characters of seps (empty pieces dropped).
  (define (split-string s . seps)
    (let loop ([i 0] [start 0] [acc '()])
      (define (piece) (if (= start i) acc (cons (substring s start i) acc)))
      (cond
        [(= i (string-length s)) (reverse (piece))]
        [(memv (string-ref s i) seps) (loop (+ i 1) (+ i 1) (piece))]
        [else (loop (+ i 1) start acc)])))

  ;; ---------------------------------------------------------------- clocks
  (define (now-ns)
    (let ([t (current-time 'time-monotonic)])
      (+ (* (time-second t) 1000000000) (time-nanosecond t))))
  (define (time-ms t) (+ (* 1000. (time-second t)) (/ (time-nanosecond t) 1e6)))
  (define (now-ms) (time-ms (current-time 'time-monotonic)))
  (define (cpu-ms) (time-ms (current-time 'time-process)))
  (define (gc-ms) (time-ms (current-time 'time-collector-real)))

  ;; Best (smallest) of `runs` timings of (thunk), in ns.
  (define (best-ns runs thunk)
    (best-of runs (lambda () (let ([t0 (now-ns)]) (thunk) (- (now-ns) t0)))))

  ;; Smallest of k results of (thunk).
  (define (best-of k thunk)
    (let loop ([i 0] [best #f])
      (if (= i k)
          best
          (let ([v (thunk)]) (loop (+ i 1) (if (or (not best) (< v best)) v best))))))

  ;; ---------------------------------------------------------------- output
  ;; Three significant decimals below 100, integers above.
  (define (format-figure v)
    (let ([v (exact->inexact v)])
      (cond [(>= (abs v) 100) (number->string (exact (round v)))]
            [(>= (abs v) 1) (format "~,2f" v)]
            [else (format "~,3f" v)])))

  ;; One `SUITE.NAME VALUE UNIT` line, flushed (suites are read as they run).
  (define (report name value unit)
    (printf "~a ~a ~a\n" name (format-figure value) unit)
    (flush-output-port (current-output-port)))

  ;; A comment line among the figures.
  (define (note fmt . xs)
    (printf "# ~a\n" (apply format fmt xs))
    (flush-output-port (current-output-port)))

  ;; Chez's (collect) refuses while other OS threads exist (spindle's
  ;; workers): a major collection through the rendezvous instead.
  (define (full-collect)
    (let ([h (collect-request-handler)])
      (collect-request-handler (lambda () (collect (collect-maximum-generation))))
      (collect-rendezvous)
      (collect-request-handler h)))

  ;; ---------------------------------------------------------------- quiet
  ;; Busy CPU ms of the whole machine (every process), or #f if unreadable.
  (define (machine-busy-ms)
    (guard (e [#t #f])
      (let ([xs (map string->number
                     (cdr (split-string (call-with-input-file "/proc/stat" get-line) #\space)))])
        ;; user nice system idle iowait irq softirq steal ...; USER_HZ = 100
        (* 10 (- (apply + (list-head xs (min 8 (length xs)))) (list-ref xs 3) (list-ref xs 4))))))

  ;; budget: ms left to wait; waited: ms spent; retimed: timings taken again.
  (define-record-type (quiet make-quiet-record quiet?)
    (fields (mutable budget) (mutable waited-ms) (mutable retimed)))
  (define (make-quiet budget-ms) (make-quiet-record (exact->inexact budget-ms) 0. 0))

  ;; Waits, in 250 ms samples, until other processes take under a tenth of
  ;; the machine, or the budget is spent.
  (define (wait-for-quiet! q)
    (let loop ()
      (when (> (quiet-budget q) 0)
        (let* ([m0 (machine-busy-ms)] [c0 (cpu-ms)] [t0 (now-ms)])
          (sleep 0.25)
          (let* ([dt (- (now-ms) t0)] [m1 (machine-busy-ms)]
                 [others (and m0 m1 (- m1 m0 (- (cpu-ms) c0)))])
            (quiet-budget-set! q (- (quiet-budget q) dt))
            (quiet-waited-ms-set! q (+ (quiet-waited-ms q) dt))
            (when (and others (> others (* 0.1 (processor-count) dt)))
              (loop)))))))

  ;; #t when others took over a quarter of the machine in ms of real time
  ;; (others-ms: their CPU ms, or #f when unknown) and the budget lasts.
  (define (others-took-machine? q others-ms ms)
    (and others-ms (> ms 0) (> (/ others-ms (* (processor-count) ms)) 0.25)
         (> (quiet-budget q) 0)))

  ;; (take) until a result r for which others did not take the machine:
  ;; (others-ms-of r) and (ms-of r) say what they took and how long r took.
  (define (retake-while-busy q take others-ms-of ms-of)
    (let retry ()
      (let ([r (take)])
        (if (others-took-machine? q (others-ms-of r) (ms-of r))
            (begin (quiet-retimed-set! q (+ (quiet-retimed q) 1)) (wait-for-quiet! q) (retry))
            r))))

  ;; (thunk) returns (ms . cpu-ms-of-its-places); timed/quiet returns the
  ;; ms of a run during which the machine was not taken by others.
  (define (timed/quiet q thunk)
    (cadr
      (retake-while-busy q
        (lambda ()
          (let* ([m0 (machine-busy-ms)] [c0 (cpu-ms)] [r (thunk)] [c1 (cpu-ms)] [m1 (machine-busy-ms)])
            (list (and m0 m1 (- m1 m0 (- c1 c0) (cdr r))) (car r))))
        car cadr))))
