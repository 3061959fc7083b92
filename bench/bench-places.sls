#!chezscheme
;;; bench/bench-places.sls -- start procedures of the places that
;;; bench/places.ss, bench/threads.ss (mode places) and bench/executors.ss
;;; (the sum table) start with (dynamic-place '(bench-places) 'NAME).
;;; Each one first sends 'ready, so that the creator can time a place's
;;; start up to its first message, and returns (the place exits 0) on 'stop.
(library (bench-places)
  (export echo sink worker start-workers stop-places cg-barrier-us)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (only (spindle) place-channel-put place-channel-get dynamic-place place-wait)
          (only (spindle fork-join) fork-join lift-places CGBarrier)
          (bench-workloads))

  ;; In the creating program: n worker places, each past its 'ready.
  (define (start-workers who n)
    (let ([ps (map (lambda (i) (dynamic-place '(bench-places) 'worker)) (iota n))])
      (for-each (lambda (p)
                  (let ([m (place-channel-get p)])
                    (unless (eq? m 'ready) (error who "unexpected first message from a place" m))))
                ps)
      ps))

  ;; Stops the places and waits for them; each must end with 0.
  (define (stop-places who ps)
    (for-each (lambda (p) (place-channel-put p 'stop)) ps)
    (for-each (lambda (p)
                (let ([code (place-wait p)])
                  (unless (eqv? code 0) (error who "a place ended with" code))))
              ps))

  ;; Replies to every message with the message itself.
  (define (echo ch)
    (place-channel-put ch 'ready)
    (let loop ()
      (let ([m (place-channel-get ch)])
        (unless (eq? m 'stop)
          (place-channel-put ch m)
          (loop)))))

  ;; Counts the bytes of the bytevectors it receives; 'done: replies with the
  ;; count (and starts again from 0).
  (define (sink ch)
    (place-channel-put ch 'ready)
    (let loop ([bytes 0])
      (let ([m (place-channel-get ch)])
        (cond
          [(bytevector? m) (loop (+ bytes (bytevector-length m)))]
          [(eq? m 'done) (place-channel-put ch bytes) (loop 0)]
          [(eq? m 'stop) (void)]
          [else (loop bytes)]))))

  (define (tms t) (+ (* 1000. (time-second t)) (/ (time-nanosecond t) 1e6)))

  ;; #(NAME (ARG ...)): runs workload NAME of (bench-workloads) on the
  ;; arguments and replies #(RESULT CPU-MS GC-MS), the CPU time of this
  ;; process and its collector's real time during the run.  'ping: 'pong.
  (define (worker ch)
    (place-channel-put ch 'ready)
    (let loop ()
      (let ([m (place-channel-get ch)])
        (cond
          [(eq? m 'stop) (void)]
          [(eq? m 'ping) (place-channel-put ch 'pong) (loop)]
          [else
           (let* ([proc (workload-procedure (vector-ref m 0))]
                  [c0 (tms (current-time 'time-process))]
                  [g0 (tms (current-time 'time-collector-real))]
                  [v (apply proc (vector-ref m 1))]
                  [g1 (tms (current-time 'time-collector-real))]
                  [c1 (tms (current-time 'time-process))])
             (place-channel-put ch (vector v (- c1 c0) (- g1 g0)))
             (loop))]))))

  ;; Microseconds per CGBarrier in a group of np members: n barriers after
  ;; 100 unclocked ones, timed by member 0 (the group is started before the
  ;; clock).  The best of `runs` groups.
  (define (cg-barrier-us np n runs)
    (let loop ([r 0] [best #f])
      (if (= r runs)
          best
          (let ([us (vector-ref
                      (fork-join np cg ([n n])
                        (do ([i 0 (fx+ i 1)]) ((fx= i 100)) (CGBarrier cg))
                        (let ([t0 (current-time 'time-monotonic)])
                          (do ([i 0 (fx+ i 1)]) ((fx= i n)) (CGBarrier cg))
                          (let ([d (time-difference (current-time 'time-monotonic) t0)])
                            (/ (+ (* 1e6 (time-second d)) (/ (time-nanosecond d) 1e3)) n))))
                      0)])
            (loop (+ r 1) (if best (min best us) us))))))

  (lift-places (bench-places)))
