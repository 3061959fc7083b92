;; harness.ss -- shared by the scripts in this directory (loaded, not run).
;; (scale name work) runs WORK twice in one fork-thread ("1 thread") and once
;; in each of two fork-threads ("2 threads"), alternating, RUNS times each,
;; and prints ranges: real ms, process CPU ms, collections, collector real ms,
;; and the share of the machine other processes took (from /proc/stat).
;; speedup = best 1-thread real / best 2-thread real; cpu x = median
;; 2-thread CPU / median 1-thread CPU (> 1: the second core burns CPU without
;; progress -- contention, spinning, futex sleeps/wakes).
;; Plain Chez (no spindle); runs on 9.5.8 and 10.x.
(define (tms t) (+ (* 1000. (time-second t)) (/ (time-nanosecond t) 1e6)))
(define (now) (tms (current-time 'time-monotonic)))
(define (cpu) (tms (current-time 'time-process)))
(define (gc-ms) (tms (sstats-gc-real (statistics))))
(define (busy-jiffies)              ; non-idle jiffies of the whole machine
  (let* ([line (call-with-input-file "/proc/stat" get-line)]
         [ip (open-input-string (substring line 3 (string-length line)))])
    (let loop ([i 0] [acc 0])
      (let ([x (read ip)])
        (cond [(or (eof-object? x) (= i 8)) acc]
              [(or (= i 3) (= i 4)) (loop (+ i 1) acc)]   ; idle, iowait
              [else (loop (+ i 1) (+ acc x))])))))
(define (in-threads n work)          ; run WORK in each of N fresh fork-threads, wait
  (let ([m (make-mutex)] [c (make-condition)] [left n])
    (do ([i 0 (+ i 1)]) ((= i n))
      (fork-thread (lambda () (work) (with-mutex m (set! left (- left 1)) (condition-broadcast c)))))
    (with-mutex m (let wait () (unless (= left 0) (condition-wait c m) (wait))))))
(define (one-thread-twice work) (in-threads 1 (lambda () (work) (work))))
(define (two-threads work) (in-threads 2 work))
;; Before each measurement, wait (up to --quiet-wait seconds, default 30) for
;; a 300 ms window in which other processes take under a quarter of the
;; machine; the "others" column shows what they took during the measurement.
(define quiet-wait
  (let ([a (member "--quiet-wait" (command-line-arguments))])
    (if a (string->number (cadr a)) 30)))
(define waited-ms 0.)
(define (wait-quiet)
  (let ([t0 (now)])
    (let loop ()
      (let ([b0 (busy-jiffies)] [c0 (cpu)])
        (sleep (make-time 'time-duration 300000000 0))
        (let ([others (- (* 10. (- (busy-jiffies) b0)) (- (cpu) c0))])
          (when (and (> others (* 0.25 2 300)) (< (- (now) t0) (* 1000 quiet-wait)))
            (loop)))))
    (set! waited-ms (+ waited-ms (- (now) t0)))))
(define (measure thunk)              ; -> #(real cpu gcs gc-ms others%)
  (wait-quiet)
  (let* ([b0 (busy-jiffies)] [c0 (cpu)] [k0 (collections)] [g0 (gc-ms)] [t0 (now)])
    (thunk)
    (let* ([real (- (now) t0)] [c (- (cpu) c0)]
           [others (- (* 10. (- (busy-jiffies) b0)) c)])
      (vector real c (- (collections) k0) (- (gc-ms) g0)
              (max 0 (* 100. (/ others (* 2 (max real 1.)))))))))
(define runs
  (let ([a (member "--runs" (command-line-arguments))])
    (if a (string->number (cadr a)) 5)))
(define (sorted i rs) (sort < (map (lambda (r) (vector-ref r i)) rs)))
(define (lo i rs) (car (sorted i rs)))
(define (hi i rs) (car (last-pair (sorted i rs))))
(define (med i rs) (list-ref (sorted i rs) (quotient (length rs) 2)))
(define (scale name work)
  (work)                             ; warm up
  (let loop ([k 0] [s '()] [p '()])
    (if (< k runs)
        (let* ([a (measure (lambda () (one-thread-twice work)))]
               [b (measure (lambda () (two-threads work)))])
          (loop (+ k 1) (cons a s) (cons b p)))
        (begin
          (printf "~24a 1 thread ~6,1f-~6,1f ms  2 threads ~6,1f-~6,1f ms  speedup ~4,2f (~4,2f-~4,2f)  cpu x~4,2f  gcs ~a/~a  gc ms ~,1f/~,1f  others ~a-~a%\n"
                  name (lo 0 s) (hi 0 s) (lo 0 p) (hi 0 p)
                  (/ (lo 0 s) (lo 0 p)) (/ (lo 0 s) (hi 0 p)) (/ (hi 0 s) (lo 0 p))
                  (/ (med 1 p) (med 1 s))
                  (med 2 s) (med 2 p) (med 3 s) (med 3 p)
                  (round (min (lo 4 s) (lo 4 p))) (round (max (hi 4 s) (hi 4 p))))
          (flush-output-port)))))
;; (scale-many named-works control): the same measurements for several work
;; units, interleaved -- round k measures every unit (1 thread, then 2
;; threads) before round k+1 -- so that all units see the same machine.
;; Besides each unit's line as in `scale`, prints per round the speedup of
;; each unit divided by the CONTROL unit's speedup in the same round ("vs
;; control"): on a machine shared with other processes, whatever parallelism
;; the control (a lock-free, allocation-light unit) gets is what the machine
;; offered, and a unit that scales as well as the load allows is at ~1.0.
(define (scale-many named control)
  (for-each (lambda (nw) ((cdr nw))) named)            ; warm up
  (let ([results (map (lambda (nw) (cons (car nw) (list '() '()))) named)])
    (do ([k 0 (+ k 1)]) ((= k runs))
      (for-each
        (lambda (nw)
          (let* ([a (measure (lambda () (one-thread-twice (cdr nw))))]
                 [b (measure (lambda () (two-threads (cdr nw))))]
                 [r (assq (car nw) results)])
            (set-car! (cdr r) (cons a (cadr r)))
            (set-car! (cddr r) (cons b (caddr r)))))
        named))
    (for-each
      (lambda (r)
        (let ([s (reverse (cadr r))] [p (reverse (caddr r))]
              [cs (reverse (cadr (assq control results)))] [cp (reverse (caddr (assq control results)))])
          (define (speedups s p) (map (lambda (a b) (/ (vector-ref a 0) (vector-ref b 0))) s p))
          (let* ([sp (speedups s p)] [csp (speedups cs cp)] [rel (map / sp csp)])
            (printf "~24a 1 thread ~6,1f-~6,1f ms  2 threads ~6,1f-~6,1f ms  speedup ~4,2f-~4,2f  vs control ~4,2f-~4,2f (median ~4,2f)  cpu x~4,2f  gcs ~a/~a  gc ms ~,1f/~,1f  others ~a-~a%\n"
                    (car r) (lo 0 s) (hi 0 s) (lo 0 p) (hi 0 p)
                    (apply min sp) (apply max sp) (apply min rel) (apply max rel)
                    (list-ref (sort < rel) (quotient (length rel) 2))
                    (/ (med 1 p) (med 1 s))
                    (med 2 s) (med 2 p) (med 3 s) (med 3 p)
                    (round (min (lo 4 s) (lo 4 p))) (round (max (hi 4 s) (hi 4 p)))))))
      results)
    (flush-output-port)))
(define (summary)
  (printf "# waited ~,1f s for quiet; load at end: ~a\n" (/ waited-ms 1000) (call-with-input-file "/proc/loadavg" get-line)))
(define (banner what)
  (printf "# ~a  ~a  runs ~a  collect-trip-bytes ~a  collect-generation-radix ~a\n"
          what (scheme-version) runs (collect-trip-bytes) (collect-generation-radix))
  (printf "# load: ~a" (call-with-input-file "/proc/loadavg" get-line))
  (newline) (flush-output-port))
;; Common options: --trip BYTES sets collect-trip-bytes, --radix R sets
;; collect-generation-radix.
(let ([a (member "--trip" (command-line-arguments))])
  (when a (collect-trip-bytes (string->number (cadr a)))))
(let ([a (member "--radix" (command-line-arguments))])
  (when a (collect-generation-radix (string->number (cadr a)))))
