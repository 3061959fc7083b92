;;; guile-threads.scm -- Guile 3 peer for `bin/spindle bench threads`.
;;;
;;; The same six workloads as bench/threads.ss, N iterations at a time in
;;; three modes:
;;;   sequential  N iterations in a row
;;;   threads     N POSIX threads, (ice-9 threads) call-with-new-thread /
;;;               join-thread
;;;   futures     N (ice-9 futures) futures, touched in order (Guile runs them
;;;               on (current-processor-count) - 1 workers plus the toucher)
;;; and prints one line per cell on stdout:
;;;   guile.WORKLOAD.MODE.nN SPEEDUP x REAL_MS CPU_MS GC_MS
;;; (speedup over the sequential cell of the same N; CPU: get-internal-run-time,
;;; the whole process; GC: gc-stats' gc-time-taken).  `#` lines are notes;
;;; progress goes to stderr.
;;;
;;; Usage: guile bench/peers/guile-threads.scm [--n 1,2] [--quick] [--runs K]
;;;          [--workloads LIST] [--sizes WL=V,...] [--dirs D1,D2]
;;; (run it with auto-compilation on, the default: interpreted, Guile is ~10x
;;; slower).  bench/threads.ss passes all of these, so the sizes match its own.

(use-modules (ice-9 threads) (ice-9 futures) (ice-9 ftw) (ice-9 textual-ports)
             (ice-9 format) (srfi srfi-1))

;; ---------------------------------------------------------------- workloads
(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))

(define (strfib* n)
  (if (< n 2)
      n
      (string->number (number->string (+ (strfib* (- n 1)) (strfib* (- n 2)))))))

(define current-radix (make-parameter 10))
(define (num->str x) (number->string x (current-radix)))
(define (str->num s) (string->number s (current-radix)))
(define (strfib n)
  (if (< n 2)
      n
      (str->num (num->str (+ (strfib (- n 1)) (strfib (- n 2)))))))

(define hash-nums-rounds 3)
(define (hash-nums k)
  (let ((n (expt 10 k)))
    (let round ((r 0) (acc 0))
      (if (= r hash-nums-rounds)
          acc
          (let ((h (make-hash-table)))
            (do ((i 0 (+ i 1))) ((= i n)) (hash-set! h i (+ i r)))
            (round (+ r 1)
                   (let sum ((i 0) (s acc))
                     (if (= i n) s (sum (+ i 1) (+ s (hash-ref h i 0)))))))))))

(define (hash-digs m)
  (string-hash
    (call-with-output-string
      (lambda (p) (do ((i 0 (+ i 1))) ((= i m)) (write i p))))))

