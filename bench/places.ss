#!chezscheme
;;; bench/places.ss -- the places suite:
;;;
;;;   bin/spindle bench places [--quick] [--no-peers] [--runs K]
;;;
;;; One line per figure, `places.NAME VALUE UNIT`:
;;;   places.create-first      ms    the program's first place: (dynamic-place
;;;                                  '(bench-places) 'echo) until its first
;;;                                  message arrives (starts the template process,
;;;                                  which compiles spindle and bench-places)
;;;   places.create            ms    the same, mean over the next 20 places
;;;                                  (--quick: 10), each stopped and waited for
;;;                                  outside the timing
;;;   places.create-min        ms    the fastest of those
;;;   places.roundtrip-small   us    place-channel-put then place-channel-get of a
;;;                                  fixnum that an echo place sends back
;;;   places.throughput-1mb    MB/s  1 MiB bytevectors one way into a place that
;;;                                  counts them and acknowledges at the end
;;;                                  (clock: first put to the acknowledgement)
;;;   places.throughput-1mb-pipe MB/s the same bytes written with put-bytevector
;;;                                  to the stdin pipe of `sh -c 'read x; echo
;;;                                  ready; cat >/dev/null; echo done'` (clock:
;;;                                  first write after `ready` to `done`)
;;;   places.memcpy-1mb        MB/s  bytevector-copy! of 1 MiB in this process
;;;   places.strfib-seq        ms    (strfib K) twice in this process (K = 30,
;;;                                  --quick 27; strfib of bench/threads.ss)
;;;   places.strfib-par        ms    (strfib K) once in each of two places at the
;;;                                  same time; the places are started and have
;;;                                  sent their first message before the clock
;;;   places.strfib-speedup-2  x     strfib-seq / strfib-par
;;;   places.strfib-speedup-2-with-start x  the same with the start of the two
;;;                                  places inside the timing
;;;   places.strfib-speedup-2-warm x  the same places again, right after: warm
;;;                                  (a fresh place's first collections also
;;;                                  copy the heap it inherits from the template)
;;; MB = 2^20 bytes.  Timings are best of --runs (default 3; strfib: 5) after
;;; a warmup.  Peers (unless --no-peers): bench/peers/racket-places.rkt
;;; measures the same with Racket's places and prints `places.racket-NAME`
;;; lines, and the run ends with `places.ratio-NAME` (spindle / racket),
;;; `places.throughput-vs-racket` (the same as ratio-throughput-1mb; issue 12
;;; wants it >= 1) and a table with the targets.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle)
        (only (bench-workloads) strfib)
        (only (spindle private unix) shell-command))

;; ---------------------------------------------------------------- arguments
(define args (command-line-arguments))
(define (usage port)
  (fprintf port "usage: spindle bench places [--quick] [--no-peers] [--runs K]\n"))
