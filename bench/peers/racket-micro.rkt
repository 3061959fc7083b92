#lang racket/base
;; racket-micro.rkt -- Racket CS peer for `bin/spindle bench micro` (and the
;; scale suite).  Measures the same operations with Racket's own primitives and
;; prints one line per figure, `racket.NAME VALUE UNIT`, on stdout; anything
;; else goes to stderr.
;;
;;   racket.spawn-join            us  create a green thread running (void) and
;;                                    thread-wait it; time per iteration
;;   racket.yield-switch          ns  two threads each loop (sleep 0) N times;
;;                                    total time / 2N
;;   racket.channel-pingpong      us  round trip between two green threads over
;;                                    two make-channel channels
;;   racket.place-pingpong        us  round trip between the main place and a
;;                                    second place over a place channel (the
;;                                    cross-core case; Racket 8.7 has no
;;                                    parallel threads).  Place startup excluded.
;;   racket.sema-uncontended      ns  (semaphore-post s) (semaphore-wait s) pair
;;                                    on a semaphore no one else uses
;;   racket.million-threads       s   create 1e6 threads all blocked in
;;                                    (semaphore-wait s) on one shared
;;                                    semaphore, post it 1e6 times, thread-wait
;;                                    them all; first create to last wait
;;   racket.million-threads-rss   MB  VmRSS right after all threads were
;;                                    created (before release)
;;   racket.fib-seq               ms  (fib 32) twice, sequentially
;;   racket.fib-futures-speedup-2  x  fib-seq time / time for the two (fib 32)
;;                                    run in two futures and touched
;;   racket.fib-places-speedup-2   x  same with two places, place creation
;;                                    included
;;
;; Every figure gets a warmup run first; cheap ones report the best of 3 (fib:
;; best of 10).  Iteration counts are kept modest because million-threads
;; alone takes ~40 s in Racket 8.7 (mostly GC: every minor collection costs
;; time proportional to the number of live threads), and a full run has to
;; stay under a minute on 2 cores.
;; Places load this module's compiled code: before creating any place the
;; program compiles itself to a .zo under a cache directory in the system temp
;; dir (never next to the source), so place creation does not include
;; compiling this file from source in every new place.
;; `--quick` scales iteration counts down 10x (100000 threads instead of 1e6);
;; the figure names stay the same.
;;
;; Usage: racket bench/peers/racket-micro.rkt [--quick]

(require "racket-place-cache.rkt")
(require racket/place racket/future racket/fixnum racket/format racket/path
         racket/file)

;; Naive doubly recursive fib on fixnums.  Top level so that place bodies
;; (lifted into a submodule) can use it.
(define (fib n)
  (if (fx< n 2) n (fx+ (fib (fx- n 1)) (fib (fx- n 2)))))

