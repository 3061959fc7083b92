#!chezscheme
;;; bin/spindle bench [--quick] [--peers] [SUITE ...]
;;; Prints one line per figure: SUITE.NAME VALUE UNIT.  Suites: micro, scale,
;;; sharing (concurrent hashtables and synchronized ports; not run by default).
;;; Each spindle figure sits beside the raw Chez primitive it builds on
;;; (raw.*) and, with --peers, Racket 8.7's figures from the same run.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle)
        (bench-harness)
        (only (spindle private os processes) shell-command))

(check-arguments! "bench" '("--quick" "--peers" "micro" "scale" "sharing") '()
  (lambda (port) (fprintf port "usage: spindle bench [--quick] [--peers] [micro] [scale] [sharing]\n")))
(define quick? (flag? "--quick"))
(define peers? (flag? "--peers"))
(define suites
  (let ([s (filter (lambda (a) (not (and (> (string-length a) 1) (string=? (substring a 0 2) "--")))) bench-args)])
    (if (null? s) '("micro" "scale") s)))

(define (scaled n) (if quick? (max 1 (quotient n 10)) n))

;; ---------------------------------------------------------------- micro
(define (bench-spawn-join)
  (let ([n (scaled 200000)])
    (report "micro.spawn-join"
            (/ (best-ns 3 (lambda () (do ([i 0 (fx+ i 1)]) ((fx= i n)) (thread-wait (thread void))))) n 1000.)
            "us")))

(define (bench-yield-switch)
  (let* ([n (scaled 1000000)]
         [ns (best-ns 3
               (lambda ()
                 (let* ([go (lambda () (do ([i 0 (fx+ i 1)]) ((fx= i n)) (yield)))]
                        [a (thread go)] [b (thread go)])
                   (thread-wait a) (thread-wait b))))])
    (report "micro.yield-switch" (/ ns (* 2 n)) "ns")))

(define (pingpong n pool-a pool-b)
  (let* ([ping (make-channel)] [pong (make-channel)]
         [server (thread (lambda () (do ([i 0 (fx+ i 1)]) ((fx= i n)) (channel-put pong (channel-get ping))))
                         pool-b)]
         [client (thread (lambda () (do ([i 0 (fx+ i 1)]) ((fx= i n)) (channel-put ping i) (channel-get pong)))
                         pool-a)])
    (thread-wait client)
    (thread-wait server)))

(define (bench-channel-pingpong)
  (let ([n (scaled 200000)])
    (report "micro.channel-pingpong" (/ (best-ns 3 (lambda () (pingpong n #f #f))) n 1000.) "us")))

(define (bench-channel-pingpong-cross)
  (let* ([n (scaled 20000)] [pa (make-parallel-thread-pool 1)] [pb (make-parallel-thread-pool 1)])
    (report "micro.channel-pingpong-cross" (/ (best-ns 3 (lambda () (pingpong n pa pb))) n 1000.) "us")
    (parallel-thread-pool-close pa)
    (parallel-thread-pool-close pb)))

;; Raw Chez: two OS threads, mutex + condition variable hand-off.
(define (bench-raw-pingpong)
  (let* ([n (scaled 20000)] [m (make-mutex)] [c (make-condition)] [turn 0] [done (make-condition)] [finished #f])
    (report "raw.os-thread-pingpong"
            (/ (best-ns 3
                 (lambda ()
                   (set! turn 0) (set! finished #f)
                   (fork-thread
                     (lambda ()
                       (with-mutex m
                         (do ([i 0 (fx+ i 1)]) ((fx= i n))
                           (let wait () (unless (= turn 1) (condition-wait c m) (wait)))
                           (set! turn 0) (condition-broadcast c))
                         (set! finished #t) (condition-broadcast done))))
                   (with-mutex m
                     (do ([i 0 (fx+ i 1)]) ((fx= i n))
                       (set! turn 1) (condition-broadcast c)
                       (let wait () (unless (= turn 0) (condition-wait c m) (wait))))
                     (let wait () (unless finished (condition-wait done m) (wait))))))
               n 1000.)
            "us")))

(define (bench-sema-uncontended)
  (let* ([n (scaled 10000000)] [s (make-semaphore 0)])
    (report "micro.sema-uncontended"
            (/ (best-ns 3 (lambda () (do ([i 0 (fx+ i 1)]) ((fx= i n)) (semaphore-post s) (semaphore-wait s)))) n)
            "ns")
    (let ([m (make-mutex)])
      (report "raw.mutex-uncontended"
              (/ (best-ns 3 (lambda () (do ([i 0 (fx+ i 1)]) ((fx= i n)) (mutex-acquire m) (mutex-release m)))) n)
              "ns"))))

(define (bench-raw-fork-join)
  (let* ([n (scaled 2000)] [m (make-mutex)] [c (make-condition)])
    (report "raw.fork-thread-join"
            (/ (best-ns 3
                 (lambda ()
                   (do ([i 0 (fx+ i 1)]) ((fx= i n))
                     (let ([done #f])
                       (fork-thread (lambda () (with-mutex m (set! done #t) (condition-broadcast c))))
                       (with-mutex m (let wait () (unless done (condition-wait c m) (wait))))))))
               n 1000.)
            "us")))

(define (rss-mb)
  (let ([p (open-input-file "/proc/self/status")])
    (let loop ()
      (let ([line (get-line p)])
        (cond
          [(eof-object? line) (close-port p) 0]
          [(and (> (string-length line) 6) (string=? (substring line 0 6) "VmRSS:"))
           (close-port p)
           (/ (string->number (car (cdr (split-string line #\space #\tab))))
              1024.)]
          [else (loop)])))))

(define (million-threads suffix)
  (collect-rendezvous)   ; (collect) refuses while idle workers exist
  (let* ([n (if quick? 100000 1000000)] [s (make-semaphore 0)] [t0 (now-ns)]
         [ts (let loop ([i 0] [acc '()])
               (if (fx= i n) acc (loop (fx+ i 1) (cons (thread (lambda () (semaphore-wait s))) acc))))])
    (yield)   ; let them all block
    (let ([rss (rss-mb)])
      (do ([i 0 (fx+ i 1)]) ((fx= i n)) (semaphore-post s))
      (for-each thread-wait ts)
      (report (string-append "micro.million-threads" suffix) (/ (- (now-ns) t0) 1e9) "s")
      (report (string-append "micro.million-threads-rss" suffix) rss "MB"))))

;; Chez 9.5.8's default collector settings, then with older generations
;; collected 250 times less often (parked threads are long-lived, and
;; every generation they pass through copies them again).
(define (bench-million-threads)
  (million-threads "")
  (let ([radix (collect-generation-radix)])
    (collect-generation-radix 1000)
    (million-threads "-radix1000")
    (collect-generation-radix radix)))

;; ---------------------------------------------------------------- scale
(define (fib n) (if (fx< n 2) n (fx+ (fib (fx- n 1)) (fib (fx- n 2)))))

(define (raw-parallel2 thunk)
  (let ([m (make-mutex)] [c (make-condition)] [left 2])
    (do ([i 0 (fx+ i 1)]) ((fx= i 2))
      (fork-thread (lambda () (thunk) (with-mutex m (set! left (- left 1)) (condition-broadcast c)))))
    (with-mutex m (let wait () (unless (= left 0) (condition-wait c m) (wait))))))

(define (bench-scale)
  (let* ([k (if quick? 27 32)]
         [work (lambda () (fib k))]
         [runs 5]
         [seq (best-ns runs (lambda () (work) (work)))]
         [par (best-ns runs (lambda ()
                              (let ([a (thread work #:pool 'own)] [b (thread work #:pool 'own)])
                                (thread-wait a) (thread-wait b))))]
         [raw (best-ns runs (lambda () (raw-parallel2 work)))]
         [plain (best-ns runs work)]
         [in-thread (best-ns runs (lambda () (thread-wait (thread work))))])
    (report "scale.fib-seq" (/ seq 1e6) "ms")
    (report "scale.fib-speedup-2" (/ seq par) "x")
    (report "raw.fib-speedup-2" (/ seq raw) "x")
    (report "scale.fib-vs-raw" (/ (/ seq par) (/ seq raw)) "ratio")
    (report "scale.seq-overhead" (/ in-thread plain) "ratio")))

;; ---------------------------------------------------------------- sharing
;; Concurrent hashtable against a plain Chez hashtable and against a Chez
;; hashtable under one mutex (held, as spindle requires of Chez mutexes,
;; with interrupts disabled), on 1000 fixnum keys; then two parallel threads
;; doing 90% reads on one table against one thread doing the same work.
(define table-keys 1000)

(define (fill! set) (do ([i 0 (fx+ i 1)]) ((fx= i table-keys)) (set i i)))

(define (ops-ns n op)
  (/ (best-ns 3 (lambda () (do ([i 0 (fx+ i 1)]) ((fx= i n)) (op (fxremainder i table-keys))))) n))

(define (bench-table-ops)
  (let* ([n (scaled 5000000)] [ct (make-concurrent-eqv-hashtable)] [h (make-eqv-hashtable)]
         [hm (make-eqv-hashtable)] [m (make-mutex)]
         [locked (lambda (thunk) (disable-interrupts) (mutex-acquire m)
                   (let ([v (thunk)]) (mutex-release m) (enable-interrupts) v))])
    (fill! (lambda (k v) (concurrent-hashtable-set! ct k v)))
    (fill! (lambda (k v) (hashtable-set! h k v)))
    (fill! (lambda (k v) (hashtable-set! hm k v)))
    (report "sharing.table-ref" (ops-ns n (lambda (k) (concurrent-hashtable-ref ct k #f))) "ns")
    (report "raw.hashtable-ref" (ops-ns n (lambda (k) (hashtable-ref h k #f))) "ns")
    (report "raw.hashtable-ref-mutex" (ops-ns n (lambda (k) (locked (lambda () (hashtable-ref hm k #f))))) "ns")
    (report "sharing.table-set" (ops-ns n (lambda (k) (concurrent-hashtable-set! ct k k))) "ns")
    (report "raw.hashtable-set" (ops-ns n (lambda (k) (hashtable-set! h k k))) "ns")
    (report "raw.hashtable-set-mutex" (ops-ns n (lambda (k) (locked (lambda () (hashtable-set! hm k k))))) "ns")
    (report "sharing.table-update" (ops-ns n (lambda (k) (concurrent-hashtable-update! ct k fx1+ 0))) "ns")
    (report "raw.hashtable-update" (ops-ns n (lambda (k) (hashtable-update! h k fx1+ 0))) "ns")
    (report "raw.hashtable-update-mutex" (ops-ns n (lambda (k) (locked (lambda () (hashtable-update! hm k fx1+ 0))))) "ns")))

;; k operations, one in ten a set!, on keys from a per-thread xorshift.
(define (read90 k ref set)
  (lambda ()
    (let loop ([i 0] [x 88172645])
      (unless (fx= i k)
        (let* ([x (fxlogand (fxxor x (fxsll x 13)) #xFFFFFFFF)] [x (fxxor x (fxsrl x 17))]
               [x (fxlogand (fxxor x (fxsll x 5)) #xFFFFFFFF)] [key (fxremainder x table-keys)])
          (if (fx= 0 (fxremainder i 10)) (set key i) (ref key))
          (loop (fx+ i 1) x))))))

(define (speedup-2 ref set)
  (let* ([k (scaled 2000000)]
         [one (best-ns 3 (lambda () (thread-wait (thread (read90 (* 2 k) ref set) #:pool 'own))))]
         [two (best-ns 3 (lambda ()
                           (let ([a (thread (read90 k ref set) #:pool 'own)] [b (thread (read90 k ref set) #:pool 'own)])
                             (thread-wait a) (thread-wait b))))])
    (/ one two)))

(define (bench-table-speedup)
  (let ([ct (make-concurrent-eqv-hashtable)] [hm (make-eqv-hashtable)] [m (make-mutex)] [h (make-eqv-hashtable)])
    ;; the control: the same loop on a plain table, reads only (no sharing
    ;; problem); below 1.8 the machine was not free for two threads
    (fill! (lambda (k v) (hashtable-set! h k v)))
    (report "raw.hashtable-read-only-speedup-2"
            (speedup-2 (lambda (k) (hashtable-ref h k #f)) (lambda (k v) (hashtable-ref h k #f)))
            "x")
    ;; the cost of the sharing itself: the same 10% writes to a plain vector,
    ;; no lock (each write takes the cache line from the other core)
    (let ([v (make-vector table-keys 0)])
      (report "raw.vector-read90-speedup-2"
              (speedup-2 (lambda (k) (vector-ref v k)) (lambda (k x) (vector-set! v k x)))
              "x"))
    (fill! (lambda (k v) (concurrent-hashtable-set! ct k v)))
    (fill! (lambda (k v) (hashtable-set! hm k v)))
    (report "sharing.table-read90-speedup-2"
            (speedup-2 (lambda (k) (concurrent-hashtable-ref ct k #f)) (lambda (k v) (concurrent-hashtable-set! ct k v)))
            "x")
    (report "raw.hashtable-mutex-read90-speedup-2"
            (speedup-2 (lambda (k) (with-interrupts-disabled (with-mutex m (hashtable-ref hm k #f))))
                       (lambda (k v) (with-interrupts-disabled (with-mutex m (hashtable-set! hm k v)))))
            "x")))

;; The printing loops of bench/print-loop.ss, each in a fresh process with
;; stdout on /dev/null: Chez's console port, then spindle's.
(define (bench-print)
  (let* ([n (scaled 1000000)] [here (path-parent (car (command-line)))]
         [run (lambda (mode)
                (let ([out (format "/tmp/spindle-print-loop-~a-~a" mode (random 1000000000))])
                  (unless (zero? (shell-command
                                   (format "scheme --libdirs '~a' --program ~a/print-loop.ss ~a ~a ~a > /dev/null"
                                           (library-path) here mode n out)))
                    (error 'bench-print "print-loop failed" mode))
                  (let ([r (call-with-input-file out
                             (lambda (p) (let loop ([acc '()])
                                           (let ([name (read p)])
                                             (if (eof-object? name) (reverse acc) (loop (cons (cons name (read p)) acc)))))))])
                    (delete-file out)
                    r)))]
         [chez (run 'chez)] [spindle (run 'spindle)] [custom (run 'custom)])
    (for-each
      (lambda (c s u)
        (report (format "raw.console-~a" (car c)) (cdr c) "ns")
        (report (format "sharing.console-~a" (car s)) (cdr s) "ns")
        (report (format "sharing.console-~a-vs-chez" (car s)) (/ (cdr s) (cdr c)) "ratio")
        (report (format "sharing.r6rs-custom-port-~a" (car u)) (cdr u) "ns"))
      chez spindle custom)))

;; The --libdirs this program was started with (lib and its cache).
(define (library-path)
  (fold-left (lambda (acc d) (if (string=? acc "") (car d) (string-append acc ":" (car d))))
             "" (library-directories)))

;; ---------------------------------------------------------------- peers
(define (run-peers)
  (when peers?
    (if (zero? (shell-command "command -v racket >/dev/null 2>&1"))
        (shell-command (format "racket ~a/peers/racket-micro.rkt~a 2>/dev/null"
                        (path-parent (car (command-line))) (if quick? " --quick" "")))
        (printf "# racket not found: peer figures skipped\n"))))

(printf "# spindle bench ~a, ~a, ~a processors~a\n" suites (date-and-time) (processor-count)
        (if quick? ", --quick" ""))
(for-each
  (lambda (suite)
    (cond
      [(string=? suite "micro")
       (bench-spawn-join) (bench-yield-switch) (bench-channel-pingpong)
       (bench-channel-pingpong-cross) (bench-raw-pingpong) (bench-sema-uncontended)
       (bench-raw-fork-join) (bench-million-threads)]
      [(string=? suite "scale") (bench-scale)]
      [(string=? suite "sharing") (bench-table-ops) (bench-table-speedup) (bench-print)]
      [else (printf "# unknown suite ~a\n" suite)]))
  suites)
(run-peers)
(exit 0)
