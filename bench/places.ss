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
;;;   places.cg-barrier-npN    us    one CGBarrier in a fork-join group of N
;;;                                  members (N = 1, 2, 4; 4 is more than this
;;;                                  machine's cores when it has 2): mean over
;;;                                  20000 barriers (--quick 5000; np 4: a
;;;                                  tenth), timed in member 0 after 100
;;;                                  untimed ones; best of --runs groups
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
        (only (bench-places) cg-barrier-us)
        (bench-harness)
        (only (spindle private os processes) shell-command))

;; ---------------------------------------------------------------- arguments
(check-arguments! "places" '("--quick" "--no-peers") '("--runs")
  (lambda (port) (fprintf port "usage: spindle bench places [--quick] [--no-peers] [--runs K]\n")))
(define quick? (flag? "--quick"))
(define peers? (not (flag? "--no-peers")))
(define runs (positive-int "places" "--runs" (option "--runs" "3")))
(define strfib-runs (if (flag? "--runs") runs 5))

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
(define figures (make-hashtable equal-hash equal?)) ; name -> value
(define (report-figure name value unit)
  (hashtable-set! figures name value)
  (report (string-append "places." name) value unit))

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
    (report-figure "create-first" (- (now-ms) t0) "ms")
    (stop! p))
  (let loop ([i 0] [times '()])
    (if (= i n-create)
        (begin
          (report-figure "create" (/ (apply + times) n-create) "ms")
          (report-figure "create-min" (apply min times) "ms"))
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
    (report-figure "roundtrip-small"
            (best-of runs
              (lambda ()
                (let ([t0 (now-ms)])
                  (do ([i 0 (fx+ i 1)]) ((fx= i n-roundtrip))
                    (unless (eqv? (place-channel-put/get p i) i) (errorf 'places "echo mismatch")))
                  (/ (* 1000. (- (now-ms) t0)) n-roundtrip))))
            "us")
    (stop! p)))

;; ---------------------------------------------------------------- barriers
(define n-barrier (if quick? 5000 20000))

(define (bench-cg-barrier)
  (for-each
    (lambda (np)
      (report-figure (format "cg-barrier-np~a" np)
                     (cg-barrier-us np (if (> np 2) (quotient n-barrier 10) n-barrier) runs)
                     "us"))
    '(1 2 4)))

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
      (report-figure "throughput-1mb" (- (best-of runs (lambda () (- (send-mb n-mb))))) "MB/s"))
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
  (report-figure "throughput-1mb-pipe" (- (best-of runs (lambda () (- (pipe-run n-mb))))) "MB/s"))

(define (bench-memcpy)
  (let ([dst (make-bytevector mib 0)])
    (bytevector-copy! payload 0 dst 0 mib)
    (report-figure "memcpy-1mb"
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
(define quiet (make-quiet (if quick? 30000. 120000.)))

;; ---------------------------------------------------------------- strfib
(define (bench-strfib)
  ;; Each run starts two fresh places (outside the clock, but inside the
  ;; with-start figure), times (strfib K) in both at once, then again in
  ;; the same, now warm, places.
  (let* ([expected (strfib strfib-k)]   ; warmup and checksum
         [seq (best-of strfib-runs
                (lambda ()
                  (timed/quiet quiet
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
                      (timed/quiet quiet
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
    (report-figure "strfib-seq" seq "ms")
    (report-figure "strfib-par" par "ms")
    (report-figure "strfib-speedup-2" (/ seq par) "x")
    (report-figure "strfib-speedup-2-with-start" (/ seq par-start) "x")
    (report-figure "strfib-speedup-2-warm" (/ seq par-warm) "x")
    (note "strfib ~a, per run (fresh places, then warm): CPU ms of each place / its collector ms:~a" strfib-k
          (apply string-append
                 (map (lambda (l) (format " ~a+~a/~a+~a" (format-figure (car l)) (format-figure (cadr l)) (format-figure (caddr l)) (format-figure (cadddr l))))
                      (reverse place-cpu))))))

;; ---------------------------------------------------------------- peers
(define (string-prefix? p s)
  (and (<= (string-length p) (string-length s)) (string=? p (substring s 0 (string-length p)))))

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
             (let ([ws (split-string line #\space #\tab)])
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
    ("cg-barrier-np2" "us" #f #t)
    ("strfib-speedup-2" "x" (>= . 1.9) #f)
    ("strfib-speedup-2-with-start" "x" #f #f)
    ("strfib-speedup-2-warm" "x" #f #f)))

(define (print-summary)
  (when (fig "racket-create")
    (for-each
      (lambda (s)
        (let ([a (fig (car s))] [b (fig (string-append "racket-" (car s)))])
          (when (and a b (> b 0))
            (report-figure (string-append "ratio-" (car s)) (/ a b) "x"))))
      summary))
  ;; issue 12's target: at least Racket's (its places share one address space)
  (let ([a (fig "throughput-1mb")] [b (fig "racket-throughput-1mb")])
    (when (and a b (> b 0)) (report-figure "throughput-vs-racket" (/ a b) "x")))
  (printf "\n| figure | spindle | Racket 8.7 | spindle/Racket | target | met? |\n")
  (printf "|---|---:|---:|---:|---:|---|\n")
  (for-each
    (lambda (s)
      (let* ([name (car s)] [unit (cadr s)] [target (caddr s)]
             [a (fig name)] [b (fig (string-append "racket-" name))])
        (printf "| ~a | ~a | ~a | ~a | ~a | ~a |\n" name
                (if a (format "~a ~a" (format-figure a) unit) "-")
                (if b (format "~a ~a" (format-figure b) unit) "-")
                (if (and a b (> b 0)) (format "~a" (format-figure (/ a b))) "-")
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
  (for-each (lambda (bench) (wait-for-quiet! quiet) (bench))
            (list bench-create bench-roundtrip bench-throughput bench-pipe bench-memcpy bench-cg-barrier
                  bench-strfib)))
(kill-all!)
(when (> (quiet-retimed quiet) 0)
  (note "~a strfib timing(s) taken again because other processes took over a quarter of the machine" (quiet-retimed quiet)))
(note "~,1f s of the waiting budget for quiet moments left" (/ (- (if quick? 30000. 120000.) (quiet-waited-ms quiet)) 1000.))
(run-racket)
(print-summary)
(printf "# total ~,1f s, loadavg at the end ~a\n" (/ (- (now-ms) t-start) 1000.) (loadavg))
(exit 0)
