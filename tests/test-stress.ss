#!chezscheme
;;; Stress tests: many producers and consumers spread over the coroutine
;;; pool, parallel pools and 'own threads.  Every test checks that each
;;; message is received exactly once and that nothing deadlocks (the
;;; harness watchdog bounds each test).
(import (except (chezscheme) thread? sleep make-parameter parameterize)
        (spindle) (harness)
        (only (spindle private os processes) shell-command))

;; ---------------------------------------------------------------- setup
(define pool-a (make-parallel-thread-pool 2))
(define pool-b (make-parallel-thread-pool 2))
(define pool-c (make-parallel-thread-pool 2))

;; Thread i goes to the coroutine pool, one of the parallel pools, or its own.
(define placements (vector #f pool-a pool-b 'own pool-c))

(define (spawn i thunk)
  (thread thunk #:pool (vector-ref placements (mod i (vector-length placements))) #:keep 'results))

;; Like spawn, never 'own (for tests that start thousands of threads).
(define shared-placements (vector #f pool-a pool-b pool-c))
(define (spawn-shared i thunk)
  (thread thunk #:pool (vector-ref shared-placements (mod i (vector-length shared-placements)))
          #:keep 'results))

(define (wait-all ts) (map (lambda (t) (thread-wait t)) ts))

(define (iota-from n f) (let loop ([i (- n 1)] [acc '()]) (if (< i 0) acc (loop (- i 1) (cons (f i) acc)))))

;; Each of the values 0 .. n-1 must occur exactly once in the lists.
(define (check-exactly-once what n lists)
  (let ([counts (make-vector n 0)] [bad '()])
    (for-each
      (lambda (l)
        (for-each
          (lambda (v)
            (if (and (fixnum? v) (fx<= 0 v) (fx< v n))
                (vector-set! counts v (fx+ 1 (vector-ref counts v)))
                (set! bad (cons v bad))))
          l))
      lists)
    (let loop ([i 0] [missing '()] [dups '()])
      (if (fx= i n)
          (unless (and (null? missing) (null? dups) (null? bad))
            (error 'check-exactly-once what
                   'missing (length missing) (list-head missing (min 10 (length missing)))
                   'duplicated (length dups) (list-head dups (min 10 (length dups)))
                   'foreign (list-head bad (min 10 (length bad)))))
          (let ([c (vector-ref counts i)])
            (loop (fx+ i 1)
                  (if (fx= c 0) (cons i missing) missing)
                  (if (fx> c 1) (cons i dups) dups)))))))

;; Atomic counter in a box.
(define (box-add! b k)
  (let loop () (let ([n (unbox b)]) (unless (box-cas! b n (+ n k)) (loop)))))

;; Small per-thread PRNG (xorshift), so tests never share a generator.
(define (make-rng seed)
  (let ([x (+ 1 (mod (* seed 2654435761) 4294967291))])
    (lambda (n)
      (set! x (fxlogand (fxxor x (fxsll x 13)) #xFFFFFFFF))
      (set! x (fxxor x (fxsrl x 17)))
      (set! x (fxlogand (fxxor x (fxsll x 5)) #xFFFFFFFF))
      (mod x n))))

(define (timed name thunk)
  (let ([t0 (current-inexact-monotonic-milliseconds)])
    (thunk)
    (printf "  ~a: ~a ms\n" name (round (- (current-inexact-monotonic-milliseconds) t0)))))

;; STRESS_ONLY=substring runs only the tests whose name contains it.
(define stress-only (getenv "STRESS_ONLY"))
(define (selected? name)
  (or (not stress-only)
      (let ([n (string-length name)] [k (string-length stress-only)])
        (let loop ([i 0]) (and (<= (+ i k) n) (or (string=? stress-only (substring name i (+ i k))) (loop (+ i 1))))))))

(define-syntax stress
  (syntax-rules ()
    [(_ name body ...) (when (selected? name) (test name (timed name (lambda () body ...))))]))

;; Consumers receive with get until they see 'stop.
(define (drain get)
  (let loop ([acc '()])
    (let ([v (get)]) (if (eq? v 'stop) acc (loop (cons v acc))))))

;; STRESS_SCALE=k multiplies the message counts (default 1).
(define scale
  (let ([s (getenv "STRESS_SCALE")])
    (or (and s (let ([n (string->number s)]) (and n (> n 0) n))) 1)))
(define (sc n) (max 1 (exact (round (* n scale)))))

;; ---------------------------------------------------------------- (a) channels
(stress "synchronous channel: 8 producers, 6 consumers, 4 placements"
  (let* ([ch (make-channel)] [np 8] [nc 6] [m (sc 20000)] [n (* np m)]
         [consumers (iota-from nc (lambda (i) (spawn (+ i 1) (lambda () (drain (lambda () (channel-get ch)))))))]
         [producers (iota-from np (lambda (p)
                                    (spawn p (lambda ()
                                               (do ([k 0 (+ k 1)]) ((= k m))
                                                 (channel-put ch (+ (* p m) k)))))))])
    (wait-all producers)
    (do ([i 0 (+ i 1)]) ((= i nc)) (channel-put ch 'stop))
    (check-exactly-once "channel" n (wait-all consumers))))

(stress "synchronous channels: put-evt/get choices on both sides"
  ;; producers sync on a choice of put evts on 3 channels; consumers on a
  ;; choice of the 3 channels
  (let* ([chs (vector (make-channel) (make-channel) (make-channel))]
         [np 6] [nc 6] [m (sc 15000)] [n (* np m)]
         [any-get (apply choice-evt (vector->list chs))]
         [consumers (iota-from nc (lambda (i) (spawn (+ i 2) (lambda () (drain (lambda () (sync any-get)))))))]
         [producers (iota-from np (lambda (p)
                                    (spawn p (lambda ()
                                               (do ([k 0 (+ k 1)]) ((= k m))
                                                 (let ([v (+ (* p m) k)])
                                                   (sync (channel-put-evt (vector-ref chs 0) v)
                                                         (channel-put-evt (vector-ref chs 1) v)
                                                         (channel-put-evt (vector-ref chs 2) v))))))))])
    (wait-all producers)
    (do ([i 0 (+ i 1)]) ((= i nc)) (channel-put (vector-ref chs (mod i 3)) 'stop))
    (check-exactly-once "channel choice" n (wait-all consumers))))

(stress "one channel, get and put in the same sync: swaps, never with itself"
  ;; every thread offers both a get and a put on one channel in each sync;
  ;; a thread must never receive its own value, and every value is
  ;; received exactly once
  (let* ([ch (make-channel)] [nt 8] [m (sc 3000)] [n (* nt m)] [sent (box 0)] [self (box 0)]
         [ts (iota-from nt
               (lambda (i)
                 (spawn i
                   (lambda ()
                     (let loop ([k 0] [acc '()])
                       (cond
                         [(and (= k m) (>= (unbox sent) n)) acc]
                         [else
                          (let ([r (sync/timeout 0.002
                                     (wrap-evt ch (lambda (v) (cons 'got v)))
                                     (if (< k m)
                                         (wrap-evt (channel-put-evt ch (+ (* i m) k)) (lambda (_) 'sent))
                                         never-evt))])
                            (cond
                              [(not r) (loop k acc)]
                              [(eq? r 'sent) (box-add! sent 1) (loop (+ k 1) acc)]
                              [else
                               (when (= i (quotient (cdr r) m)) (box-add! self 1))
                               (loop k (cons (cdr r) acc))]))]))))))])
    (let ([got (wait-all ts)])
      (check-equal "received own value" 0 (unbox self))
      (check-exactly-once "swap channel" n got))))

;; ---------------------------------------------------------------- (b) async channels
(define (async-test limit np nc m)
  (let* ([ch (make-async-channel limit)] [n (* np m)]
         [consumers (iota-from nc (lambda (i) (spawn (+ i 3) (lambda () (drain (lambda () (async-channel-get ch)))))))]
         [producers (iota-from np (lambda (p)
                                    (spawn p (lambda ()
                                               (do ([k 0 (+ k 1)]) ((= k m))
                                                 (async-channel-put ch (+ (* p m) k)))))))])
    (wait-all producers)
    (do ([i 0 (+ i 1)]) ((= i nc)) (async-channel-put ch 'stop))
    (check-exactly-once "async channel" n (wait-all consumers))))

(stress "async channel, bounded (limit 4): 8 producers, 5 consumers"
  (async-test 4 8 5 (sc 40000)))

(stress "async channel, bounded (limit 1): 5 producers, 5 consumers"
  (async-test 1 5 5 (sc 20000)))

(stress "async channel, unbounded: 8 producers, 5 consumers"
  (async-test #f 8 5 (sc 60000)))

(stress "async channel: try-get and put-evt with timeouts"
  ;; producers: sync/timeout on put-evt of a bounded channel, retry on #f;
  ;; consumers: mix of try-get polls and sync/timeout gets
  (let* ([ch (make-async-channel 2)] [np 6] [nc 6] [m (sc 15000)] [n (* np m)]
         [consumers (iota-from nc
                      (lambda (i)
                        (spawn (+ i 1)
                          (lambda ()
                            (let loop ([acc '()] [k 0])
                              (let ([v (if (even? (+ i k))
                                           (async-channel-try-get ch)
                                           (sync/timeout 0.001 ch))])
                                (cond
                                  [(not v) (when (even? k) (yield)) (loop acc (+ k 1))]
                                  [(eq? v 'stop) acc]
                                  [else (loop (cons v acc) (+ k 1))])))))))]
         [producers (iota-from np
                      (lambda (p)
                        (spawn p
                          (lambda ()
                            (do ([k 0 (+ k 1)]) ((= k m))
                              (let ([v (+ (* p m) k)])
                                (let retry ()
                                  (unless (sync/timeout 0.0005 (async-channel-put-evt ch v))
                                    (retry)))))))))])
    (wait-all producers)
    (do ([i 0 (+ i 1)]) ((= i nc)) (async-channel-put ch 'stop))
    (check-exactly-once "async channel timeouts" n (wait-all consumers))))

(stress "async channel (limit 2), get and put in the same sync"
  ;; each sync offers a get and a put on one bounded channel: exactly one of
  ;; them happens, so every value put is taken exactly once
  (let* ([ch (make-async-channel 2)] [nt 8] [m (sc 3000)] [n (* nt m)] [sent (box 0)] [taken (box 0)]
         [ts (iota-from nt
               (lambda (i)
                 (spawn i
                   (lambda ()
                     (let loop ([k 0] [acc '()])
                       (if (and (= k m) (>= (unbox taken) n))
                           acc
                           (let ([r (sync/timeout 0.002
                                      (wrap-evt ch (lambda (v) (cons 'got v)))
                                      (if (< k m)
                                          (wrap-evt (async-channel-put-evt ch (+ (* i m) k)) (lambda (_) 'sent))
                                          never-evt))])
                             (cond
                               [(not r) (loop k acc)]
                               [(eq? r 'sent) (box-add! sent 1) (loop (+ k 1) acc)]
                               [else (box-add! taken 1) (loop k (cons (cdr r) acc))]))))))))])
    (let ([got (wait-all ts)])
      (check-equal "puts" n (unbox sent))
      (check-exactly-once "async swap" n got)
      (check "channel empty" (not (async-channel-try-get ch))))))

;; ---------------------------------------------------------------- (c) semaphores
(stress "semaphore as a lock: mutual exclusion over a shared counter"
  (let* ([lock (make-semaphore 1)] [counter 0] [inside (box 0)] [violations (box 0)]
         [nt 12] [m (sc 1500)]
         [ts (iota-from nt
               (lambda (i)
                 (spawn i
                   (lambda ()
                     (do ([k 0 (+ k 1)]) ((= k m))
                       (semaphore-wait lock)
                       (box-add! inside 1)
                       (unless (= (unbox inside) 1) (box-add! violations 1))
                       (let ([c counter])
                         (when (= 0 (mod k 97)) (yield))
                         (set! counter (+ c 1)))
                       (box-add! inside -1)
                       (semaphore-post lock))))))])
    (wait-all ts)
    (check-equal "violations" 0 (unbox violations))
    (check-equal "counter" (* nt m) counter)))

(stress "semaphore lock via call-with-semaphore and sync/timeout"
  (let* ([lock (make-semaphore 1)] [counter 0] [inside (box 0)] [violations (box 0)]
         [nt 10] [m (sc 3000)]
         [critical (lambda ()
                     (box-add! inside 1)
                     (unless (= (unbox inside) 1) (box-add! violations 1))
                     (set! counter (+ counter 1))
                     (box-add! inside -1))]
         [ts (iota-from nt
               (lambda (i)
                 (spawn i
                   (lambda ()
                     (do ([k 0 (+ k 1)]) ((= k m))
                       (if (even? (+ i k))
                           (call-with-semaphore lock critical)
                           ;; acquire with a small timeout, retrying
                           (let retry ()
                             (if (sync/timeout 0.0002 lock)
                                 (begin (critical) (semaphore-post lock))
                                 (retry)))))))))])
    (wait-all ts)
    (check-equal "violations" 0 (unbox violations))
    (check-equal "counter" (* nt m) counter)))

(stress "semaphore as a counter: posts and waits balance"
  ;; 6 posters post m times each; 6 waiters take m each (some by try-wait,
  ;; some by sync/timeout); afterwards the count must be exactly 0.
  (let* ([s (make-semaphore 0)] [np 6] [m (sc 100000)]
         [waiters (iota-from np
                    (lambda (i)
                      (spawn (+ i 1)
                        (lambda ()
                          (let loop ([k 0] [timeouts 0])
                            (cond
                              [(= k m) timeouts]
                              [(= 0 (mod k 3)) (semaphore-wait s) (loop (+ k 1) timeouts)]
                              [(= 1 (mod k 3))
                               ;; peek (never decrements), then race for the unit
                               (when (odd? i) (sync/timeout 0.001 (semaphore-peek-evt s)))
                               (if (semaphore-try-wait? s) (loop (+ k 1) timeouts) (begin (yield) (loop k timeouts)))]
                              [else
                               (if (sync/timeout 0.0003 s) (loop (+ k 1) timeouts) (loop k (+ timeouts 1)))]))))))]
         [posters (iota-from np
                    (lambda (i)
                      (spawn i (lambda () (do ([k 0 (+ k 1)]) ((= k m)) (semaphore-post s))))))])
    (wait-all posters)
    (wait-all waiters)
    (check "count is 0" (not (semaphore-try-wait? s)))
    (semaphore-post s)
    (check "count is 1 after one post" (semaphore-try-wait? s))
    (check "count is 0 again" (not (semaphore-try-wait? s)))))

(stress "bounded buffer from semaphores (slots/items/mutex)"
  (let* ([size 3] [buf (make-vector size #f)] [head 0] [tail 0]
         [slots (make-semaphore size)] [items (make-semaphore 0)] [mutex (make-semaphore 1)]
         [np 6] [nc 6] [m (sc 2000)] [n (* np m)]
         [put! (lambda (v)
                 (semaphore-wait slots)
                 (semaphore-wait mutex)
                 (vector-set! buf tail v) (set! tail (mod (+ tail 1) size))
                 (semaphore-post mutex)
                 (semaphore-post items))]
         [take! (lambda ()
                  (semaphore-wait items)
                  (semaphore-wait mutex)
                  (let ([v (vector-ref buf head)])
                    (set! head (mod (+ head 1) size))
                    (semaphore-post mutex)
                    (semaphore-post slots)
                    v))]
         [consumers (iota-from nc (lambda (i) (spawn (+ i 2) (lambda () (drain take!)))))]
         [producers (iota-from np (lambda (p) (spawn p (lambda () (do ([k 0 (+ k 1)]) ((= k m)) (put! (+ (* p m) k)))))))])
    (wait-all producers)
    (do ([i 0 (+ i 1)]) ((= i nc)) (put! 'stop))
    (check-exactly-once "semaphore buffer" n (wait-all consumers))))

;; ---------------------------------------------------------------- (d) choice + timeouts
(stress "choice-evt consumers over mixed channels with sync/timeout"
  ;; 2 synchronous channels, a bounded and an unbounded async channel;
  ;; producers send each value to one of them (put with timeouts on the
  ;; synchronous ones); consumers sync/timeout on a choice of all four.
  (let* ([c1 (make-channel)] [c2 (make-channel)]
         [a1 (make-async-channel 3)] [a2 (make-async-channel)]
         [np 8] [nc 6] [m (sc 15000)] [n (* np m)]
         [all (choice-evt c1 c2 a1 a2)]
         [consumers (iota-from nc
                      (lambda (i)
                        (spawn (+ i 4)
                          (lambda ()
                            (let loop ([acc '()] [stops 0] [k 0])
                              (let ([v (if (= 0 (mod (+ i k) 4))
                                           (sync all)
                                           (sync/timeout (* 0.0001 (mod k 5)) all))])
                                (cond
                                  [(not v) (loop acc stops (+ k 1))]
                                  [(eq? v 'stop) acc]
                                  [else (loop (cons v acc) stops (+ k 1))])))))))]
         [producers (iota-from np
                      (lambda (p)
                        (spawn p
                          (lambda ()
                            (let ([rng (make-rng (+ p 11))])
                              (do ([k 0 (+ k 1)]) ((= k m))
                                (let ([v (+ (* p m) k)])
                                  (case (rng 4)
                                    [(0) (let retry ()
                                           (unless (sync/timeout 0.0003 (channel-put-evt c1 v)
                                                                 (channel-put-evt c2 v))
                                             (retry)))]
                                    [(1) (channel-put c2 v)]
                                    [(2) (async-channel-put a1 v)]
                                    [else (async-channel-put a2 v)]))))))))])
    (wait-all producers)
    (do ([i 0 (+ i 1)]) ((= i nc)) (async-channel-put a2 'stop))
    (check-exactly-once "mixed choice" n (wait-all consumers))))

(stress "choice over semaphores and channels, with alarms"
  ;; consumers wait on a choice of a channel, a semaphore and an alarm; a
  ;; semaphore unit stands for a value pushed on a locked list.
  (let* ([ch (make-channel)] [s (make-semaphore 0)] [lock (make-semaphore 1)] [stash '()]
         [np 6] [nc 6] [m (sc 1600)] [n (* np m)]
         [consumers (iota-from nc
                      (lambda (i)
                        (spawn (+ i 1)
                          (lambda ()
                            (let loop ([acc '()])
                              (let ([r (sync (wrap-evt ch (lambda (v) (list 'ch v)))
                                             (wrap-evt s (lambda (_) (list 'sem)))
                                             (wrap-evt (alarm-evt (+ (current-inexact-milliseconds) 0.5))
                                                       (lambda (_) (list 'alarm))))])
                                (case (car r)
                                  [(ch) (if (eq? (cadr r) 'stop) acc (loop (cons (cadr r) acc)))]
                                  [(sem) (semaphore-wait lock)
                                         (let ([v (car stash)])
                                           (set! stash (cdr stash))
                                           (semaphore-post lock)
                                           (loop (cons v acc)))]
                                  [else (loop acc)])))))))]
         [producers (iota-from np
                      (lambda (p)
                        (spawn p
                          (lambda ()
                            (do ([k 0 (+ k 1)]) ((= k m))
                              (let ([v (+ (* p m) k)])
                                (if (even? k)
                                    (channel-put ch v)
                                    (begin
                                      (semaphore-wait lock)
                                      (set! stash (cons v stash))
                                      (semaphore-post lock)
                                      (semaphore-post s)))))))))])
    (wait-all producers)
    ;; let the consumers drain the semaphore before stopping them
    (let wait () (unless (null? stash) (sleep 0.001) (wait)))
    (do ([i 0 (+ i 1)]) ((= i nc)) (channel-put ch 'stop))
    (check "stash empty" (null? stash))
    (check-exactly-once "semaphore/channel choice" n (wait-all consumers))))

;; ---------------------------------------------------------------- (e) mailboxes
(stress "mailboxes: many senders to several receivers"
  (let* ([nr 4] [ns 10] [m (sc 20000)] [n (* ns m)]
         [receivers
          (iota-from nr
            (lambda (i)
              (spawn (+ i 1)
                (lambda ()
                  (let loop ([acc '()] [k 0])
                    (let ([v (case (mod k 3)
                               [(0) (thread-receive)]
                               [(1) (or (thread-try-receive)
                                        (begin (yield) (thread-receive)))]
                               [else (if (sync/timeout 0.0005 (thread-receive-evt))
                                         (thread-receive)
                                         (thread-receive))])])
                      (if (eq? v 'stop) acc (loop (cons v acc) (+ k 1)))))))))]
         [rv (list->vector receivers)]
         [senders (iota-from ns
                    (lambda (p)
                      (spawn p
                        (lambda ()
                          (let ([rng (make-rng (+ 7 p))])
                            (do ([k 0 (+ k 1)]) ((= k m))
                              (thread-send (vector-ref rv (rng nr)) (+ (* p m) k))))))))])
    (wait-all senders)
    (for-each (lambda (r) (thread-send r 'stop)) receivers)
    (check-exactly-once "mailboxes" n (wait-all receivers))))

(stress "mailboxes: FIFO per sender"
  ;; messages from one sender to one receiver arrive in order
  (let* ([ns 8] [m (sc 40000)]
         [receiver
          (spawn 1
            (lambda ()
              (let ([last (make-vector ns -1)] [bad 0])
                (let loop ([got 0])
                  (if (= got (* ns m))
                      bad
                      (let* ([msg (thread-receive)] [p (car msg)] [k (cdr msg)])
                        (unless (= k (+ 1 (vector-ref last p))) (set! bad (+ bad 1)))
                        (vector-set! last p k)
                        (loop (+ got 1))))))))]
         [senders (iota-from ns
                    (lambda (p)
                      (spawn p (lambda () (do ([k 0 (+ k 1)]) ((= k m)) (thread-send receiver (cons p k)))))))])
    (wait-all senders)
    (check-equal "out-of-order messages" 0 (thread-wait receiver))))

;; ---------------------------------------------------------------- (f) many threads
(stress "20000 short-lived threads from 4 spawners on 4 pools"
  (let* ([nspawners 4] [per (sc 5000)] [ran (box 0)]
         [spawners
          (iota-from nspawners
            (lambda (s)
              (spawn-shared s
                (lambda ()
                  (let loop ([k 0] [ts '()])
                    (if (= k per)
                        (apply + (wait-all ts))
                        (loop (+ k 1)
                              (cons (spawn-shared (+ s k)
                                      (let ([v (+ (* s per) k)])
                                        (lambda () (box-add! ran 1) v)))
                                    ts))))))))])
    (let ([total (apply + (wait-all spawners))] [n (* nspawners per)])
      (check-equal "every thread ran" n (unbox ran))
      (check-equal "sum of results" (/ (* n (- n 1)) 2) total))))

(stress "short-lived threads in batches, waited by thread-dead-evt and sync"
  (let* ([rounds (sc 80)] [batch 250] [ran (box 0)])
    (do ([r 0 (+ r 1)]) ((= r rounds))
      (let ([ts (iota-from batch (lambda (i) (spawn-shared (+ r i) (lambda () (box-add! ran 1) i))))])
        ;; wait for all via a choice that shrinks
        (let loop ([left ts])
          (unless (null? left)
            (let ([t (apply sync left)])
              (check "thread is dead" (thread-dead? t))
              (loop (remq t left)))))))
    (check-equal "every thread ran" (* rounds batch) (unbox ran))))

(stress "'own threads: 4 spawners on 4 pools, 150 each, blocking once"
  ;; every 'own thread makes a pool (and an OS thread) of its own; they are
  ;; made concurrently and each blocks once on a semaphore
  (let* ([per (sc 150)] [go (make-semaphore 0)]
         [spawners
          (iota-from 4
            (lambda (s)
              (spawn-shared s
                (lambda ()
                  (let ([ts (iota-from per
                              (lambda (k)
                                (thread (lambda () (semaphore-wait go) (+ (* s per) k))
                                        #:pool 'own #:keep 'results)))])
                    (apply + (wait-all ts)))))))])
    (do ([i 0 (+ i 1)]) ((= i (* 4 per))) (semaphore-post go) (when (= 0 (mod i 100)) (collect-rendezvous)))
    (let ([n (* 4 per)])
      (check-equal "sum" (/ (* n (- n 1)) 2) (apply + (wait-all spawners))))))

(stress "collections while workers sleep and threads block"
  ;; idle workers and blocked threads must not hold up the collector: the
  ;; allocating threads and explicit rendezvous finish
  (let* ([ch (make-channel)] [sem (make-semaphore 0)]
         [blocked (iota-from 6 (lambda (i) (spawn i (lambda () (channel-get ch)))))]
         [allocators (iota-from 4
                       (lambda (i)
                         (spawn-shared i
                           (lambda ()
                             (let loop ([k 0] [keep '()] [sum 0])
                               (if (= k (sc 400000))
                                   sum
                                   (loop (+ k 1)
                                         (if (= 0 (mod k 1000)) '() (cons (make-vector 4 k) keep))
                                         (+ sum 1))))))))])
    (do ([i 0 (+ i 1)]) ((= i 5)) (collect-rendezvous) (sleep 0.01))
    (check-equal "allocators" (make-list 4 (sc 400000)) (wait-all allocators))
    (do ([i 0 (+ i 1)]) ((= i 3)) (collect-rendezvous))
    (for-each (lambda (t) (channel-put ch 'go)) blocked)
    (check-equal "blocked threads" (make-list 6 'go) (wait-all blocked))))

;; ---------------------------------------------------------------- (g) nack-guard-evt
(stress "nack-guard-evt under contention: exactly one branch, all other nacks"
  ;; consumers and producers both sync on 3 nack-guarded branches over 3
  ;; channels (consumers with timeouts).  After every sync exactly the
  ;; committed branch's NACK is unready and all others are ready; on a
  ;; timeout all are ready.
  (let* ([chs (vector (make-channel) (make-channel) (make-channel))]
         [np 6] [nc 6] [m (sc 10000)] [n (* np m)] [received (box 0)] [errors (box '())]
         [note! (lambda (x) (let loop () (let ([o (unbox errors)]) (unless (box-cas! errors o (cons x o)) (loop)))))]
         [ready? (lambda (e) (and (sync/timeout 0 (wrap-evt e (lambda _ #t))) #t))]
         ;; one sync over 3 guarded branches; make-evt i gives branch i's evt
         [guarded-sync
          (lambda (timeout make-evt)
            (let* ([nacks (make-vector 3 #f)] [guards (make-vector 3 0)]
                   [branches (iota-from 3
                               (lambda (i)
                                 (nack-guard-evt
                                   (lambda (nack)
                                     (vector-set! nacks i nack)
                                     (vector-set! guards i (+ 1 (vector-ref guards i)))
                                     (wrap-evt (make-evt i) (lambda (v) (cons i v)))))))]
                   [r (if timeout (apply sync/timeout timeout branches) (apply sync branches))])
              (unless (equal? guards '#(1 1 1)) (note! (list 'guards guards)))
              (do ([i 0 (+ i 1)]) ((= i 3))
                (let ([want (not (and r (= i (car r))))] [got (ready? (vector-ref nacks i))])
                  (unless (eq? want got) (note! (list 'nack i 'ready got 'result r)))))
              (values r (and r (vector-ref nacks (car r))))))]
         [chosen-nacks (box '())]
         [consumers
          (iota-from nc
            (lambda (i)
              (spawn (+ i 2)
                (lambda ()
                  (let loop ([acc '()] [mine '()])
                    (if (>= (unbox received) n)
                        (begin (let l () (let ([o (unbox chosen-nacks)])
                                           (unless (box-cas! chosen-nacks o (append mine o)) (l))))
                               acc)
                        (let-values ([(r nack) (guarded-sync 0.002 (lambda (i) (vector-ref chs i)))])
                          (if r
                              (begin (box-add! received 1) (loop (cons (cdr r) acc) (cons nack mine)))
                              (loop acc mine)))))))))]
         [producers
          (iota-from np
            (lambda (p)
              (spawn p
                (lambda ()
                  (do ([k 0 (+ k 1)]) ((= k m))
                    (let ([v (+ (* p m) k)])
                      (let retry ([tries 0])
                        (let-values ([(r nack)
                                      (guarded-sync (and (odd? k) 0.001)
                                                    (lambda (i) (channel-put-evt (vector-ref chs i) v)))])
                          (unless r (retry (+ tries 1)))))))))))])
    (wait-all producers)
    (let ([got (wait-all consumers)])
      (check-equal "nack errors" '() (list-head (unbox errors) (min 5 (length (unbox errors)))))
      (check-exactly-once "nack channel" n got)
      ;; a chosen branch's nack never becomes ready later
      (check "chosen nacks stay unready"
             (for-all (lambda (e) (not (sync/timeout 0 e))) (unbox chosen-nacks))))))

(stress "nack-guard-evt over semaphores: units conserved"
  ;; 3 semaphores; takers choose among them through nack guards with
  ;; timeouts; every unit posted is taken exactly once
  (let* ([sems (vector (make-semaphore 0) (make-semaphore 0) (make-semaphore 0))]
         [nt 6] [m (sc 30000)] [taken (box 0)] [nack-errors (box 0)]
         [takers
          (iota-from nt
            (lambda (i)
              (spawn (+ i 1)
                (lambda ()
                  (let loop ([k 0] [counts (list 0 0 0)])
                    (if (= k m)
                        counts
                        (let* ([nacks (make-vector 3 #f)]
                               [r (sync/timeout 0.001
                                    (nack-guard-evt (lambda (nk) (vector-set! nacks 0 nk) (wrap-evt (vector-ref sems 0) (lambda (_) 0))))
                                    (nack-guard-evt (lambda (nk) (vector-set! nacks 1 nk) (wrap-evt (vector-ref sems 1) (lambda (_) 1))))
                                    (nack-guard-evt (lambda (nk) (vector-set! nacks 2 nk) (wrap-evt (vector-ref sems 2) (lambda (_) 2)))))])
                          (do ([j 0 (+ j 1)]) ((= j 3))
                            (unless (eq? (not (and r (= j r))) (and (sync/timeout 0 (vector-ref nacks j)) #t))
                              (box-add! nack-errors 1)))
                          (if r
                              (begin (box-add! taken 1)
                                     (loop (+ k 1) (let ([c (list-copy counts)])
                                                     (set-car! (list-tail c r) (+ 1 (list-ref c r)))
                                                     c)))
                              (loop k counts)))))))))]
         [posters
          (iota-from nt
            (lambda (i)
              (spawn i
                (lambda ()
                  (do ([k 0 (+ k 1)]) ((= k m))
                    (semaphore-post (vector-ref sems (mod (+ i k) 3))))))))])
    (wait-all posters)
    (let* ([counts (wait-all takers)] [per (map (lambda (j) (apply + (map (lambda (c) (list-ref c j)) counts))) '(0 1 2))])
      (check-equal "nack errors" 0 (unbox nack-errors))
      (check-equal "units taken" (* nt m) (unbox taken))
      (check-equal "per semaphore" (list (* 2 m) (* 2 m) (* 2 m)) per)
      (check "all semaphores empty"
             (for-all (lambda (s) (not (semaphore-try-wait? s))) (vector->list sems))))))

;; Chez's own `system` runs garbage when another thread collects meanwhile
;; (the command string moves); the tests and benchmarks use shell-command.
(test "shell-command passes its command intact while parallel threads collect"
  (let* ([stop (box #f)]
         [churners (map (lambda (pool)
                          (thread (lambda ()
                                    (let loop ([keep '()] [i 0])
                                      (unless (unbox stop)
                                        (loop (if (fx= i 500) '() (cons (make-vector 20 i) keep))
                                              (if (fx= i 500) 0 (fx+ i 1))))))
                                  #:pool pool))
                        (list pool-a pool-b))]
         [tail (make-string 3000 #\x)]
         [codes (let loop ([i 0] [acc '()])
                  (if (= i 200)
                      acc
                      (loop (+ i 1) (cons (shell-command (format "exit ~a # ~a" (mod i 7) tail)) acc))))])
    (set-box! stop #t)
    (for-each thread-wait churners)
    (check-equal "exit codes" (reverse (map (lambda (i) (mod i 7)) (iota 200))) codes)
    (check-equal "a signal is minus its number" -9 (shell-command "kill -9 $$"))
    (check-raises "not a string" (assertion-from? 'shell-command) (lambda () (shell-command 'ls)))))

(done)