(define skipped-dirs '("results" "compiled" "__pycache__"))
(define (read-text path)
  (let ((p (open-input-file path #:encoding "UTF-8")))
    (set-port-conversion-strategy! p 'substitute)
    (let ((s (get-string-all p)))
      (close-port p)
      s)))
(define (hash-tree dir acc)
  (fold (lambda (name acc)
          (let ((p (string-append dir "/" name)))
            (cond
              ((string-prefix? "." name) acc)
              (else
               (case (stat:type (lstat p))
                 ((directory) (if (member name skipped-dirs) acc (hash-tree p acc)))
                 ((regular)
                  (let ((s (read-text p)))
                    (if (eof-object? s) acc (logand (+ acc (string-hash s)) #xffffffff))))
                 (else acc))))))
        acc
        (or (scandir dir) '())))
(define (hash-dir passes dirs)
  (let loop ((i 0) (acc 0))
    (if (= i passes)
        acc
        (loop (+ i 1)
              (fold (lambda (d acc) (if (file-exists? d) (hash-tree d acc) acc)) acc dirs)))))

(define (run-workload name size dirs)
  (cond
    ((string=? name "fib") (fib size))
    ((string=? name "strfib*") (strfib* size))
    ((string=? name "strfib") (strfib size))
    ((string=? name "hash-nums") (hash-nums size))
    ((string=? name "hash-digs") (hash-digs size))
    ((string=? name "hash-dir") (hash-dir size dirs))
    (else (error "unknown workload" name))))

;; ---------------------------------------------------------------- arguments
(define args (cdr (command-line)))
(define (option name default)
  (let loop ((a args))
    (cond ((or (null? a) (null? (cdr a))) default)
          ((string=? (car a) name) (cadr a))
          (else (loop (cdr a))))))
(define (split-list s) (filter (lambda (x) (> (string-length x) 0)) (string-split s #\,)))
(define quick? (and (member "--quick" args) #t))
(define runs (string->number (option "--runs" "3")))
(define ns
  (map string->number
       (split-list (option "--n" (string-join
                                   (map number->string
                                        (filter (lambda (n) (<= n (current-processor-count))) '(1 2 4 8)))
                                   ",")))))
(define default-sizes
  (if quick?
      '(("fib" . 36) ("strfib*" . 27) ("strfib" . 27) ("hash-nums" . 5) ("hash-digs" . 600000) ("hash-dir" . 40))
      '(("fib" . 40) ("strfib*" . 30) ("strfib" . 30) ("hash-nums" . 6) ("hash-digs" . 3000000) ("hash-dir" . 200))))
(define sizes
  (append (map (lambda (kv)
                 (let ((parts (string-split kv #\=)))
                   (cons (car parts) (string->number (cadr parts)))))
               (split-list (option "--sizes" "")))
          default-sizes))
(define workloads (split-list (option "--workloads" "fib,strfib*,strfib,hash-nums,hash-digs,hash-dir")))
(define here (dirname (canonicalize-path (car (command-line)))))
(define dirs
  (split-list (option "--dirs" (string-join
                                 (map (lambda (d) (string-append (dirname (dirname here)) "/" d))
                                      '("lib" "tests" "bench" "examples"))
                                 ","))))
(define modes '(sequential threads futures))

;; ---------------------------------------------------------------- timing
(define (ms t) (/ (* 1000. t) internal-time-units-per-second))
(define (gc-time) (or (assq-ref (gc-stats) 'gc-time-taken) 0))
(define start (get-internal-real-time))
(define (progress fmt . xs)
  (format (current-error-port) "  [guile ~,1f s] ~a\n" (/ (ms (- (get-internal-real-time) start)) 1000.)
          (apply format #f fmt xs)))

(define (run-mode mode n work)
  (case mode
    ((sequential) (let loop ((i 0) (acc '())) (if (= i n) acc (loop (+ i 1) (cons (work) acc)))))
    ((threads) (map join-thread (map (lambda (i) (call-with-new-thread work)) (iota n))))
    ((futures) (map touch (map (lambda (i) (make-future work)) (iota n))))))

;; #(real cpu gc results)
(define (measure thunk)
  (gc)
  (let* ((g0 (gc-time)) (c0 (get-internal-run-time)) (t0 (get-internal-real-time))
         (v (thunk))
         (t1 (get-internal-real-time)))
    (vector (ms (- t1 t0)) (ms (- (get-internal-run-time) c0)) (ms (- (gc-time) g0)) v)))

(for-each
  (lambda (wl)
    (let* ((size (cdr (assoc wl sizes)))
           (work (lambda () (run-workload wl size dirs)))
           (expected (work))
           (changed 0))                 ; measurements whose results differed
      (for-each
        (lambda (n)
          (let ((best (map (lambda (m) (cons m #f)) modes)))
            (do ((r 0 (+ r 1))) ((= r runs))
              (for-each
                (lambda (m)
                  (let ((res (measure (lambda () (run-mode m n work)))))
                    (unless (every (lambda (v) (equal? v expected)) (vector-ref res 3))
                      (set! changed (+ changed 1)))
                    (let ((b (assq m best)))
                      (when (or (not (cdr b)) (< (vector-ref res 0) (vector-ref (cdr b) 0)))
                        (set-cdr! b res)))))
                modes))
            (let ((seq (vector-ref (cdr (assq 'sequential best)) 0)))
              (for-each
                (lambda (b)
                  (let ((res (cdr b)))
                    (format #t "guile.~a.~a.n~a ~,3f x ~,3f ~,3f ~,3f\n" wl (car b) n
                            (/ seq (max (vector-ref res 0) 1e-3))
                            (vector-ref res 0) (vector-ref res 1) (vector-ref res 2))))
                best)
              (force-output)
              (progress "~a n=~a: ~a" wl n
                        (string-join (map (lambda (b) (format #f "~a ~,2fx" (car b) (/ seq (vector-ref (cdr b) 0))))
                                          best)
                                     ", ")))))
        ns)
      (unless (zero? changed)
        (format #t "# ~a: ~a measurement(s) gave other results than the warmup (hash-dir: files changed)\n" wl changed))))
  workloads)