;; Place that answers every message with the same value (ping-pong peer).
(define (start-echo-place)
  (place ch
    (let loop ()
      (define v (place-channel-get ch))
      (place-channel-put ch v)
      (unless (eq? v 'stop) (loop)))))

;; Place that computes (fib n) for the n it is sent and replies.
(define (start-fib-place)
  (place ch
    (place-channel-put ch (fib (place-channel-get ch)))))

(module+ main
  (define quick?
    (for/or ([a (in-vector (current-command-line-arguments))])
      (equal? a "--quick")))
  (define (scale n) (if quick? (quotient n 10) n))

  (define (now) (current-inexact-milliseconds))

  ;; Time a thunk in ms after a full GC.
  (define (time-ms thunk)
    (collect-garbage)
    (define t0 (now))
    (thunk)
    (- (now) t0))

  ;; One warmup, then the best of `runs` timings (ms).
  (define (best-ms thunk #:runs [runs 3])
    (thunk)
    (for/fold ([best +inf.0]) ([_ (in-range runs)])
      (min best (time-ms thunk))))

  ;; Up to 4 decimals for small values, fewer for big ones.
  (define (fmt v)
    (cond [(not (rational? v)) "nan"]
          [else (~r v #:precision (cond [(>= v 100) 1] [(>= v 1) 3] [else 4]))]))

  (define start-ms (now))
  (define (report name value unit)
    (printf "racket.~a ~a ~a\n" name (fmt value) unit)
    (flush-output)
    (eprintf "  [~a done at ~a s]\n" name (fmt (/ (- (now) start-ms) 1000.0))))

  (define (note fmt-string . args)
    (apply eprintf fmt-string args)
    (newline (current-error-port)))

  ;; Places created inside this parameterization load the cached .zo.
  (define place-roots
    (or (compiled-roots-for-places (variable-reference->module-source (#%variable-reference)) "racket-micro") (current-compiled-file-roots)))

  ;; ---- spawn-join --------------------------------------------------------
  (let* ([n (scale 100000)]
         [ms (best-ms (lambda ()
                        (for ([_ (in-range n)])
                          (thread-wait (thread (lambda () (void)))))))])
    (report "spawn-join" (/ (* ms 1000.0) n) "us"))

  ;; ---- yield-switch ------------------------------------------------------
  (let* ([n (scale 300000)]
         [ms (best-ms
              (lambda ()
                (define (yielder)
                  (thread (lambda ()
                            (for ([_ (in-range n)]) (sleep 0)))))
                (define a (yielder))
                (define b (yielder))
                (thread-wait a)
                (thread-wait b)))])
    (report "yield-switch" (/ (* ms 1e6) (* 2 n)) "ns"))

  ;; ---- channel-pingpong (green threads) ----------------------------------
  (let* ([n (scale 200000)]
         [ms (best-ms
              (lambda ()
                (define ch1 (make-channel))
                (define ch2 (make-channel))
                (define b (thread (lambda ()
                                    (for ([_ (in-range n)])
                                      (channel-put ch2 (channel-get ch1))))))
                (for ([i (in-range n)])
                  (channel-put ch1 i)
                  (channel-get ch2))
                (thread-wait b)))])
    (report "channel-pingpong" (/ (* ms 1000.0) n) "us"))

  ;; ---- place-pingpong (cross-core) ---------------------------------------
  ;; A round trip costs tens of us, so fewer iterations than the thread case.
  (let* ([n (scale 5000)]
         [p (parameterize ([current-compiled-file-roots place-roots])
              (start-echo-place))])
    ;; Make sure the place is up before timing.
    (place-channel-put p 0)
    (place-channel-get p)
    (define ms
      (best-ms (lambda ()
                 (for ([i (in-range n)])
                   (place-channel-put p i)
                   (place-channel-get p)))))
    (place-channel-put p 'stop)
    (place-channel-get p)
    (place-wait p)
    (report "place-pingpong" (/ (* ms 1000.0) n) "us"))

  ;; ---- sema-uncontended --------------------------------------------------
  (let* ([n (scale 10000000)]
         [s (make-semaphore 0)]
         [ms (best-ms (lambda ()
                        (for ([_ (in-range n)])
                          (semaphore-post s)
                          (semaphore-wait s))))])
    (report "sema-uncontended" (/ (* ms 1e6) n) "ns"))

  ;; ---- fib: sequential, futures, places ----------------------------------
  ;; Each fib run is ~10-20 ms, so take the best of 10 to ride out noise.
  (define fib-n 32)
  (define seq-ms
    (best-ms #:runs 10 (lambda () (fib fib-n) (fib fib-n))))
  (report "fib-seq" seq-ms "ms")

  (define fut-ms
    (best-ms #:runs 10
             (lambda ()
               (define a (future (lambda () (fib fib-n))))
               (define b (future (lambda () (fib fib-n))))
               (touch a)
               (touch b))))
  (report "fib-futures-speedup-2" (/ seq-ms fut-ms) "x")

  (define pl-ms
    (best-ms (lambda ()
               (parameterize ([current-compiled-file-roots place-roots])
                 (define a (start-fib-place))
                 (define b (start-fib-place))
                 (place-channel-put a fib-n)
                 (place-channel-put b fib-n)
                 (place-channel-get a)
                 (place-channel-get b)
                 (place-wait a)
                 (place-wait b)))))
  (note "fib: seq ~a ms, futures ~a ms, places ~a ms" seq-ms fut-ms pl-ms)
  (report "fib-places-speedup-2" (/ seq-ms pl-ms) "x")

  ;; ---- million-threads (scale) -------------------------------------------
  ;; Last, because it leaves a multi-GB heap behind.  GC time is reported on
  ;; stderr: in Racket 8.7 it is most of the total.

  ;; Read a /proc/self/status field, in kB.
  (define (proc-status-kb field)
    (with-handlers ([exn:fail? (lambda (e) #f)])
      (define rx (pregexp (string-append "^" field ":\\s*(\\d+)")))
      (call-with-input-file "/proc/self/status"
        (lambda (in)
          (for/or ([line (in-lines in)])
            (define m (regexp-match rx line))
            (and m (string->number (cadr m))))))))

  ;; Returns total seconds and VmRSS (kB) once all n threads are blocked.
  (define (million-threads n)
    (define s (make-semaphore 0))
    (define ths (make-vector n #f))
    (define gc0 (current-gc-milliseconds))
    (define t0 (now))
    (for ([i (in-range n)])
      (vector-set! ths i (thread (lambda () (semaphore-wait s)))))
    ;; Let every thread run up to its semaphore-wait before reading RSS.
    (sync (system-idle-evt))
    (define rss-kb (proc-status-kb "VmRSS"))
    (define t1 (now))
    (for ([_ (in-range n)]) (semaphore-post s))
    (for ([t (in-vector ths)]) (thread-wait t))
    (define t2 (now))
    (note "million-threads: ~a threads, create ~a ms, release ~a ms, GC ~a ms"
          n (round (- t1 t0)) (round (- t2 t1))
          (- (current-gc-milliseconds) gc0))
    (values (/ (- t2 t0) 1000.0) rss-kb))

  (let ([n (if quick? 100000 1000000)])
    (million-threads 10000)             ; warmup
    (collect-garbage)
    (define-values (secs rss-kb) (million-threads n))
    (note "million-threads: VmHWM ~a kB" (proc-status-kb "VmHWM"))
    (report "million-threads" secs "s")
    (report "million-threads-rss" (if rss-kb (/ rss-kb 1024.0) +nan.0) "MB")))
