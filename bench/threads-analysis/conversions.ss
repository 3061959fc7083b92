;; conversions.ss -- plain Chez (no spindle): which number<->string path
;; scales across 2 fork-threads?  For each operation: 2 x 300,000 calls in one
;; thread (seq2) and in two fork-threads (raw2), best of 3, re-measured (up to
;; 20 times) while other processes took over a quarter of the machine.
;; Prints speedup and the CPU ratio raw2/seq2 (> 1: the threads burn CPU
;; without progress, i.e. contention).  See bench/THREADS.md.
;;   scheme --script bench/threads-analysis/conversions.ss [bigtrip|nogc]
(define (tms t) (+ (* 1000. (time-second t)) (/ (time-nanosecond t) 1e6)))
(define (now) (tms (current-time 'time-monotonic)))
(define (cpu) (tms (current-time 'time-process)))
(define (busy)
  (let* ([line (call-with-input-file "/proc/stat" get-line)]
         [xs (let loop ([i 0] [start 0] [acc '()])
               (cond [(= i (string-length line)) (reverse (cons (substring line start i) acc))]
                     [(char=? (string-ref line i) #\space) (loop (+ i 1) (+ i 1) (cons (substring line start i) acc))]
                     [else (loop (+ i 1) start acc)]))]
         [ns (map string->number (filter (lambda (s) (> (string-length s) 0)) (cdr xs)))])
    (* 10 (- (apply + (list-head ns 8)) (list-ref ns 3) (list-ref ns 4)))))
(define (raw n work)
  (let ([m (make-mutex)] [c (make-condition)] [left n])
    (do ([i 0 (+ i 1)]) ((= i n)) (fork-thread (lambda () (work) (with-mutex m (set! left (- left 1)) (condition-broadcast c)))))
    (with-mutex m (let wait () (unless (= left 0) (condition-wait c m) (wait))))))
(define (seq n work) (do ([i 0 (+ i 1)]) ((= i n)) (work)))
(define (meas thunk)
  (let retry ([k 0])
    (let* ([b0 (busy)] [c0 (cpu)] [k0 (collections)] [t0 (now)]) (thunk)
      (let* ([real (- (now) t0)] [c (- (cpu) c0)] [others (- (busy) b0 c)])
        (if (and (> others (* 0.25 2 real)) (< k 20)) (begin (sleep (make-time 'time-duration 300000000 0)) (retry (+ k 1)))
            (list real c (- (collections) k0)))))))
(define (best k thunk) (let loop ([i 0] [b #f]) (if (= i k) b (let ([r (meas thunk)]) (loop (+ i 1) (if (or (not b) (< (car r) (car b))) r b))))))
(define (bench name work)
  (let* ([s (best 3 (lambda () (seq 2 work)))] [r (best 3 (lambda () (raw 2 work)))])
    (printf "~22a seq2 ~6,1f ms (cpu ~6,1f, ~3d gcs)  raw2 ~6,1f ms (cpu ~6,1f)  speedup ~,2f  cpu x~,2f\n"
            name (car s) (cadr s) (caddr s) (car r) (cadr r) (/ (car s) (car r)) (/ (cadr r) (cadr s)))))
(define N 300000)
(define-syntax defloop
  (syntax-rules () [(_ (name i) body) (define (name) (let loop ([i 0] [acc 0]) (if (fx= i N) acc (loop (fx+ i 1) (fx+ acc body)))))]))
(defloop (w-n2s i) (string-length (number->string (fx+ i 1000000))))
(defloop (w-n2s-r i) (string-length (number->string (fx+ i 1000000) 10)))
(defloop (w-format i) (string-length (format "~a" (fx+ i 1000000))))
(defloop (w-port i) (string-length (let-values ([(p g) (open-string-output-port)]) (write (fx+ i 1000000) p) (g))))
(defloop (w-oos i) (string-length (let ([p (open-output-string)]) (write (fx+ i 1000000) p) (get-output-string p))))
(defloop (w-s2n i) (string->number "1234567"))
(defloop (w-mkstr i) (string-length (make-string 7 #\a)))
(defloop (w-cons i) (car (list (fx+ i 1) 2 3 4)))
(when (member "bigtrip" (command-line-arguments)) (collect-trip-bytes (expt 2 30)))
(when (member "nogc" (command-line-arguments)) (collect-trip-bytes (expt 2 40)))
(printf "collect-trip-bytes ~a\n" (collect-trip-bytes))
(bench "number->string" w-n2s)
(bench "number->string x 10" w-n2s-r)
(bench "format ~a" w-format)
(bench "string port + write" w-port)
(bench "open-output-string" w-oos)
(bench "string->number" w-s2n)
(bench "make-string 7" w-mkstr)
(bench "list of 4" w-cons)
