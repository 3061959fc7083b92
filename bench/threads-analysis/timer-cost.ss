#!chezscheme
;; timer-cost.ss -- spindle: what the preemption timer costs the Racket-v9
;; suite's workloads.  One unit each in a raw fork-thread, in a spindle
;; thread (#:pool 'own, the suite's parallel mode), in a spindle thread that
;; turns the timer off first, and in one that arms it with an empty handler
;; (Chez's cost alone, not spindle's checks); THREADS of each (default 1);
;; ROUNDS rounds (default 15) alternate the four, order rotated; prints each
;; variant's time over raw's in the same round: median (quartiles).
;;   SPINDLE_LIBDIRS=bench bin/spindle run bench/threads-analysis/timer-cost.ss
;;   THREADS=2 SCHEME=/root/.cache/spindle/chez-10.0.0/bin/scheme SPINDLE_LIBDIRS=bench bin/spindle run bench/threads-analysis/timer-cost.ss
(import (except (chezscheme) thread? sleep make-parameter parameterize)
        (spindle) (bench-workloads))
(define n (string->number (or (getenv "THREADS") "1")))
(define rounds (string->number (or (getenv "ROUNDS") "15")))
(define (raw work)
  (let ([m (make-mutex)] [c (make-condition)] [left n])
    (do ([i 0 (+ i 1)]) ((= i n))
      (fork-thread (lambda () (work) (with-mutex m (set! left (- left 1)) (condition-broadcast c)))))
    (with-mutex m (let wait () (unless (= left 0) (condition-wait c m) (wait))))))
(define (par work)
  (for-each thread-wait (map (lambda (i) (thread work #:pool 'own)) (iota n))))
(define (par-no-timer work) (par (lambda () (set-timer 0) (work))))
(define (par-empty-handler work)
  (par (lambda () (timer-interrupt-handler (lambda () (set-timer 10000))) (set-timer 10000) (work))))
(define (ms f) (let ([t0 (current-time 'time-monotonic)]) (f)
  (let ([d (time-difference (current-time 'time-monotonic) t0)]) (+ (* 1e3 (time-second d)) (/ (time-nanosecond d) 1e6)))))
(define (q l p) (let ([s (list-sort < l)]) (list-ref s (min (- (length s) 1) (exact (floor (* p (length s))))))))
(define (show l) (format "~,3f (~,3f-~,3f)" (q l .5) (q l .25) (q l .75)))
(printf "# ~a thread(s), ~a rounds; ratio = time / raw time in the same round: median (quartiles)\n" n rounds)
(for-each
  (lambda (spec)
    (let ([work (cadr spec)])
      (let loop ([r 0] [p '()] [pn '()] [pe '()] [base '()])
        (if (= r rounds)
            (printf "~a: raw ~,1f ms; parallel ~a; timer off ~a; armed, empty handler ~a\n" (car spec) (q base .5) (show p) (show pn) (show pe))
            (let* ([order (list-tail '(0 1 2 3 0 1 2) (mod r 4))]
                   [times (map (lambda (k) (cons (list-ref order k)
                                                 (ms (lambda () ((vector-ref (vector raw par par-no-timer par-empty-handler) (list-ref order k)) work)))))
                               '(0 1 2 3))]
                   [t (lambda (k) (cdr (assv k times)))])
              (loop (+ r 1) (cons (/ (t 1) (t 0)) p) (cons (/ (t 2) (t 0)) pn) (cons (/ (t 3) (t 0)) pe) (cons (t 0) base)))))))
  (list (list "fib 36" (lambda () (fib 36)))
        (list "strfib* 27" (lambda () (strfib* 27)))
        (list "strfib 27" (lambda () (strfib 27)))
        (list "hash-nums 5" (lambda () (hash-nums 5)))
        (list "hash-digs 600000" (lambda () (hash-digs 600000)))))
