#!chezscheme
;;; The scheduler of a deterministic simulation: which thread runs at each
;;; scheduling point, from a seed, and virtual time.
;;;
;;; Every thread made on the simulating OS thread while a simulation runs
;;; is its member: when it becomes runnable it goes into the simulation's
;;; runnable set, never into its pool's run queue, and only the simulating
;;; worker runs it.  Each time that worker needs a thread (a park, a yield,
;;; a scheduling point, a thread's end) the simulation takes one step:
;;; - it fires the timers due at the virtual time;
;;; - if a thread is runnable it picks one: uniformly ('random), or the
;;;   one of highest priority ('pct: probabilistic concurrency testing,
;;;   priorities random at a thread's birth, lowered at depth-1 change
;;;   points drawn over the run's expected length);
;;; - if none is and a timer is pending, the clock jumps to it;
;;; - if none is and no timer is pending, every thread is blocked for
;;;   ever: a deadlock.
;;; Every draw comes from one generator seeded by the seed, and the set
;;; is kept in the order things happened (no addresses, no hashing order),
;;; so a run is a function of its seed and its program.
(library (spindle private core sim-scheduler)
  (export make-sim sim? sim-seed sim-kind sim-steps sim-failure sim-failure-set! sim-failure-steps
          sim-root-set! sim-members sim-start! sim-random-below sim-kind-of-seed)
  (import (chezscheme) (spindle private core atomic) (spindle private core timers)
          (spindle private core sim-hooks)
          (only (spindle private core gthread) gthread-dead?)
          (only (spindle private core wakeup) poll-io-now!)
          (only (spindle private core scheduler) run-simulation!)
          (only (spindle private core sync) seed-choice-random!))

  (define-record-type sim
    (fields seed kind depth length max-steps allow-io? io-wait-ms
            (mutable rng)                ; splitmix64 state
            (mutable runnable) (mutable count)   ; a vector, its first count slots in use
            member-table                 ; weak eq-hashtable: thread -> member record
            (mutable births)             ; members made so far
            timers
            (mutable steps)
            (mutable change-points)      ; PCT: ascending step numbers
            (mutable lowered)            ; PCT: change points passed
            (mutable last)               ; the thread picked at the last step
            (mutable caller) (mutable root)
            thread-failure               ; (t) -> what t raised if it ended by a raise, else #f
            describe                     ; (threads) -> text of a thread dump
            (mutable failure) (mutable failure-steps))
    (protocol
      (lambda (new)
        (lambda (seed kind depth length max-steps allow-io? io-wait-ms thread-failure describe)
          (new seed kind depth length max-steps allow-io? io-wait-ms
               (bitwise-and seed mask64) (make-vector 16 #f) 0 (make-weak-eq-hashtable) 0
               (make-timer-heap) 0 '() 0 #f #f #f thread-failure describe #f #f))))
    (nongenerative spindle-sim-v1) (sealed #t))

  ;; A member: its birth number (dumps list members in birth order) and
  ;; its PCT priority (higher runs first).
  (define-record-type sim-member
    (fields birth (mutable priority))
    (nongenerative spindle-sim-member-v1) (sealed #t))

  ;; ---------------------------------------------------------------- draws
  ;; splitmix64 (Steele, Lea and Flood's generator), on exact integers.
  (define mask64 #xFFFFFFFFFFFFFFFF)
  (define (next64! s)
    (let* ([x (bitwise-and (+ (sim-rng s) #x9E3779B97F4A7C15) mask64)]
           [z (bitwise-and (* (bitwise-xor x (bitwise-arithmetic-shift-right x 30)) #xBF58476D1CE4E5B9) mask64)]
           [z (bitwise-and (* (bitwise-xor z (bitwise-arithmetic-shift-right z 27)) #x94D049BB133111EB) mask64)])
      (sim-rng-set! s x)
      (bitwise-xor z (bitwise-arithmetic-shift-right z 31))))

  (define (sim-random-below s n) (mod (next64! s) n))

  ;; The scheduler a seed picks when none is named: odd seeds PCT, even
  ;; ones random, so that a seed alone names a run of simulate-many.
  (define (sim-kind-of-seed seed) (if (odd? seed) 'pct 'random))

  ;; PCT's change points: depth-1 step numbers in [1, k].  k is the run's
  ;; expected length: the length given, else a power of two from 16 up to
  ;; max-steps drawn from the seed, so that a seed alone fixes the run and
  ;; runs of every length are covered.
  (define (draw-change-points! s)
    (let* ([k (or (sim-length s)
                  (let ([top (max 4 (min 20 (bitwise-length (sim-max-steps s))))])
                    (expt 2 (+ 4 (sim-random-below s (- top 3))))))]
           [cps (let loop ([i 1] [acc '()])
                  (if (>= i (sim-depth s)) acc (loop (+ i 1) (cons (+ 1 (sim-random-below s k)) acc))))])
      (sim-change-points-set! s (list-sort < cps))))

  ;; ---------------------------------------------------------------- members
  (define (spawned! s t)
    (let ([b (sim-births s)])
      (sim-births-set! s (+ b 1))
      (hashtable-set! (sim-member-table s) t
        (make-sim-member b (if (eq? (sim-kind s) 'pct)
                           ;; above every lowered priority (they are <= 0)
                           (+ 1 (sim-random-below s 1000000000))
                           0)))))

  ;; Live members, in birth order.
  (define (sim-members s)
    (let-values ([(ts ms) (hashtable-entries (sim-member-table s))])
      (map car
           (list-sort (lambda (a b) (< (sim-member-birth (cdr a)) (sim-member-birth (cdr b))))
                      (filter (lambda (p) (not (gthread-dead? (car p))))
                              (map cons (vector->list ts) (vector->list ms)))))))

  (define (enqueue! s t)
    (and (hashtable-contains? (sim-member-table s) t)
         (let ([n (sim-count s)] [v (sim-runnable s)])
           (when (fx= n (vector-length v))
             (let ([nv (make-vector (fx* 2 n) #f)])
               (do ([i 0 (fx+ i 1)]) ((fx= i n)) (vector-set! nv i (vector-ref v i)))
               (sim-runnable-set! s nv)))
           (vector-set! (sim-runnable s) n t)
           (sim-count-set! s (fx+ n 1))
           #t)))

  ;; Takes the runnable thread at index i, keeping the others in order.
  (define (take! s i)
    (let* ([v (sim-runnable s)] [n (fx- (sim-count s) 1)] [t (vector-ref v i)])
      (do ([j i (fx+ j 1)]) ((fx= j n)) (vector-set! v j (vector-ref v (fx+ j 1))))
      (vector-set! v n #f)
      (sim-count-set! s n)
      t))

  (define (priority s t) (sim-member-priority (hashtable-ref (sim-member-table s) t #f)))

  (define (choose! s)
    (let ([n (sim-count s)])
      (if (eq? (sim-kind s) 'random)
          (take! s (sim-random-below s n))
          (let loop ([i 1] [best 0] [bp (priority s (vector-ref (sim-runnable s) 0))])
            (if (fx= i n)
                (take! s best)
                (let ([p (priority s (vector-ref (sim-runnable s) i))])
                  (if (> p bp) (loop (fx+ i 1) i p) (loop (fx+ i 1) best bp))))))))

  ;; PCT: the thread that took the step at a change point drops below
  ;; every thread not yet lowered.
  (define (after-step! s t)
    (let ([cps (sim-change-points s)])
      (when (and (pair? cps) (>= (sim-steps s) (car cps)))
        (sim-change-points-set! s (cdr cps))
        (sim-lowered-set! s (+ (sim-lowered s) 1))
        (sim-member-priority-set! (hashtable-ref (sim-member-table s) t #f) (- (sim-lowered s))))))

  ;; ---------------------------------------------------------------- the step
  ;; The work a step stands for on the coarse clock: 100 steps without a
  ;; wait make the 10 ms after which a preemption delivers a cancellation.
  (define step-work-ms 0.1)

  (define (fail! s kind detail)
    (unless (sim-failure s)
      (sim-failure-set! s (cons kind detail))
      (sim-failure-steps-set! s (sim-steps s))))

  ;; The worker's next thread (interrupts disabled, no thread current).
  (define (next-thread s w)
    (let ([last (sim-last s)] [reason (unbox sim-yield-reason)])
      (set-box! sim-yield-reason #f)
      ;; PCT: a thread that yields (or is preempted: it computes) waits
      ;; for another; it drops below every thread, or a busy wait on a
      ;; lower thread would never end
      (when (and last (eq? reason 'yield) (eq? (sim-kind s) 'pct) (not (gthread-dead? last)))
        (sim-lowered-set! s (+ (sim-lowered s) 1))
        (sim-member-priority-set! (hashtable-ref (sim-member-table s) last #f) (- (sim-lowered s))))
      (when (and last (gthread-dead? last) (not (eq? last (sim-root s))))
        (sim-last-set! s #f)
        (let ([c ((sim-thread-failure s) last)])
          (when c (fail! s 'exception (cons last c)))))
      (let loop ()
        (cond
          [(or (sim-failure s) (gthread-dead? (sim-root s))) (finish! s)]
          [else
           (for-each (lambda (a) (a)) (timer-heap-take-due! (sim-timers s) (sim-now)))
           (cond
             [(fx> (sim-count s) 0)
              (if (>= (sim-steps s) (sim-max-steps s))
                  (begin (fail! s 'max-steps ((sim-describe s) (sim-members s))) (loop))
                  (let ([t (choose! s)])
                    (sim-steps-set! s (+ (sim-steps s) 1))
                    (sim-work-set! (fl* step-work-ms (fixnum->flonum (sim-steps s))))
                    (after-step! s t)
                    (sim-last-set! s t)
                    t))]
             [(timer-heap-next-deadline (sim-timers s))
              => (lambda (dl) (when (fl> dl (sim-now)) (sim-now-set! dl)) (loop))]
             [(and (sim-allow-io? s) (wait-for-io s)) (loop)]
             [else
              (fail! s 'deadlock ((sim-describe s) (sim-members s)))
              (loop)])]))))

  ;; With #:allow-io: nothing to run and no timer, but a descriptor may
  ;; wake a thread.  Waits in real time, up to io-wait-ms.
  (define (wait-for-io s)
    (let ([t0 (real-time)])
      (let wait ()
        (poll-io-now!)
        (enable-interrupts)
        (sleep (make-time 'time-duration 1000000 0))
        (disable-interrupts)
        (cond
          [(fx> (sim-count s) 0) #t]
          [(fx>= (fx- (real-time) t0) (sim-io-wait-ms s)) #f]
          [else (wait)]))))

  ;; The run is over: the hooks go, and the caller resumes.
  (define (finish! s)
    (sim-remove!)
    (sim-caller s))

  ;; ---------------------------------------------------------------- running
  (define (io-refusal s)
    (lambda (who)
      (unless (sim-allow-io? s)
        (raise
          (condition
            (make-error) (make-who-condition who)
            (make-message-condition
              "not deterministic in a simulation (simulate with #:allow-io #t to allow it, losing replay)"))))))

  ;; Runs the simulation s from the current thread: (make-root) makes the
  ;; first thread (on this OS thread, hooks installed, interrupts
  ;; disabled) and returns it; this returns once the root has ended or
  ;; the run failed (see sim-failure).
  (define (sim-start! s make-root start-ms)
    (when (sim-active?)
      (assertion-violation 'simulate "a simulation is already running"))
    (seed-choice-random! (bitwise-and (next64! s) (most-positive-fixnum)))
    (when (eq? (sim-kind s) 'pct) (draw-change-points! s))
    (run-simulation!
      (lambda (w caller)
        (sim-caller-set! s caller)
        (sim-install!
          (make-sim-hooks
            (lambda (t) (enqueue! s t))
            (lambda (t) (spawned! s t))
            (lambda (w) (next-thread s w))
            (lambda (deadline action) (timer-heap-add! (sim-timers s) deadline action))
            (io-refusal s)
            (sim-allow-io? s))
          start-ms)
        (sim-root-set! s (make-root))))))
