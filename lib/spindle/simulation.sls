#!chezscheme
;;; Deterministic simulation: a thunk and every thread, pool thread and
;;; future it makes run on one OS thread, under a scheduler driven by a
;;; seed and a virtual clock (see (spindle private core sim-scheduler)).
;;; The same seed and program give the same run: the same interleaving,
;;; output and step count.  A failure (a raise that no handler takes, a
;;; deadlock, a run past max-steps) raises &simulation-failure with the
;;; seed that replays it.
(library (spindle simulation)
  (export simulate simulate-procedure simulate-many simulate-many-procedure
          &simulation-failure simulation-failure? simulation-failure-seed
          simulation-failure-scheduler simulation-failure-steps simulation-failure-kind
          simulation-failure-detail simulation-failure-run
          in-simulation? simulation-seed simulation-steps)
  (import (chezscheme)
          (spindle private core keywords)
          (spindle private core sim-scheduler)
          (only (spindle private core sim-hooks) sim-here?)
          (only (spindle private impl thread) make-thread* thread-name thread-outcome thread-results
                thread-state thread-waits)
          (only (spindle private core scheduler) gthread-data)
          (only (spindle custodian) make-custodian current-custodian custodian-shutdown-all))

  (define-condition-type &simulation-failure &error
    make-simulation-failure simulation-failure?
    (seed simulation-failure-seed)
    (scheduler simulation-failure-scheduler)
    (steps simulation-failure-steps)
    (kind simulation-failure-kind)         ; exception, deadlock or max-steps
    (detail simulation-failure-detail)     ; (thread-or-#f . raised), the dump text, or #f
    (run simulation-failure-run))          ; simulate-many's run number, or #f

  ;; The run in progress (one at a time per process).
  (define current-run #f)

  (define (in-simulation?) (sim-here?))

  (define (check-in who)
    (unless (and current-run (sim-here?))
      (assertion-violation who "not in a simulation")))

  (define (simulation-seed) (check-in 'simulation-seed) (sim-seed current-run))
  (define (simulation-steps) (check-in 'simulation-steps) (sim-steps current-run))

  ;; The virtual monotonic clock starts here, in every run.
  (define start-ms 1000000.)

  ;; A seed from SPINDLE_SEED, else #f.
  (define (environment-seed)
    (let ([v (getenv "SPINDLE_SEED")])
      (and v (not (string=? v "")) (let ([n (string->number v)])
               (if (and n (exact? n) (integer? n) (>= n 0))
                   n
                   (assertion-violation 'simulate "SPINDLE_SEED is not an exact non-negative integer" v))))))

  (define (fresh-seed)
    (let ([t (current-time 'time-utc)])
      (mod (+ (* (time-second t) 1000003) (time-nanosecond t)) 1000000000)))

  (define (check-arguments who thunk seed scheduler depth max-steps)
    (unless (and (procedure? thunk) (logbit? 0 (procedure-arity-mask thunk)))
      (assertion-violation who "expected a procedure of no arguments" thunk))
    (unless (or (not seed) (and (integer? seed) (exact? seed) (>= seed 0)))
      (assertion-violation who "expected #f or an exact non-negative integer seed" seed))
    (unless (memq scheduler '(#f random pct))
      (assertion-violation who "expected #f, 'random or 'pct for the scheduler" scheduler))
    (unless (and (fixnum? depth) (fx>= depth 1))
      (assertion-violation who "expected a positive fixnum depth" depth))
    (unless (and (fixnum? max-steps) (fx> max-steps 0))
      (assertion-violation who "expected a positive fixnum max-steps" max-steps)))

  ;; ---------------------------------------------------------------- simulate
  (define simulate-procedure
    (case-lambda
      [(thunk) (simulate-procedure thunk #f #f 3 1000000 #f #f)]
      [(thunk seed) (simulate-procedure thunk seed #f 3 1000000 #f #f)]
      [(thunk seed scheduler) (simulate-procedure thunk seed scheduler 3 1000000 #f #f)]
      [(thunk seed scheduler depth) (simulate-procedure thunk seed scheduler depth 1000000 #f #f)]
      [(thunk seed scheduler depth max-steps) (simulate-procedure thunk seed scheduler depth max-steps #f #f)]
      [(thunk seed scheduler depth max-steps allow-io) (simulate-procedure thunk seed scheduler depth max-steps allow-io #f)]
      [(thunk seed scheduler depth max-steps allow-io length)
       (check-arguments 'simulate thunk seed scheduler depth max-steps)
       (unless (or (not length) (and (fixnum? length) (fx> length 0)))
         (assertion-violation 'simulate "expected #f or a positive fixnum length" length))
       (let* ([seed (or seed (environment-seed) (fresh-seed))])
         (run-one thunk seed (or scheduler (sim-kind-of-seed seed)) depth max-steps (and allow-io #t) length
                  (current-error-port)))]))

  (define-keyword-procedure simulate simulate-procedure
    (thunk #f) (seed #f) (scheduler #f) (depth 3) (max-steps 1000000) (allow-io #f) (length #f))

  ;; What a failed thread raised, or #f (threads made by (spindle thread)).
  (define (thread-failure t)
    (and (gthread-data t) (eq? (thread-outcome t) 'failed) (list (thread-results t))))

  ;; The deadlock report: each live thread, its state and what it waits on.
  (define (describe threads)
    (call-with-string-output-port
      (lambda (p)
        (for-each
          (lambda (t)
            (fprintf p "  thread ~a: ~a" (thread-name t) (thread-state t))
            (let loop ([ws (thread-waits t)] [sep " waits on "])
              (unless (null? ws)
                (put-string p sep)
                (display (caar ws) p)
                (for-each (lambda (x) (put-char p #\space) (write x p)) (cdar ws))
                (loop (cdr ws) "; or ")))
            (newline p))
          threads))))

  ;; Runs thunk under seed; returns its values or raises the failure.
  (define (run-one thunk seed kind depth max-steps allow-io length err)
    (let* ([result #f] [raised-steps #f]
           [s (make-sim seed kind depth length max-steps allow-io 10000 thread-failure describe)]
           [c (make-custodian)])
      (define (root-body)
        (set! result
          (guard (e [#t (set! raised-steps (sim-steps s)) (list 'raised e)])
            (call-with-values
              (lambda () (parameterize ([current-custodian c]) (thunk)))
              (lambda vals (cons 'ok vals)))))
        ;; threads left running end inside the run, deterministically
        (custodian-shutdown-all c))
      (when current-run (assertion-violation 'simulate "a simulation is already running"))
      (set! current-run s)
      (parameterize ([current-error-port err])
        (dynamic-wind
          void
          (lambda ()
            (sim-start! s (lambda () (make-thread* 'simulate root-body #f #f #t 'root #t #f)) start-ms))
          (lambda () (set! current-run #f))))
      (cond
        [(sim-failure s)
         => (lambda (f)
              (raise (failure seed kind (sim-failure-steps s) (car f)
                              ;; a thread's failure: (thread . (raised))
                              (if (eq? (car f) 'exception) (cons (cadr f) (caddr f)) (cdr f))
                              #f)))]
        [(and result (eq? (car result) 'raised))
         (raise (failure seed kind raised-steps 'exception (cons #f (cadr result)) #f))]
        [result (apply values (cdr result))]
        [else (raise (failure seed kind (sim-steps s) 'exception (cons #f "the root thread was killed") #f))])))

  (define (raised-text x)
    (call-with-string-output-port
      (lambda (p)
        (if (condition? x)
            (display-condition x p)
            (fprintf p "non-condition object raised: ~s" x)))))

  (define (failure seed kind steps what detail run)
    (let ([text
           (call-with-string-output-port
             (lambda (p)
               (fprintf p "simulation failed with seed ~a (~a scheduler, step ~a~a): " seed kind steps
                        (if run (format ", run ~a" run) ""))
               (case what
                 [(deadlock)
                  (fprintf p "deadlock: every thread is blocked and no timer is pending~%~a" detail)]
                 [(max-steps) (fprintf p "no end after ~a scheduling steps (a livelock? see #:max-steps)~%~a" steps detail)]
                 [else
                  (let ([t (car detail)] [x (cdr detail)])
                    (if t
                        (fprintf p "thread ~a raised: ~a" (thread-name t) (raised-text x))
                        (fprintf p "the thunk raised: ~a" (raised-text x))))])
               (fprintf p "~%replay: SPINDLE_SEED=~a, or #:seed ~a~a" seed seed
                        (if (eq? kind (sim-kind-of-seed seed)) "" (format " #:scheduler '~a" kind)))))])
      (condition
        (make-simulation-failure seed kind steps what detail run)
        (make-who-condition 'simulate)
        (make-message-condition text))))

  ;; The same failure, numbered as run of simulate-many.
  (define (with-run c run)
    (let ([d (simulation-failure-detail c)] [what (simulation-failure-kind c)])
      (failure (simulation-failure-seed c) (simulation-failure-scheduler c) (simulation-failure-steps c)
               what d run)))

  ;; ---------------------------------------------------------------- simulate-many
  ;; Runs seeds seed, seed+1, ... (odd ones under PCT, even ones random,
  ;; unless a scheduler is named); returns runs when all pass, else raises
  ;; the first failure.  SPINDLE_SEED=n runs seed n alone: the replay.
  ;; Threads' failure reports go nowhere unless verbose.
  (define simulate-many-procedure
    (case-lambda
      [(thunk) (simulate-many-procedure thunk 100 #f #f 3 1000000 #f)]
      [(thunk runs) (simulate-many-procedure thunk runs #f #f 3 1000000 #f)]
      [(thunk runs seed) (simulate-many-procedure thunk runs seed #f 3 1000000 #f)]
      [(thunk runs seed scheduler) (simulate-many-procedure thunk runs seed scheduler 3 1000000 #f)]
      [(thunk runs seed scheduler depth) (simulate-many-procedure thunk runs seed scheduler depth 1000000 #f)]
      [(thunk runs seed scheduler depth max-steps) (simulate-many-procedure thunk runs seed scheduler depth max-steps #f)]
      [(thunk runs seed scheduler depth max-steps verbose)
       (check-arguments 'simulate-many thunk seed scheduler depth max-steps)
       (unless (and (integer? runs) (exact? runs) (> runs 0))
         (assertion-violation 'simulate-many "expected an exact positive number of runs" runs))
       (let* ([replay (environment-seed)]
              [base (or replay seed (fresh-seed))]
              [runs (if replay 1 runs)])
         (let loop ([i 0])
           (if (= i runs)
               runs
               (let ([sd (+ base i)])
                 (guard (c [(simulation-failure? c) (raise (with-run c (+ i 1)))])
                   (run-one thunk sd (or scheduler (sim-kind-of-seed sd)) depth max-steps #f #f
                            (if verbose (current-error-port) (discarding-port))))
                 (loop (+ i 1))))))]))

  (define (discarding-port)
    (make-custom-textual-output-port "discard" (lambda (s start n) n) #f #f #f))

  (define-keyword-procedure simulate-many simulate-many-procedure
    (thunk #f) (runs 100) (seed #f) (scheduler #f) (depth 3) (max-steps 1000000) (verbose #f)))
