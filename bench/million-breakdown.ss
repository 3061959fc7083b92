;;; Where million-threads' time goes: N (default 10^6) coroutine threads
;;; parked on one semaphore, then released and waited for, with the
;;; collector's share of each phase, bytes allocated per thread and RSS.
;;; bin/spindle run bench/million-breakdown.ss   (N=100000 for a short run;
;;; SPINDLE_GCDEBUG=1 prints each collection's generation and time)
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
(define (rss-mb)
  (let ([p (open-input-file "/proc/self/status")])
    (let loop ()
      (let ([line (get-line p)])
        (cond [(eof-object? line) (close-port p) 0]
              [(and (> (string-length line) 6) (string=? (substring line 0 6) "VmRSS:"))
               (close-port p) (quotient (string->number (list->string (filter char-numeric? (string->list line)))) 1024)]
              [else (loop)])))))
(define n (string->number (or (getenv "N") "1000000")))
(collect-rendezvous)
(let* ([s0 (statistics)] [t0 (real-time)] [s (make-semaphore 0)]
       [ts (let loop ([i 0] [acc '()])
             (if (fx= i n) acc (loop (fx+ i 1) (cons (thread (lambda () (semaphore-wait s))) acc))))])
  (yield)
  (let* ([rss (rss-mb)] [t1 (real-time)] [s1 (statistics)])
    (do ([i 0 (fx+ i 1)]) ((fx= i n)) (semaphore-post s))
    (for-each thread-wait ts)
    (let ([s2 (statistics)] [t2 (real-time)])
      (define (gc a b) (let ([d (time-difference (sstats-gc-real b) (sstats-gc-real a))]) (+ (* 1000 (time-second d)) (quotient (time-nanosecond d) 1000000))))
      (printf "total ~a ms; spawn+park ~a ms (gc ~a, ~a colls, ~a B/thread alloc); release ~a ms (gc ~a, ~a B/thread alloc); rss ~a MB\n"
              (- t2 t0) (- t1 t0) (gc s0 s1) (- (sstats-gc-count s1) (sstats-gc-count s0))
              (quotient (- (sstats-bytes s1) (sstats-bytes s0)) n)
              (- t2 t1) (gc s1 s2) (quotient (- (sstats-bytes s2) (sstats-bytes s1)) n) rss))))
