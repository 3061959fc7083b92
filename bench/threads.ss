#!chezscheme
;;; bench/threads.ss -- the parallel-threads suite (issue 3):
;;;
;;;   bin/spindle bench threads [--n 1,2,4,8] [--quick] [--no-peers] [OPTION ...]
;;;
;;; Runs six workloads (fib, strfib*, strfib, hash-nums, hash-digs, hash-dir)
;;; N times over in seven modes: sequential (N iterations in a row), coroutine
;;; (N coroutine threads), parallel (N threads #:pool 'own), pool (one pool of
;;; N workers, N threads), futures (N futures, touched), raw (N Chez
;;; fork-threads: the in-process ceiling) and places (N places, one iteration
;;; each; the places are started, and have sent their first message, before
;;; the clock starts, as in Racket's peer).  Each cell is the best of --runs
;;; timings (by real time) and shows the speedup over the sequential cell of
;;; the same N, real ms, CPU ms of the whole process ((current-time
;;; 'time-process)) and GC ms ((current-time 'time-collector-real)); for
;;; places, plus the CPU and collector ms each place reports for its run.
;;; The workloads are in bench/bench-workloads.sls, the places' start
;;; procedure in bench/bench-places.sls.
;;; N defaults to 1,2,4,8 capped at (processor-count); --n is taken as given.
;;;
;;; Prints a readable table, then one line per cell, `threads.WORKLOAD.MODE.nN
;;; SPEEDUP x`, and the peers' lines `PEER.WORKLOAD.MODE.nN SPEEDUP x`; writes
;;; the same text to threads-YYYY-MM-DD.txt and a chart of speedup versus N
;;; to threads-YYYY-MM-DD.svg, in bench/results/ with --save and otherwise in
;;; the cache ($SPINDLE_BENCH_OUT, else $XDG_CACHE_HOME/spindle/bench, else
;;; ~/.cache/spindle/bench), so a run leaves the checkout clean.
;;;
;;; Peers (skipped with a note when the executable is missing, or with
;;; --no-peers): bench/peers/racket-threads.rkt, guile-threads.scm and
;;; python-threads.py, run with the same --n, --quick, --runs, sizes and
;;; directories; each prints `PEER.WORKLOAD.MODE.nN SPEEDUP x REAL CPU GC`.
;;;
;;; Options:
;;;   --n LIST              comma-separated thread counts, taken as given
;;;   --quick               small sizes (the whole run, peers included, ~2 min)
;;;   --runs K              best of K timings per cell (default 3)
;;;   --no-peers            spindle only
;;;   --peers LIST          only these peers (racket,guile,python)
;;;   --workloads LIST      only these workloads (also the analysis ones below)
;;;   --modes LIST          only these modes (sequential is always run)
;;;   --sizes WL=V,...      override sizes (fib=40,strfib=30,hash-nums=6,...)
;;;   --dirs D1,D2          hash-dir's trees (default lib,tests,bench,examples)
;;;   --save                write the .txt/.svg to bench/results (to commit them)
;;;   --out DIR             write them to DIR instead
;;;   --no-save             write no files
;;;   --collect-trip-bytes B   Chez's collect-trip-bytes for the whole run
;;;   --no-gc               no collections during timed runs: collect-trip-bytes 2^40
;;;                         (diagnostic; the heap grows by all the allocation)
;;;   --quiet-wait S        when other processes took over a quarter of the machine
;;;                         during a spindle measurement, wait for a quiet moment
;;;                         and measure again, spending at most S seconds on
;;;                         this in all (default 45 with --quick, else 180; 0: never)
;;;   --verbose             also print collections and heap growth per cell
;;;
;;; Analysis workloads (only with --workloads; see bench/THREADS.md):
;;;   consfib   fib that conses one pair per addition (pure small allocation)
;;;   n2sfib    fib that calls number->string on every sum (no string->number)
;;;   portfib   strfib* converting through a fresh string output port
;;;   strfib-sp strfib with a spindle (per green thread) radix parameter
;;;   digs-only hash-digs without the final hash
;;;   strhash   full-string-hash of one prebuilt 1M-char string, repeated (no allocation)
(import (except (chezscheme) thread? sleep make-parameter parameterize)
        (spindle)
        (bench-workloads)
        (only (bench-places) start-workers stop-places)
        (bench-harness)
        (only (spindle private os processes) shell-command))

;; ---------------------------------------------------------------- arguments
(define known-flags '("--quick" "--no-peers" "--save" "--no-save" "--no-gc" "--verbose"))
(define known-options '("--n" "--runs" "--peers" "--workloads" "--modes" "--sizes" "--dirs"
                        "--out" "--collect-trip-bytes" "--quiet-wait"))

(define (usage port)
  (fprintf port "usage: spindle bench threads [--n 1,2,4,8] [--quick] [--runs K] [--no-peers]\n")
  (fprintf port "         [--peers racket,guile,python] [--workloads LIST] [--modes LIST]\n")
  (fprintf port "         [--sizes WL=V,...] [--dirs D1,D2] [--save | --out DIR | --no-save]\n")
  (fprintf port "         [--collect-trip-bytes B] [--no-gc] [--quiet-wait S] [--verbose]\n"))

(check-arguments! "threads" known-flags known-options usage)

(define args bench-args)
(define (split-list s) (split-string s #\,))

(define (string-prefix? p s)
  (and (<= (string-length p) (string-length s)) (string=? p (substring s 0 (string-length p)))))

(define quick? (flag? "--quick"))
(define verbose? (flag? "--verbose"))
(define no-gc? (flag? "--no-gc"))
(define runs (positive-int "threads" "--runs" (option "--runs" "3")))
(define quiet
  (make-quiet
    (* 1000. (let ([s (option "--quiet-wait" #f)])
               (cond [(not s) (if quick? 45 180)]
                     [(string=? s "0") 0]
                     [else (positive-int "threads" "--quiet-wait" s)])))))

(define n-explicit? (and (option "--n" #f) #t))
(define ns
  (if n-explicit?
      (map (lambda (s) (positive-int "threads" "--n" s)) (split-list (option "--n" "")))
      (let ([capped (filter (lambda (n) (<= n (processor-count))) '(1 2 4 8))])
        (if (null? capped) '(1) capped))))

(define (absolute p)
  (if (path-absolute? p) p (string-append (current-directory) "/" p)))

;; The program is ROOT/bench/threads.ss.
(define root (path-parent (path-parent (absolute (car (command-line))))))
(define bench-dir (string-append root "/bench"))

(define dirs
  (map absolute
       (if (option "--dirs" #f)
           (split-list (option "--dirs" ""))
           (map (lambda (d) (string-append root "/" d)) '("lib" "tests" "bench" "examples")))))

(let ([b (option "--collect-trip-bytes" #f)])
  (when b (collect-trip-bytes (positive-int "threads" "--collect-trip-bytes" b))))

;; ---------------------------------------------------------------- workloads
;; The workloads live in bench/bench-workloads.sls, so that places (mode
;; places, bench/bench-places.sls) and bench/places.ss run the same code:
;; fib, strfib*, strfib, hash-nums, hash-digs, hash-dir (passes dirs), and
;; the analysis workloads consfib, n2sfib, portfib, strfib-sp, digs-only,
;; strhash.

;; name, procedure, full size, quick size, description, checked?
(define-record-type workload
  (fields name proc full quick describe checked? hidden?))

(define all-workloads
  (list
    (make-workload "fib" fib 40 36 (lambda (k) (format "(fib ~a)" k)) #t #f)
    (make-workload "strfib*" strfib* 30 27
      (lambda (k) (format "(strfib* ~a): number->string/string->number on every sum" k)) #t #f)
    (make-workload "strfib" strfib 30 27
      (lambda (k) (format "(strfib ~a): the same, reading a radix parameter on every conversion" k)) #t #f)
    (make-workload "hash-nums" hash-nums 6 5
      (lambda (k) (format "10^~a number keys into an equal? hashtable and back, ~a rounds" k hash-nums-rounds)) #t #f)
    (make-workload "hash-digs" hash-digs 3000000 600000
      (lambda (k) (format "digits of 0..~a written to a string port, hashed" (- k 1))) #t #f)
    (make-workload "hash-dir" (lambda (passes) (hash-dir passes dirs)) 200 40
      (lambda (k) (format "~a passes reading and hashing every file under ~a" k
                          (join ", " (map (lambda (d) (if (string-prefix? (string-append root "/") d)
                                                          (substring d (+ 1 (string-length root)) (string-length d))
                                                          d))
                                          dirs))))
      #f #f)
    (make-workload "hash-nums-shared" hash-nums-shared 6 5
      (lambda (k) (format "10^~a number keys per thread into one shared concurrent equal? table and back, ~a rounds"
                          k hash-nums-rounds))
      #t #f)
    (make-workload "hash-digs-shared" hash-digs-shared 3000000 600000
      (lambda (k) (format "digits of 0..~a written by every thread to one synchronized string port" (- k 1)))
      #t #f)
    (make-workload "consfib" consfib 37 33 (lambda (k) (format "(consfib ~a): one pair per sum" k)) #t #t)
    (make-workload "n2sfib" n2sfib 30 27 (lambda (k) (format "(n2sfib ~a): number->string only" k)) #t #t)
    (make-workload "portfib" portfib 30 27 (lambda (k) (format "(portfib ~a): via string ports" k)) #t #t)
    (make-workload "strfib-sp" strfib-sp 30 27
      (lambda (k) (format "(strfib-sp ~a): spindle parameter" k)) #t #t)
    (make-workload "digs-only" digs-only 3000000 600000
      (lambda (k) (format "digits of 0..~a to a string port, no hash" (- k 1))) #t #t)
    (make-workload "strhash" strhash 200 50
      (lambda (k) (format "full-string-hash of a 1M-char string, ~a times" k)) #t #t)))

;; The shared workloads' procedure takes the size and returns a fresh work
;; thunk: the N calls of one measurement share its table or port.  Places
;; share nothing, so these have no places mode (nor Guile or Python peers).
(define (shared? w) (member (workload-name w) '("hash-nums-shared" "hash-digs-shared")))

(define (join sep strs)
  (if (null? strs) "" (fold-left (lambda (acc s) (string-append acc sep s)) (car strs) (cdr strs))))

(define workloads
  (let ([sel (option "--workloads" #f)])
    (if sel
        (map (lambda (name)
               (or (find (lambda (w) (string=? (workload-name w) name)) all-workloads)
                   (begin (fprintf (current-error-port) "threads: unknown workload ~a\n" name) (exit 2))))
             (split-list sel))
        (filter (lambda (w) (not (workload-hidden? w))) all-workloads))))

(define size-overrides
  (map (lambda (kv)
         (let ([parts (split-string kv #\=)])
           (unless (= (length parts) 2)
             (fprintf (current-error-port) "threads: bad --sizes entry ~s\n" kv) (exit 2))
           (cons (car parts) (positive-int "threads" "--sizes" (cadr parts)))))
       (split-list (option "--sizes" ""))))

(define (size-of w)
  (cond [(assoc (workload-name w) size-overrides) => cdr]
        [quick? (workload-quick w)]
        [else (workload-full w)]))

;; ---------------------------------------------------------------- modes
(define all-modes '(sequential coroutine parallel pool futures raw places))
(define modes
  (let ([sel (option "--modes" #f)])
    (if sel
        (cons 'sequential
              (filter (lambda (m) (not (eq? m 'sequential)))
                      (map (lambda (s)
                             (let ([m (string->symbol s)])
                               (unless (memq m all-modes)
                                 (fprintf (current-error-port) "threads: unknown mode ~a\n" s) (exit 2))
                               m))
                           (split-list sel))))
        all-modes)))

(define (failed) (error 'threads "a benchmark thread failed"))

;; Runs n iterations of (work) in the mode; returns their results.
(define (run-mode mode n work)
  (case mode
    [(sequential)
     (let loop ([i 0] [acc '()]) (if (= i n) acc (loop (+ i 1) (cons (work) acc))))]
    [(coroutine)
     (let loop ([i 0] [ts '()])
       (if (= i n)
           (map (lambda (t) (thread-wait t failed)) ts)
           (loop (+ i 1) (cons (thread work #:keep 'results) ts))))]
    [(parallel)
     (let loop ([i 0] [ts '()])
       (if (= i n)
           (map (lambda (t) (thread-wait t failed)) ts)
           (loop (+ i 1) (cons (thread work #:pool 'own #:keep 'results) ts))))]
    [(pool)
     (let ([p (make-parallel-thread-pool n)])
       (let loop ([i 0] [ts '()])
         (if (= i n)
             (begin (parallel-thread-pool-close p)
                    (map (lambda (t) (thread-wait t failed)) ts))
             (loop (+ i 1) (cons (thread work #:pool p #:keep 'results) ts)))))]
    [(futures)
     (let loop ([i 0] [fs '()])
       (if (= i n)
           (map touch (reverse fs))
           (loop (+ i 1) (cons (future work) fs))))]
    [(raw)
     (let ([m (make-mutex)] [c (make-condition)] [left n] [res (make-vector n #f)])
       (do ([i 0 (+ i 1)]) ((= i n))
         (let ([i i])
           (fork-thread
             (lambda ()
               (let ([v (guard (e [#t (cons 'failed e)]) (work))])
                 (vector-set! res i v)
                 (with-mutex m (set! left (- left 1)) (condition-broadcast c)))))))
       (with-mutex m (let wait () (unless (= left 0) (condition-wait c m) (wait))))
       (vector->list res))]))

;; ---------------------------------------------------------------- places
;; Mode places: N places (dynamic-place '(bench-places) 'worker), started
;; and waited for (their first message) before the clock, as in Racket's
;; peer; the timed part sends each one #(WORKLOAD ARGS) and collects the
;; results.  Each place reports its own CPU and collector ms for the run,
;; summed into the cell's cpu and gc columns.
(define place-cpu-ms 0.)                ; during the current measurement
(define place-gc-ms 0.)
(define place-startups '())             ; ((n . ms) ...)

(define (workload-args w size)
  (if (string=? (workload-name w) "hash-dir") (list size dirs) (list size)))

(define (start-places n) (start-workers 'threads n))

(define (run-places ps msg)
  (for-each (lambda (p) (place-channel-put p msg)) ps)
  (map (lambda (p)
         (let ([r (place-channel-get p)])
           (set! place-cpu-ms (+ place-cpu-ms (vector-ref r 1)))
           (set! place-gc-ms (+ place-gc-ms (vector-ref r 2)))
           (vector-ref r 0)))
       ps))

;; ---------------------------------------------------------------- timing
;; One measurement, after a major collection:
;; #(real-ms cpu-ms gc-ms collections heap-growth results others-cpu-ms).
;; --no-gc raises collect-trip-bytes to 2^40 during the timed run, so that no
;; collection is even requested.  (A collect-request-handler of void would
;; not do: the request is not reset without a collection, so every later
;; allocation-segment refill requests again, and each request costs a
;; rendezvous of every thread.)
(define (measure thunk)
  (full-collect)
  (let ([trip (collect-trip-bytes)])
    (when no-gc? (collect-trip-bytes (expt 2 40)))
    (set! place-cpu-ms 0.)
    (set! place-gc-ms 0.)
    (let* ([n0 (collections)] [b0 (bytes-allocated)] [m0 (machine-busy-ms)]
           [g0 (gc-ms)] [c0 (cpu-ms)] [t0 (now-ms)]
           [v (thunk)]
           [t1 (now-ms)] [c1 (cpu-ms)] [g1 (gc-ms)] [m1 (machine-busy-ms)]
           [b1 (bytes-allocated)] [n1 (collections)])
      (when no-gc? (collect-trip-bytes trip))
      ;; places: their CPU and collector time count as this cell's, not as others'
      (vector (- t1 t0) (+ (- c1 c0) place-cpu-ms) (+ (- g1 g0) place-gc-ms) (- n1 n0) (- b1 b0) v
              (and m0 m1 (max 0 (- m1 m0 (- c1 c0) place-cpu-ms)))))))

;; Mode places: fresh places per measurement, started outside the clock.
(define (measure-places n w size)
  (let* ([t0 (now-ms)] [ps (start-places n)] [t1 (now-ms)])
    (set! place-startups (cons (cons n (- t1 t0)) place-startups))
    (guard (e [#t (for-each place-kill ps) (raise e)])
      (let ([res (measure/quiet
                   (lambda () (run-places ps (vector (workload-name w) (workload-args w size)))))])
        (stop-places 'threads ps)
        res))))

;; ---------------------------------------------------------------- results
;; impl: "spindle" or a peer name; mode: string.
(define-record-type cell (fields impl workload mode n speedup real cpu gc extra))

(define cells '())
(define (add-cell! c) (set! cells (cons c cells)))

(define notes '())
(define (note! fmt . xs)
  (let ([s (apply format fmt xs)])
    (set! notes (cons s notes))
    (fprintf (current-error-port) "threads: ~a\n" s)))

(define start-ms (now-ms))
(define (progress fmt . xs)
  (fprintf (current-error-port) "[~,1fs] ~a\n" (/ (- (now-ms) start-ms) 1000.) (apply format fmt xs))
  (flush-output-port (current-error-port)))

;; Measures; while other processes took over a quarter of the machine and
;; the quiet-wait budget lasts, waits for quiet and measures again.
(define (measure/quiet thunk)
  (retake-while-busy quiet (lambda () (measure thunk))
    (lambda (res) (vector-ref res 6)) (lambda (res) (vector-ref res 0))))

(define (bench-workload w)
  (let* ([size (size-of w)] [proc (workload-proc w)]
         [fresh-work (lambda () (if (shared? w) (proc size) (lambda () (proc size))))]
         [expected ((fresh-work))]               ; warmup, and the checksum
         [modes (if (shared? w) (remq 'places modes) modes)]
         [changed 0])                            ; unchecked workloads: measurements that differed
    (for-each
      (lambda (n)
        (let ([best (map (lambda (m) (cons m #f)) modes)])
          (do ([r 0 (+ r 1)]) ((= r runs))
            (for-each
              (lambda (m)
                (let* ([res (if (eq? m 'places)
                                (measure-places n w size)
                                (measure/quiet (lambda () (run-mode m n (fresh-work)))))]
                       [vals (vector-ref res 5)])
                  (unless (and (= (length vals) n) (for-all (lambda (v) (equal? v expected)) vals))
                    (if (workload-checked? w)
                        (error 'threads "wrong results" (workload-name w) m n vals expected)
                        (set! changed (+ changed 1))))
                  (let ([b (assq m best)])
                    (when (or (not (cdr b)) (< (vector-ref res 0) (vector-ref (cdr b) 0)))
                      (set-cdr! b res)))))
              modes))
          (let ([seq-real (vector-ref (cdr (assq 'sequential best)) 0)])
            (for-each
              (lambda (b)
                (let ([res (cdr b)])
                  (add-cell! (make-cell "spindle" (workload-name w) (symbol->string (car b)) n
                                        (/ seq-real (max (vector-ref res 0) 1e-3))
                                        (vector-ref res 0) (vector-ref res 1) (vector-ref res 2)
                                        (list (vector-ref res 3) (vector-ref res 4) (vector-ref res 6))))))
              best)
            (progress "~a n=~a: ~a" (workload-name w) n
                      (join ", " (map (lambda (b) (format "~a ~,2fx" (car b) (/ seq-real (vector-ref (cdr b) 0))))
                                      best))))))
      ns)
    (when (> changed 0)
      (note! "~a: ~a measurement(s) hashed different contents than the warmup (files under the trees changed during the run)"
             (workload-name w) changed))))

;; ---------------------------------------------------------------- peers
(define peer-specs
  ;; name, executable, command prefix, size adjustments
  (list
    (list "racket" "racket" (lambda () (format "racket ~a/peers/racket-threads.rkt" bench-dir)) '())
    (list "guile" "guile" (lambda () (format "guile ~a/peers/guile-threads.scm" bench-dir)) '())
    ;; CPython runs naive fib ~30x slower than Chez: fib 7 smaller (1/29 the calls).
    (list "python" "python3" (lambda () (format "python3 ~a/peers/python-threads.py" bench-dir))
          '(("fib" . -7)))))

(define peers
  (cond
    [(flag? "--no-peers") '()]
    [(option "--peers" #f)
     => (lambda (sel)
          (map (lambda (name)
                 (or (assoc name peer-specs)
                     (begin (fprintf (current-error-port) "threads: unknown peer ~a\n" name) (exit 2))))
               (split-list sel)))]
    [else peer-specs]))

(define peer-workloads (filter (lambda (w) (not (workload-hidden? w))) workloads))

(define (peer-size spec w)
  (let ([adj (assoc (workload-name w) (cadddr spec))])
    (+ (size-of w) (if adj (cdr adj) 0))))

(define (have? exe) (zero? (shell-command (format "command -v ~a >/dev/null 2>&1" exe))))

(define (shell-quote s) (string-append "'" s "'"))

(define (parse-peer-line name line)
  ;; PEER.WORKLOAD.MODE.nN SPEEDUP x REAL CPU [GC]
  (let ([fields (split-string line #\space)])
    (and (>= (length fields) 5)
         (string-prefix? (string-append name ".") (car fields))
         (let* ([key (substring (car fields) (+ 1 (string-length name)) (string-length (car fields)))]
                [parts (split-string key #\.)])
           (and (>= (length parts) 3)
                (let* ([rev (reverse parts)]
                       [nstr (car rev)] [mode (cadr rev)]
                       [wl (join "." (reverse (cddr rev)))]
                       [num (lambda (s) (let ([v (string->number s)]) (or v +nan.0)))])
                  (and (string-prefix? "n" nstr)
                       (make-cell name wl mode (string->number (substring nstr 1 (string-length nstr)))
                                  (num (list-ref fields 1)) (num (list-ref fields 3))
                                  (num (list-ref fields 4))
                                  (if (> (length fields) 5) (num (list-ref fields 5)) +nan.0)
                                  #f))))))))

(define (run-peer spec)
  (let* ([name (car spec)] [exe (cadr spec)]
         [peer-workloads (if (string=? name "racket") peer-workloads (filter (lambda (w) (not (shared? w))) peer-workloads))])
    (cond
      [(null? peer-workloads) (void)]
      [(not (have? exe)) (note! "~a: no `~a` on PATH, skipped" name exe)]
      [else
       (let* ([tmp (format "/tmp/spindle-threads-~a-~a.out" name (random 1000000000))]
              [limit (if quick? 240 900)]
              [cmd (format "~a~a --n ~a --runs ~a~a --workloads ~a --sizes ~a --dirs ~a > ~a"
                           (if (have? "timeout") (format "timeout ~a " limit) "")
                           ((caddr spec))
                           (join "," (map number->string ns)) runs (if quick? " --quick" "")
                           (shell-quote (join "," (map workload-name peer-workloads)))
                           (shell-quote (join "," (map (lambda (w) (format "~a=~a" (workload-name w) (peer-size spec w)))
                                                       peer-workloads)))
                           (shell-quote (join "," dirs))
                           tmp)])
         (progress "running ~a" name)
         (let ([rc (shell-command cmd)])
           (unless (zero? rc) (note! "~a exited with status ~a (partial results kept)" name rc)))
         (when (file-exists? tmp)
           (call-with-input-file tmp
             (lambda (p)
               (let loop ()
                 (let ([line (get-line p)])
                   (unless (eof-object? line)
                     (cond
                       [(string-prefix? "#" line)
                        (set! notes (cons (format "~a: ~a" name (substring line 1 (string-length line))) notes))]
                       [(parse-peer-line name line) => add-cell!]
                       [(> (string-length line) 0) (note! "~a: unparsed line ~s" name line)])
                     (loop))))))
           (delete-file tmp))
         (progress "~a done" name))])))

;; ---------------------------------------------------------------- output
(define out-text (open-output-string))
(define (out fmt . xs)
  (let ([s (apply format fmt xs)])
    (display s)
    (display s out-text)))

(define (pad-right s w) (if (>= (string-length s) w) s (string-append s (make-string (- w (string-length s)) #\space))))
(define (pad-left s w) (if (>= (string-length s) w) s (string-append (make-string (- w (string-length s)) #\space) s)))

(define (fmt-ms v) (if (and (real? v) (not (nan? v))) (number->string (exact (round v))) "-"))
(define (fmt-x v) (if (and (real? v) (not (nan? v))) (format "~,2fx" v) "-"))
(define (fmt-x-plain v) (if (and (real? v) (not (nan? v))) (format "~,3f" v) "nan"))

(define impl-order '("spindle" "racket" "guile" "python"))
(define (impl-rank i) (let ([m (member i impl-order)]) (if m (- (length impl-order) (length m)) 99)))
(define mode-order '("sequential" "coroutine" "parallel" "pool" "futures" "raw"
                     "threads" "threading" "places" "multiprocessing"))
(define (mode-rank m) (let ([x (member m mode-order)]) (if x (- (length mode-order) (length x)) 99)))

(define (series-of wl)
  ;; ((impl . mode) ...) in display order
  (let loop ([cs (filter (lambda (c) (string=? (cell-workload c) wl)) cells)] [acc '()])
    (if (null? cs)
        (sort (lambda (a b)
                (or (< (impl-rank (car a)) (impl-rank (car b)))
                    (and (= (impl-rank (car a)) (impl-rank (car b)))
                         (< (mode-rank (cdr a)) (mode-rank (cdr b))))))
              acc)
        (let ([k (cons (cell-impl (car cs)) (cell-mode (car cs)))])
          (loop (cdr cs) (if (member k acc) acc (cons k acc)))))))

(define (find-cell impl wl mode n)
  (find (lambda (c) (and (string=? (cell-impl c) impl) (string=? (cell-workload c) wl)
                         (string=? (cell-mode c) mode) (= (cell-n c) n)))
        cells))

(define (all-ns)
  (sort < (fold-left (lambda (acc c) (if (memv (cell-n c) acc) acc (cons (cell-n c) acc))) '() cells)))

(define (today)
  (let ([d (current-date)])
    (format "~a-~a~a-~a~a" (date-year d)
            (if (< (date-month d) 10) "0" "") (date-month d)
            (if (< (date-day d) 10) "0" "") (date-day d))))

(define (peer-size-note w)
  (let ([adjusted (filter (lambda (spec) (assoc (workload-name w) (cadddr spec))) peers)])
    (if (null? adjusted)
        ""
        (format " [~a]"
                (join "; " (map (lambda (spec) (format "~a: size ~a" (car spec) (peer-size spec w))) adjusted))))))

(define (print-tables)
  (let ([ns (all-ns)] [cw 33])
    (for-each
      (lambda (w)
        (let ([wl (workload-name w)])
          (out "\n~a -- ~a~a\n" wl ((workload-describe w) (size-of w)) (peer-size-note w))
          (out "~a~a\n" (pad-right "" 25)
               (apply string-append
                      (map (lambda (n) (string-append (pad-left (format "N=~a speedup" n) 15) "  real   cpu    gc")) ns)))
          (for-each
            (lambda (s)
              (out "~a~a\n"
                   (pad-right (format "  ~a ~a" (car s) (cdr s)) 25)
                   (apply string-append
                          (map (lambda (n)
                                 (let ([c (find-cell (car s) wl (cdr s) n)])
                                   (if c
                                       (string-append
                                         (pad-left (fmt-x (cell-speedup c)) 15)
                                         (pad-left (fmt-ms (cell-real c)) 6)
                                         (pad-left (fmt-ms (cell-cpu c)) 6)
                                         (pad-left (fmt-ms (cell-gc c)) 6))
                                       (pad-right (pad-left "-" 15) cw))))
                               ns))))
            (series-of wl))
          (let* ([cs (filter (lambda (c) (and (string=? (cell-impl c) "spindle") (string=? (cell-workload c) wl)
                                              (cell-extra c) (caddr (cell-extra c))))
                             cells)]
                 [busy (apply + (map (lambda (c) (caddr (cell-extra c))) cs))]
                 [cap (apply + (map (lambda (c) (* (processor-count) (cell-real c))) cs))])
            (when (> cap 0)
              (out "  (other processes used ~a% of the machine's CPU during spindle's cells above)\n"
                   (exact (round (* 100. (/ busy cap)))))))))
      workloads)
    ;; speedup summary at the largest N, and spindle modes against raw
    (let ([nmax (apply max ns)])
      (out "\nspeedup at N=~a (real ms of the sequential cell in parentheses)\n" nmax)
      (out "~a~a\n" (pad-right "" 28)
           (apply string-append (map (lambda (w) (pad-left (workload-name w) 11)) workloads)))
      (let ([rows (fold-left (lambda (acc w)
                               (fold-left (lambda (acc s) (if (member s acc) acc (append acc (list s))))
                                          acc (series-of (workload-name w))))
                             '() workloads)])
        (for-each
          (lambda (s)
            (unless (string=? (cdr s) "sequential")
              (out "~a~a\n" (pad-right (format "  ~a ~a" (car s) (cdr s)) 28)
                   (apply string-append
                          (map (lambda (w)
                                 (let ([c (find-cell (car s) (workload-name w) (cdr s) nmax)])
                                   (pad-left (if c (fmt-x (cell-speedup c)) "-") 11)))
                               workloads)))))
          (sort (lambda (a b) (or (< (impl-rank (car a)) (impl-rank (car b)))
                                  (and (= (impl-rank (car a)) (impl-rank (car b)))
                                       (< (mode-rank (cdr a)) (mode-rank (cdr b))))))
                rows))
        (out "~a~a\n" (pad-right "  (sequential ms, spindle)" 28)
             (apply string-append
                    (map (lambda (w) (let ([c (find-cell "spindle" (workload-name w) "sequential" nmax)])
                                       (pad-left (if c (fmt-ms (cell-real c)) "-") 11)))
                         workloads))))
      (when (and (find-cell "spindle" (workload-name (car workloads)) "raw" nmax)
                 (exists (lambda (m) (memq m modes)) '(parallel pool futures)))
        (out "\nspindle speedup as a share of raw fork-thread speedup at N=~a\n" nmax)
        (for-each
          (lambda (m)
            (out "~a~a\n" (pad-right (format "  ~a / raw" m) 28)
                 (apply string-append
                        (map (lambda (w)
                               (let ([c (find-cell "spindle" (workload-name w) m nmax)]
                                     [r (find-cell "spindle" (workload-name w) "raw" nmax)])
                                 (pad-left (if (and c r) (format "~a%" (exact (round (* 100 (/ (cell-speedup c) (cell-speedup r))))))
                                               "-")
                                           11)))
                             workloads))))
          (filter (lambda (m) (member m (map symbol->string modes))) '("parallel" "pool" "futures" "places"))))
      (when verbose?
        (out "\nspindle per cell: collections, heap growth (bytes-allocated after - before), CPU ms other processes took meanwhile\n")
        (for-each
          (lambda (c)
            (when (and (string=? (cell-impl c) "spindle") (cell-extra c))
              (out "  ~a.~a.n~a: ~a collections, heap +~a MB, others ~a ms\n" (cell-workload c) (cell-mode c) (cell-n c)
                   (car (cell-extra c)) (exact (round (/ (cadr (cell-extra c)) 1048576.)))
                   (let ([o (caddr (cell-extra c))]) (if o (exact (round o)) "?")))))
          (reverse cells))))))

(define (print-lines)
  (out "\n")
  (for-each
    (lambda (c)
      (out "~a.~a.~a.n~a ~a x\n"
           (if (string=? (cell-impl c) "spindle") "threads" (cell-impl c))
           (cell-workload c) (cell-mode c) (cell-n c) (fmt-x-plain (cell-speedup c))))
    (sort (lambda (a b)
            (let ([ra (impl-rank (cell-impl a))] [rb (impl-rank (cell-impl b))])
              (or (< ra rb)
                  (and (= ra rb)
                       (let ([wa (workload-index (cell-workload a))] [wb (workload-index (cell-workload b))])
                         (or (< wa wb)
                             (and (= wa wb)
                                  (or (< (cell-n a) (cell-n b))
                                      (and (= (cell-n a) (cell-n b))
                                           (< (mode-rank (cell-mode a)) (mode-rank (cell-mode b))))))))))))
          cells)))

(define (workload-index name)
  (let loop ([ws workloads] [i 0])
    (cond [(null? ws) 99] [(string=? (workload-name (car ws)) name) i] [else (loop (cdr ws) (+ i 1))])))

;; ---------------------------------------------------------------- SVG
(define palette
  '(("spindle" . (("sequential" . "#7f7f7f") ("coroutine" . "#ff7f0e") ("parallel" . "#1f77b4")
                  ("pool" . "#2ca02c") ("futures" . "#9467bd") ("raw" . "#000000")
                  ("places" . "#d62728")))
    ("racket" . (("sequential" . "#c7c7c7") ("coroutine" . "#ffbb78") ("futures" . "#c5b0d5")
                 ("places" . "#d62728")))
    ("guile" . (("sequential" . "#c7c7c7") ("threads" . "#17becf") ("futures" . "#e377c2")))
    ("python" . (("sequential" . "#c7c7c7") ("threading" . "#bcbd22") ("multiprocessing" . "#8c564b")))))
(define dashes '(("spindle" . "") ("racket" . "7,3") ("guile" . "2,3") ("python" . "9,3,2,3")))

(define (color-of impl mode)
  (let ([m (assoc impl palette)])
    (or (and m (let ([c (assoc mode (cdr m))]) (and c (cdr c)))) "#444444")))
(define (dash-of impl) (let ([d (assoc impl dashes)]) (if d (cdr d) "4,4")))

(define (svg-escape s)
  (let loop ([cs (string->list s)] [acc '()])
    (if (null? cs)
        (apply string-append (reverse acc))
        (loop (cdr cs)
              (cons (case (car cs) [(#\<) "&lt;"] [(#\>) "&gt;"] [(#\&) "&amp;"] [else (string (car cs))]) acc)))))

;; Peers' sequential lines are 1.0 by definition, like spindle's: leave them out.
(define (chart-series ss)
  (filter (lambda (s) (or (string=? (car s) "spindle") (not (string=? (cdr s) "sequential")))) ss))

(define (write-svg path title)
  (let* ([ns (all-ns)] [wls (map workload-name workloads)]
         [cols (min 3 (length wls))] [rows (quotient (+ (length wls) cols -1) cols)]
         [pw 300] [ph 230] [ml 40] [mr 12] [mt 28] [mb 34]
         [series (fold-left (lambda (acc w)
                              (fold-left (lambda (acc s) (if (member s acc) acc (append acc (list s))))
                                         acc (series-of w)))
                            '() wls)]
         [series (chart-series series)]
         [series (sort (lambda (a b) (or (< (impl-rank (car a)) (impl-rank (car b)))
                                         (and (= (impl-rank (car a)) (impl-rank (car b)))
                                              (< (mode-rank (cdr a)) (mode-rank (cdr b))))))
                       series)]
         [legend-cols 4] [legend-rows (quotient (+ (length series) legend-cols -1) legend-cols)]
         [width (* cols pw)] [top 40] [height (+ top (* rows ph) 20 (* legend-rows 18) 10)]
         [p (open-output-string)])
    (fprintf p "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"~a\" height=\"~a\" viewBox=\"0 0 ~a ~a\" font-family=\"sans-serif\" font-size=\"11\">\n"
             width height width height)
    (fprintf p "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n")
    (fprintf p "<text x=\"~a\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">~a</text>\n" (/ width 2) (svg-escape title))
    (let loop ([ws wls] [i 0])
      (unless (null? ws)
        (let* ([wl (car ws)]
               [x0 (* (remainder i cols) pw)] [y0 (+ top (* (quotient i cols) ph))]
               [px0 (+ x0 ml)] [px1 (- (+ x0 pw) mr)] [py0 (+ y0 mt)] [py1 (- (+ y0 ph) mb)]
               [wcells (filter (lambda (c) (string=? (cell-workload c) wl)) cells)]
               [ymax (let ([m (apply max (apply max ns) 1
                                     (map (lambda (c) (if (nan? (cell-speedup c)) 0 (cell-speedup c))) wcells))])
                       (exact (ceiling m)))]
               [ystep (cond [(<= ymax 4) 0.5] [(<= ymax 10) 1] [else 2])]
               [k (length ns)]
               [xpos (lambda (n) (let ([idx (let f ([l ns] [j 0]) (if (= (car l) n) j (f (cdr l) (+ j 1))))])
                                   (if (= k 1) (/ (+ px0 px1) 2.) (+ px0 10 (* idx (/ (- px1 px0 20) (- k 1.)))))))]
               [ypos (lambda (v) (- py1 (* (/ (min v ymax) ymax) (- py1 py0))))])
          (fprintf p "<g>\n<text x=\"~a\" y=\"~a\" text-anchor=\"middle\" font-size=\"12\" font-weight=\"bold\">~a</text>\n"
                   (/ (+ px0 px1) 2.) (- py0 8) (svg-escape wl))
          ;; grid and y ticks
          (let tick ([v 0])
            (when (<= v ymax)
              (let ([y (ypos v)])
                (fprintf p "<line x1=\"~a\" y1=\"~,1f\" x2=\"~a\" y2=\"~,1f\" stroke=\"#e5e5e5\"/>\n" px0 y px1 y)
                (fprintf p "<text x=\"~a\" y=\"~,1f\" text-anchor=\"end\">~a</text>\n" (- px0 4) (+ y 4)
                         (if (integer? v) (exact v) v)))
              (tick (+ v ystep))))
          ;; axes
          (fprintf p "<line x1=\"~a\" y1=\"~a\" x2=\"~a\" y2=\"~a\" stroke=\"black\"/>\n" px0 py1 px1 py1)
          (fprintf p "<line x1=\"~a\" y1=\"~a\" x2=\"~a\" y2=\"~a\" stroke=\"black\"/>\n" px0 py0 px0 py1)
          (for-each (lambda (n)
                      (fprintf p "<text x=\"~,1f\" y=\"~a\" text-anchor=\"middle\">~a</text>\n" (xpos n) (+ py1 14) n))
                    ns)
          (fprintf p "<text x=\"~a\" y=\"~a\" text-anchor=\"middle\">N</text>\n" (/ (+ px0 px1) 2.) (+ py1 28))
          (fprintf p "<text x=\"~a\" y=\"~a\" text-anchor=\"middle\" transform=\"rotate(-90 ~a ~a)\">speedup</text>\n"
                   (+ x0 11) (/ (+ py0 py1) 2.) (+ x0 11) (/ (+ py0 py1) 2.))
          ;; ideal: min(N, processors)
          (fprintf p "<polyline fill=\"none\" stroke=\"#bbbbbb\" stroke-dasharray=\"1,3\" points=\"~a\"/>\n"
                   (join " " (map (lambda (n) (format "~,1f,~,1f" (xpos n) (ypos (min n (processor-count))))) ns)))
          (for-each
            (lambda (s)
              (let* ([pts (filter (lambda (x) x)
                                  (map (lambda (n)
                                         (let ([c (find-cell (car s) wl (cdr s) n)])
                                           (and c (not (nan? (cell-speedup c)))
                                                (cons (xpos n) (ypos (cell-speedup c))))))
                                       ns))]
                     [col (color-of (car s) (cdr s))])
                (unless (null? pts)
                  (fprintf p "<polyline fill=\"none\" stroke=\"~a\" stroke-width=\"~a\"~a points=\"~a\"><title>~a ~a</title></polyline>\n"
                           col (if (string=? (car s) "spindle") 2 1.5)
                           (let ([d (dash-of (car s))]) (if (string=? d "") "" (format " stroke-dasharray=\"~a\"" d)))
                           (join " " (map (lambda (pt) (format "~,1f,~,1f" (car pt) (cdr pt))) pts))
                           (car s) (cdr s))
                  (for-each (lambda (pt) (fprintf p "<circle cx=\"~,1f\" cy=\"~,1f\" r=\"2.5\" fill=\"~a\"/>\n" (car pt) (cdr pt) col))
                            pts))))
            (chart-series (series-of wl)))
          (fprintf p "</g>\n")
          (loop (cdr ws) (+ i 1)))))
    ;; legend
    (let ([ly0 (+ top (* rows ph) 16)] [lw (/ width legend-cols)])
      (let loop ([ss series] [i 0])
        (unless (null? ss)
          (let* ([s (car ss)] [x (+ 10 (* (remainder i legend-cols) lw))] [y (+ ly0 (* (quotient i legend-cols) 18))]
                 [d (dash-of (car s))])
            (fprintf p "<line x1=\"~a\" y1=\"~a\" x2=\"~a\" y2=\"~a\" stroke=\"~a\" stroke-width=\"2\"~a/>\n"
                     x y (+ x 26) y (color-of (car s) (cdr s))
                     (if (string=? d "") "" (format " stroke-dasharray=\"~a\"" d)))
            (fprintf p "<text x=\"~a\" y=\"~a\">~a ~a</text>\n" (+ x 32) (+ y 4) (car s) (cdr s)))
          (loop (cdr ss) (+ i 1)))))
    (fprintf p "</svg>\n")
    (call-with-output-file path (lambda (o) (display (get-output-string p) o)) 'replace)))

;; ---------------------------------------------------------------- main
(define command-text
  (join " " (cons "bin/spindle bench threads" args)))

(define (uname)
  (guard (e [#t "?"])
    (let-values ([(to from err pid) (open-process-ports "uname -srm" (buffer-mode block) (native-transcoder))])
      (let ([l (get-line from)]) (close-port to) (close-port from) (close-port err)
        (if (eof-object? l) "?" l)))))

(define (loadavg)
  (guard (e [#t "?"]) (call-with-input-file "/proc/loadavg" get-line)))

(define header
  (format "# spindle bench threads, ~a, ~a processors (~a, ~a~a), ~a, /proc/loadavg at start: ~a\n# command: ~a\n# ~a; best of ~a by real time; speedup = sequential real / real at the same N; ms: real, CPU (whole process), GC (collector real time)~a\n"
          (today) (processor-count) (uname) (scheme-version) (if (threaded?) ", threaded" "")
          (date-and-time) (loadavg) command-text
          (if quick? "--quick sizes" "full sizes") runs
          (if (or no-gc? (option "--collect-trip-bytes" #f))
              (format "; collect-trip-bytes ~a~a" (collect-trip-bytes) (if no-gc? ", no collections in timed runs" ""))
              "")))

(fprintf (current-error-port) "~a" header)
(progress "N = ~a, modes ~a, workloads ~a" ns modes (map workload-name workloads))

(for-each bench-workload workloads)
(unless (null? place-startups)
  (note! "spindle places cells exclude starting the places (until their first message): ~a"
         (join ", " (map (lambda (n)
                           (let ([ms (map cdr (filter (lambda (x) (= (car x) n)) place-startups))])
                             (format "~a place(s) ~a-~a ms" n (exact (round (apply min ms))) (exact (round (apply max ms))))))
                         (sort < (fold-left (lambda (acc x) (if (memv (car x) acc) acc (cons (car x) acc)))
                                            '() place-startups)))))
  (note! "spindle places cells: cpu and gc add up the places' own CPU and collector ms as they report them"))
(when (> (quiet-retimed quiet) 0)
  (note! "~a spindle measurement(s) repeated because other processes took over a quarter of the machine; ~,1f s spent waiting for quiet"
         (quiet-retimed quiet) (/ (quiet-waited-ms quiet) 1000.)))
(for-each run-peer peers)

(out "~a" header)
(print-tables)
(unless (null? notes)
  (out "\nnotes:\n")
  (for-each (lambda (s) (out "  ~a\n" s)) (reverse notes)))
(print-lines)
(out "# total ~,1f s\n" (/ (- (now-ms) start-ms) 1000.))

;; bench/results/ only when asked: a plain run leaves the checkout clean.
(define (cache-out-dir)
  (let ([env (lambda (v) (let ([s (getenv v)]) (and s (not (string=? s "")) s)))])
    (cond [(env "SPINDLE_BENCH_OUT") => values]
          [(env "XDG_CACHE_HOME") => (lambda (d) (string-append d "/spindle/bench"))]
          [else (string-append (or (env "HOME") "/tmp") "/.cache/spindle/bench")])))

(define (make-directories! dir)
  (unless (or (string=? dir "") (file-directory? dir))
    (make-directories! (path-parent dir))
    (mkdir dir)))

(unless (flag? "--no-save")
  (let* ([dir (absolute (cond [(option "--out" #f) => values]
                              [(flag? "--save") (string-append bench-dir "/results")]
                              [else (cache-out-dir)]))]
         [base (string-append dir "/threads-" (today))])
    (make-directories! dir)
    (call-with-output-file (string-append base ".txt")
      (lambda (o) (display (get-output-string out-text) o)) 'replace)
    (write-svg (string-append base ".svg")
               (format "spindle bench threads: speedup vs N (~a processors, ~a~a)"
                       (processor-count) (today) (if quick? ", --quick" "")))
    (fprintf (current-error-port) "threads: wrote ~a.txt and ~a.svg\n" base base)))
(exit 0)