(let check ([a args])
  (cond
    [(null? a) (void)]
    [(member (car a) '("--quick" "--no-peers")) (check (cdr a))]
    [(member (car a) '("--help" "-h")) (usage (current-output-port)) (exit 0)]
    [(and (equal? (car a) "--runs") (pair? (cdr a))
          (let ([v (string->number (cadr a))]) (and v (exact? v) (integer? v) (> v 0))))
     (check (cddr a))]
    [else (fprintf (current-error-port) "places: bad argument ~s\n" (car a))
          (usage (current-error-port)) (exit 2)]))
(define quick? (and (member "--quick" args) #t))
(define peers? (not (member "--no-peers" args)))
(define runs (cond [(member "--runs" args) => (lambda (l) (string->number (cadr l)))] [else 3]))
(define strfib-runs (if (member "--runs" args) runs 5))

(define n-create (if quick? 10 20))
(define n-roundtrip (if quick? 5000 20000))
(define n-mb (if quick? 50 200))        ; MiB per throughput run
(define n-memcpy (if quick? 500 2000))
(define strfib-k (if quick? 27 30))
(define mib 1048576)

(define here
  (let ([p (car (command-line))])
    (let loop ([i (- (string-length p) 1)])
      (cond [(< i 0) "."] [(char=? (string-ref p i) #\/) (substring p 0 i)]
            [else (loop (- i 1))]))))

;; ---------------------------------------------------------------- helpers
(define (now-ms)
  (let ([t (current-time 'time-monotonic)])
    (+ (* 1000. (time-second t)) (/ (time-nanosecond t) 1e6))))

(define (fmt v)
  (let ([v (exact->inexact v)])
    (cond [(>= v 100) (number->string (exact (round v)))]
          [(>= v 1) (format "~,2f" v)]
          [else (format "~,3f" v)])))

(define figures (make-hashtable equal-hash equal?)) ; name -> value
(define (report name value unit)
  (hashtable-set! figures name value)
  (printf "places.~a ~a ~a\n" name (fmt value) unit)
  (flush-output-port (current-output-port)))

(define (note fmt . xs)
  (printf "# ~a\n" (apply format fmt xs))
  (flush-output-port (current-output-port)))

;; best (smallest) of k results of (thunk)
(define (best-of k thunk)
  (let loop ([i 0] [best #f])
    (if (= i k) best (let ([v (thunk)]) (loop (+ i 1) (if (or (not best) (< v best)) v best))))))

;; (collect) refuses while spindle's other threads exist: a major collection
;; through the rendezvous.
(define (full-collect)
  (let ([h (collect-request-handler)])
    (collect-request-handler (lambda () (collect (collect-maximum-generation))))
    (collect-rendezvous)
    (collect-request-handler h)))

;; Every place started here, so that none outlives the suite.
(define started '())
(define (start name)
  (let ([p (dynamic-place '(bench-places) name)])
    (set! started (cons p started))
    p))
(define (expect p what)
  (let ([m (place-channel-get p)])
    (unless (equal? m what) (errorf 'places "expected ~s from a place, got ~s" what m))))
(define (stop! p)
  (place-channel-put p 'stop)
  (let ([code (place-wait p)])
    (unless (eqv? code 0) (errorf 'places "a place ended with ~s" code))))
(define (kill-all!)
  (for-each place-kill started)
  (set! started '()))

;; ---------------------------------------------------------------- create
(define (bench-create)
  (let* ([t0 (now-ms)] [p (start 'echo)])
    (expect p 'ready)
    (report "create-first" (- (now-ms) t0) "ms")
    (stop! p))
  (let loop ([i 0] [times '()])
    (if (= i n-create)
        (begin
          (report "create" (/ (apply + times) n-create) "ms")
          (report "create-min" (apply min times) "ms"))
        (let* ([t0 (now-ms)] [p (start 'echo)])
          (expect p 'ready)
          (let ([dt (- (now-ms) t0)])
            (stop! p)
            (loop (+ i 1) (cons dt times)))))))

;; ---------------------------------------------------------------- round trip
(define (bench-roundtrip)
  (let ([p (start 'echo)])
    (expect p 'ready)
    (do ([i 0 (fx+ i 1)]) ((fx= i 1000)) (place-channel-put/get p i))
    (report "roundtrip-small"
            (best-of runs
              (lambda ()
                (let ([t0 (now-ms)])
                  (do ([i 0 (fx+ i 1)]) ((fx= i n-roundtrip))
                    (unless (eqv? (place-channel-put/get p i) i) (errorf 'places "echo mismatch")))
                  (/ (* 1000. (- (now-ms) t0)) n-roundtrip))))
            "us")
    (stop! p)))

;; ---------------------------------------------------------------- throughput
(define payload (make-bytevector mib 7))

(define (bench-throughput)
  (let ([p (start 'sink)])
    (expect p 'ready)
    (let ([send-mb (lambda (k)
                     (let ([t0 (now-ms)])
                       (do ([i 0 (fx+ i 1)]) ((fx= i k)) (place-channel-put p payload))
                       (place-channel-put p 'done)
                       (let ([n (place-channel-get p)])
                         (unless (eqv? n (* k mib)) (errorf 'places "sink counted ~s bytes" n))
                         (/ k (/ (- (now-ms) t0) 1000.)))))])
      (send-mb 5)
      (full-collect)
      (report "throughput-1mb" (- (best-of runs (lambda () (- (send-mb n-mb))))) "MB/s"))
    (stop! p)))

(define pipe-command "sh -c 'read x; echo ready; cat >/dev/null; echo done'")

(define (read-line-bytes port)
  (let loop ([acc '()])
    (let ([b (get-u8 port)])
      (if (or (eof-object? b) (fx= b 10))
          (utf8->string (u8-list->bytevector (reverse acc)))
          (loop (cons b acc))))))

(define (pipe-run k)
  (let-values ([(to from err pid) (open-process-ports pipe-command (buffer-mode block) #f)])
    (put-bytevector to (string->utf8 "go\n"))
    (flush-output-port to)
    (unless (equal? (read-line-bytes from) "ready") (errorf 'places "pipe: no ready line"))
    (let ([t0 (now-ms)])
      (do ([i 0 (fx+ i 1)]) ((fx= i k)) (put-bytevector to payload))
      (close-port to)
      (let ([l (read-line-bytes from)])
        (unless (equal? l "done") (errorf 'places "pipe: expected done, got ~s" l)))
      (let ([mbs (/ k (/ (- (now-ms) t0) 1000.))])
        (close-port from)
        (close-port err)
        mbs))))

(define (bench-pipe)
  (pipe-run 5)
  (report "throughput-1mb-pipe" (- (best-of runs (lambda () (- (pipe-run n-mb))))) "MB/s"))

(define (bench-memcpy)
  (let ([dst (make-bytevector mib 0)])
    (bytevector-copy! payload 0 dst 0 mib)
    (report "memcpy-1mb"
            (- (best-of runs
                 (lambda ()
                   (let ([t0 (now-ms)])
                     (do ([i 0 (fx+ i 1)]) ((fx= i n-memcpy)) (bytevector-copy! payload 0 dst 0 mib))
                     (- (/ n-memcpy (/ (- (now-ms) t0) 1000.)))))))
            "MB/s")))

;; ---------------------------------------------------------------- quiet
;; The strfib figures need both cores.  Busy CPU ms of the whole machine
;; (every process) from /proc/stat; minus this process's and the places' CPU
;; it is what other processes took.  A strfib timing during which others
;; took over a quarter of the machine is taken again after a quiet moment
;; (others under 10% for 250 ms), spending at most quiet-budget-ms waiting;
;; every group of figures also starts at such a moment.
(define (tms t) (+ (* 1000. (time-second t)) (/ (time-nanosecond t) 1e6)))
(define (cpu-ms) (tms (current-time 'time-process)))
(define (machine-busy-ms)
  (guard (e [#t #f])
    (let* ([line (call-with-input-file "/proc/stat" get-line)]
           [xs (map string->number (cdr (split line)))])
      ;; user nice system idle iowait irq softirq steal ...; USER_HZ = 100
      (* 10 (- (apply + (list-head xs (min 8 (length xs)))) (list-ref xs 3) (list-ref xs 4))))))
(define quiet-budget-ms (if quick? 30000. 120000.))
(define retimed 0)
(define (wait-for-quiet)
  (let loop ()
    (when (> quiet-budget-ms 0)
      (let* ([m0 (machine-busy-ms)] [c0 (cpu-ms)] [t0 (now-ms)])
        (sleep 0.25)
        (let* ([dt (- (now-ms) t0)] [m1 (machine-busy-ms)]
               [others (and m0 m1 (- m1 m0 (- (cpu-ms) c0)))])
          (set! quiet-budget-ms (- quiet-budget-ms dt))
          (when (and others (> others (* 0.1 (processor-count) dt)))
            (loop)))))))
;; thunk -> (ms . places-cpu-ms); returns ms
(define (timed/quiet thunk)
  (let retry ()
    (let* ([m0 (machine-busy-ms)] [c0 (cpu-ms)] [r (thunk)] [c1 (cpu-ms)] [m1 (machine-busy-ms)]
           [ms (car r)]
           [others (and m0 m1 (- m1 m0 (- c1 c0) (cdr r)))])
      (if (and others (> ms 0) (> (/ others (* (processor-count) ms)) 0.25) (> quiet-budget-ms 0))
          (begin (set! retimed (+ retimed 1)) (wait-for-quiet) (retry))
          ms))))

;; ---------------------------------------------------------------- strfib
(define (bench-strfib)
  ;; Each run starts two fresh places (outside the clock, but inside the
  ;; with-start figure), times (strfib K) in both at once, then again in
  ;; the same, now warm, places.
  (let* ([expected (strfib strfib-k)]   ; warmup and checksum
         [seq (best-of strfib-runs
                (lambda ()
                  (timed/quiet
                    (lambda ()
                      (full-collect)
                      (let ([t0 (now-ms)])
                        (strfib strfib-k) (strfib strfib-k)
                        (cons (- (now-ms) t0) 0))))))]
         [place-cpu '()]
         ;; -> places' CPU ms
         [both (lambda (a b)
                 (place-channel-put a (vector "strfib" (list strfib-k)))
                 (place-channel-put b (vector "strfib" (list strfib-k)))
                 (let* ([ra (place-channel-get a)] [rb (place-channel-get b)])
                   (unless (and (eqv? (vector-ref ra 0) expected) (eqv? (vector-ref rb 0) expected))
                     (errorf 'places "strfib: wrong results ~s ~s" ra rb))
                   (set! place-cpu (cons (list (vector-ref ra 1) (vector-ref rb 1)
                                               (vector-ref ra 2) (vector-ref rb 2))
                                         place-cpu))
                   (+ (vector-ref ra 1) (vector-ref rb 1))))]
         ;; one run: (fresh with-start warm); retaken (fresh places) while others were busy
         [one-run (lambda ()
                    (let ([r #f])
                      (timed/quiet
                        (lambda ()
                          (full-collect)
                          (let* ([t0 (now-ms)] [a (start 'worker)] [b (start 'worker)])
                            (expect a 'ready)
                            (expect b 'ready)
                            (let* ([t1 (now-ms)] [cpu1 (both a b)] [t2 (now-ms)] [cpu2 (both a b)] [t3 (now-ms)])
                              (stop! a)
                              (stop! b)
                              (set! r (list (- t2 t1) (- t2 t0) (- t3 t2)))
                              (cons (- t3 t0) (+ cpu1 cpu2))))))
                      r))]
         [results (map (lambda (i) (one-run)) (iota strfib-runs))]
         [par (apply min (map car results))]
         [par-start (apply min (map cadr results))]
         [par-warm (apply min (map caddr results))])
    (report "strfib-seq" seq "ms")
    (report "strfib-par" par "ms")
    (report "strfib-speedup-2" (/ seq par) "x")
    (report "strfib-speedup-2-with-start" (/ seq par-start) "x")
    (report "strfib-speedup-2-warm" (/ seq par-warm) "x")
    (note "strfib ~a, per run (fresh places, then warm): CPU ms of each place / its collector ms:~a" strfib-k
          (apply string-append
                 (map (lambda (l) (format " ~a+~a/~a+~a" (fmt (car l)) (fmt (cadr l)) (fmt (caddr l)) (fmt (cadddr l))))
                      (reverse place-cpu))))))

;; ---------------------------------------------------------------- peers
(define (string-prefix? p s)
  (and (<= (string-length p) (string-length s)) (string=? p (substring s 0 (string-length p)))))

(define (split s)
  (let loop ([cs (string->list s)] [cur '()] [acc '()])
    (define (push) (if (null? cur) acc (cons (list->string (reverse cur)) acc)))
    (cond [(null? cs) (reverse (push))]
          [(char-whitespace? (car cs)) (loop (cdr cs) '() (push))]
          [else (loop (cdr cs) (cons (car cs) cur) acc)])))

(define (run-racket)
  (cond
    [(not peers?) (void)]
    [(not (zero? (shell-command "command -v racket >/dev/null 2>&1"))) (note "racket not found: peer figures skipped")]
    [else
     (let-values ([(to from err pid)
                   (open-process-ports
                     (format "racket ~a/peers/racket-places.rkt~a --runs ~a 2>&1" here (if quick? " --quick" "")
                             runs)
                     (buffer-mode block) (native-transcoder))])
       (close-port to)
       (let loop ()
         (let ([line (get-line from)])
           (unless (eof-object? line)
             (let ([ws (split line)])
               (if (and (= (length ws) 3) (string-prefix? "places.racket-" (car ws)) (string->number (cadr ws)))
                   (begin
                     (hashtable-set! figures (substring (car ws) 7 (string-length (car ws)))
                                     (string->number (cadr ws)))
                     (printf "~a\n" line))
                   (printf "# racket: ~a\n" line))
               (flush-output-port (current-output-port)))
             (loop))))
       (close-port from)
       (close-port err))]))

;; ---------------------------------------------------------------- summary
(define (fig name) (hashtable-ref figures name #f))

;; name, unit, target: (cmp . value) or #f; lower-better?
(define summary
  '(("create-first" "ms" #f #t)
    ("create" "ms" (<= . 20) #t)
    ("roundtrip-small" "us" (<= . 4) #t)
    ("throughput-1mb" "MB/s" #f #f)
    ("throughput-1mb-pipe" "MB/s" #f #f)
    ("memcpy-1mb" "MB/s" #f #f)
    ("strfib-speedup-2" "x" (>= . 1.9) #f)
    ("strfib-speedup-2-with-start" "x" #f #f)
    ("strfib-speedup-2-warm" "x" #f #f)))

(define (print-summary)
  (when (fig "racket-create")
    (for-each
      (lambda (s)
        (let ([a (fig (car s))] [b (fig (string-append "racket-" (car s)))])
          (when (and a b (> b 0))
            (report (string-append "ratio-" (car s)) (/ a b) "x"))))
      summary))
  ;; issue 12's target: at least Racket's (its places share one address space)
  (let ([a (fig "throughput-1mb")] [b (fig "racket-throughput-1mb")])
    (when (and a b (> b 0)) (report "throughput-vs-racket" (/ a b) "x")))
  (printf "\n| figure | spindle | Racket 8.7 | spindle/Racket | target | met? |\n")
  (printf "|---|---:|---:|---:|---:|---|\n")
  (for-each
    (lambda (s)
      (let* ([name (car s)] [unit (cadr s)] [target (caddr s)]
             [a (fig name)] [b (fig (string-append "racket-" name))])
        (printf "| ~a | ~a | ~a | ~a | ~a | ~a |\n" name
                (if a (format "~a ~a" (fmt a) unit) "-")
                (if b (format "~a ~a" (fmt b) unit) "-")
                (if (and a b (> b 0)) (format "~a" (fmt (/ a b))) "-")
                (if target (format "~a ~a ~a" (car target) (cdr target) unit) "-")
                (cond [(not (and target a)) "-"]
                      [((if (eq? (car target) '<=) <= >=) a (cdr target)) "yes"]
                      [else "no"]))))
    summary)
  (printf "\n(ratios: spindle / Racket, so below 1 is better for times, above 1 for MB/s and speedups)\n"))

;; ---------------------------------------------------------------- main
(define (loadavg) (guard (e [#t "?"]) (call-with-input-file "/proc/loadavg" get-line)))

(printf "# spindle bench places, ~a, ~a processors~a, loadavg ~a\n" (date-and-time) (processor-count)
        (if quick? ", --quick" "") (loadavg))
(define t-start (now-ms))
(guard (e [#t (kill-all!) (raise e)])
  ;; each group starts at a quiet moment (within the waiting budget)
  (for-each (lambda (bench) (wait-for-quiet) (bench))
            (list bench-create bench-roundtrip bench-throughput bench-pipe bench-memcpy bench-strfib)))
(kill-all!)
(when (> retimed 0)
  (note "~a strfib timing(s) taken again because other processes took over a quarter of the machine" retimed))
(note "~,1f s of the waiting budget for quiet moments left" (/ quiet-budget-ms 1000.))
(run-racket)
(print-summary)
(printf "# total ~,1f s, loadavg at the end ~a\n" (/ (- (now-ms) t-start) 1000.) (loadavg))
(exit 0)
