#!chezscheme
;;; The watchdog: one OS thread that looks, a few times a second, for two
;;; ways blocking code stops a program silently.
;;;
;;; - A collection that cannot start.  Chez collects only once every
;;;   active OS thread has reached a safe point; one stuck in a foreign
;;;   call that is not __collect_safe stops every other thread at its next
;;;   allocation, at 0% CPU.  A request pending for collect-stall seconds
;;;   (no collection between two looks) is reported with the OS threads
;;;   still active: their spindle role and the procedures on their stacks
;;;   (see (spindle private host chez-threads)).
;;; - A long slice: a green thread that has held its worker for
;;;   long-slice ms without parking or reaching a preemption check (a
;;;   blocking call that should go through call-blocking).  A running
;;;   thread's worker refreshes its clock at every timer check (see
;;;   (spindle private core pools)), so a worker whose clock has not moved
;;;   for that long (collections excepted), with the same thread current
;;;   at two looks in a row, is held; the report says so once, and again
;;;   with the total when the worker moves on.  Not while a collection
;;;   waits: every worker then waits too.
;;;
;;; The watchdog runs with interrupts disabled for good, so it never joins
;;; a collect rendezvous or runs the collect handler, and sleeps in a
;;; __collect_safe wait, so it never holds a collection up.  It starts
;;; lazily: with the first OS thread spindle starts besides the program's
;;; own (a stall needs two) when the stall report is on (the default), with
;;; the first green thread when the long-slice report is on, or when either
;;; setting is set.  Not at load: the places' template process must stay
;;; single-threaded to fork.
;;; Settings: SPINDLE_WATCHDOG=off turns the stall report off;
;;; SPINDLE_LONG_SLICE_MS=N turns the long-slice report on.
(library (spindle private diagnostics watchdog)
  (export watchdog-note-spawn! watchdog-note-os-thread! watchdog-os-threads
          collect-stall-report-seconds long-slice-report-ms watchdog-report-handler)
  (import (chezscheme) (spindle private core pools) (spindle private core gthread)
          (spindle private host chez-threads) (only (spindle private core unarmed) worker-unarmed?)
          (only (spindle private os threads) make-os-semaphore os-semaphore-post! os-semaphore-wait!)
          (only (spindle private os signals) fork-os-thread)
          (only (spindle private os descriptors) blocking-write)
          (only (spindle private os kernel-threads) kernel-thread-id kernel-thread-activity))

  ;; ---------------------------------------------------------------- settings
  (define (env-number name)
    (let ([s (getenv name)]) (and s (string->number s))))

  (define stall-seconds
    (let ([s (getenv "SPINDLE_WATCHDOG")])
      (if (and s (member s '("off" "0" "no"))) #f 1.0)))

  (define slice-limit
    (let ([n (env-number "SPINDLE_LONG_SLICE_MS")]) (and n (real? n) (positive? n) n)))

  (define (default-report text)
    (let* ([bv (string->utf8 text)] [n (bytevector-length bv)] [buf (foreign-alloc (fxmax n 1))])
      (do ([i 0 (fx+ i 1)]) ((fx= i n)) (foreign-set! 'unsigned-8 buf i (bytevector-u8-ref bv i)))
      (let loop ([off 0])
        (when (fx< off n)
          (let ([r (blocking-write 2 (+ buf off) (fx- n off))])
            (when (> r 0) (loop (fx+ off r))))))
      (foreign-free buf)))

  (define report-handler default-report)

  ;; (collect-stall-report-seconds) -> seconds or #f;
  ;; (collect-stall-report-seconds s): s a positive real, or #f for off.
  (define collect-stall-report-seconds
    (case-lambda
      [() stall-seconds]
      [(s)
       (unless (or (not s) (and (real? s) (positive? s)))
         (assertion-violation 'collect-stall-report-seconds "expected a positive real number or #f" s))
       (set! stall-seconds (and s (inexact s)))
       (settings-changed! (and s #t))]))

  ;; (long-slice-report-ms) -> milliseconds or #f; (long-slice-report-ms n).
  (define long-slice-report-ms
    (case-lambda
      [() slice-limit]
      [(n)
       (unless (or (not n) (and (real? n) (positive? n)))
         (assertion-violation 'long-slice-report-ms "expected a positive real number or #f" n))
       (set! slice-limit n)
       (settings-changed! (and n #t))]))

  ;; (watchdog-report-handler) -> proc; (watchdog-report-handler proc):
  ;; proc receives each report as a string, on the watchdog's OS thread.
  (define watchdog-report-handler
    (case-lambda
      [() report-handler]
      [(proc)
       (unless (procedure? proc) (assertion-violation 'watchdog-report-handler "expected a procedure" proc))
       (set! report-handler proc)]))

  ;; ---------------------------------------------------------------- starting
  (define started (box #f))
  (define wake (make-os-semaphore))

  (define (start!)
    (when (box-cas! started #f #t)
      (fork-os-thread watchdog-main)))

  ;; How many OS threads the watchdog runs (once started, it runs for good).
  (define (watchdog-os-threads) (if (unbox started) 1 0))

  ;; From spawn!: main?: the thread is a coroutine thread of the main pool.
  (define (watchdog-note-spawn! main?)
    (unless (unbox started)
      (when (or slice-limit (and stall-seconds (not main?))) (start!))))

  ;; From a spindle OS thread's start (call-blocking's helpers).
  (define (watchdog-note-os-thread!)
    (unless (unbox started)
      (when stall-seconds (start!))))

  (define (settings-changed! start?)
    (if (unbox started)
        (os-semaphore-post! wake)
        (when start? (start!))))

  ;; Milliseconds between looks, or #f to sleep until a setting changes.
  (define (period)
    (let ([a (and stall-seconds (fl/ (fl* 1000. (inexact stall-seconds)) 4.))]
          [b (and slice-limit (fl/ (inexact slice-limit) 4.))])
      (let ([p (cond [(and a b) (flmin a b)] [a a] [b b] [else #f])])
        (and p (flmax 2. (flmin 250. p))))))

  (define (watchdog-main)
    (disable-interrupts)
    (let loop ()
      (os-semaphore-wait! wake (period))
      (guard (c [#t (guard (c2 [#t (void)])
                      (report! (format "spindle watchdog: error in a check: ~a\n"
                                       (if (message-condition? c) (condition-message c) c))))])
        (look!))
      (loop)))

  (define (report! text)
    (guard (c [#t (default-report (format "spindle watchdog: the report handler raised an exception; the report was:\n~a" text))])
      (report-handler text)))

  (define (look!)
    (let ([now (real-time)])
      (if (collect-request-pending?)
          (check-stall! now)
          (begin
            (set! stall-since #f)
            (when slice-limit (check-slices! now))))))

  ;; ---------------------------------------------------------------- collection stalls
  (define stall-since #f)       ; real-time of the first look that saw the request
  (define stall-count #f)       ; (collections) then
  (define stall-reported? #f)

  (define (check-stall! now)
    (let ([n (collections)])
      (cond
        [(not stall-seconds) (set! stall-since #f)]
        [(and stall-since (eqv? n stall-count))
         (when (and (not stall-reported?)
                    (fl>= (fixnum->flonum (fx- now stall-since)) (fl* 1000. stall-seconds)))
           (set! stall-reported? #t)
           (report! (stall-text (fx- now stall-since))))]
        [else (set! stall-since now) (set! stall-count n) (set! stall-reported? #f)])))

  (define (stall-text ms)
    (let* ([self (get-thread-id)]
           [others (filter (lambda (id) (not (eqv? id self))) (os-thread-ids))]
           [active (filter (lambda (id) (eq? (os-thread-active? id) #t)) others)]
           [suspects (if probe-frames? active others)])
      (with-output-to-string
        (lambda ()
          (if probe-frames?
              (printf "spindle watchdog: a collection has waited ~a s for ~a OS thread~a not at a safe point; every other thread stops at its next allocation until ~a:~%"
                      (seconds-text ms) (length suspects) (if (= (length suspects) 1) "" "s")
                      (if (= (length suspects) 1) "it gets there" "they get there"))
              (printf "spindle watchdog: a collection has waited ~a s; one of these OS threads is not at a safe point (this Chez cannot say which):~%"
                      (seconds-text ms)))
          (for-each
            (lambda (id)
              (printf "  OS thread ~a (~a)" id (os-thread-role id))
              (let ([depth (os-thread-interrupt-depth id)])
                (cond
                  [(not probe-frames?) (newline)]
                  [(and depth (fx> depth 0))
                   (printf ": running with interrupts disabled (depth ~a), or in a foreign call made so~%" depth)]
                  [else (printf ": outside Scheme, in a foreign call not declared __collect_safe~%")]))
              (let ([now (let ([tid (kernel-thread-id id)]) (and tid (kernel-thread-activity tid)))])
                (when now (printf "    now: ~a~%" now)))
              (let ([callers (os-thread-callers id 6)])
                (unless (null? callers)
                  (printf "    its stack when it last left Scheme: ~a~%" (join callers " <- ")))))
            suspects)
          (printf "  A foreign procedure that may block must be declared __collect_safe (define-blocking-foreign of (spindle foreign) does it).~%")))))

  (define (seconds-text ms) (let ([s (/ (round (/ ms 100)) 10.)]) (format "~a" s)))

  (define (join strings sep)
    (if (null? strings)
        ""
        (fold-left (lambda (acc s) (string-append acc sep s)) (car strings) (cdr strings))))

  ;; What spindle knows of OS thread id.
  (define (os-thread-role id)
    (let ([w (worker-of id)])
      (cond
        [w (let ([t (worker-current w)])
             (format "a worker of ~a, ~a"
                     (pool-text (worker-pool w))
                     (if t (format "running thread ~s" (gthread-name t)) "between threads")))]
        [(eqv? id 0) "the program's main OS thread, not yet running spindle threads"]
        [(kernel-thread-id id) "not a worker: a helper OS thread of spindle's (call-blocking's, say)"]
        [else "not a worker: an OS thread spindle did not start (made with fork-thread)"])))

  (define (pool-text p) (if (pool-main? p) "the main pool" (format "~s" p)))

  (define (worker-of id)
    (let loop ([ws (unbox all-workers)])
      (cond
        [(null? ws) #f]
        [(let ([w (car (car ws))]) (and (not (bwp-object? w)) (eqv? (worker-tid w) id) w)) => values]
        [else (loop (cdr ws))])))

  ;; ---------------------------------------------------------------- long slices
  ;; worker -> #(thread clock reported? held gc): what the first look at
  ;; this slice saw (the thread, the worker's clock, the collector's total
  ;; ms then) and the time held so far.  Time spent collecting since the
  ;; first look is not counted: every worker's clock stands still during a
  ;; collection, and a look right after a long one would otherwise see
  ;; every worker held.
  (define slices (make-weak-eq-hashtable))

  (define (gc-ms)
    (let ([t (sstats-gc-real (statistics))])
      (+ (* 1000 (time-second t)) (quotient (time-nanosecond t) 1000000))))

  (define (check-slices! now)
    (let ([gc (gc-ms)])
      (for-each
        (lambda (wp)
          (let ([w (car wp)])
            ;; a worker running its thread unarmed makes no checks: its
            ;; clock stands still, and its thread holds nobody up
            (unless (or (bwp-object? w) (worker-unarmed? w))
              (let ([t (worker-current w)] [clock (worker-clock w)] [seen (hashtable-ref slices w #f)])
                (if (and t seen (eq? t (vector-ref seen 0)) (eqv? clock (vector-ref seen 1)))
                    (let ([held (- now clock (- gc (vector-ref seen 4)))])
                      (vector-set! seen 3 held)
                      (when (and (not (vector-ref seen 2)) (>= held slice-limit))
                        (vector-set! seen 2 #t)
                        (report! (held-text t w held))))
                    (begin
                      (when (and seen (vector-ref seen 2))
                        (report! (format "spindle watchdog: thread ~s gave its worker (OS thread ~a) back after about ~a ms~%"
                                         (gthread-name (vector-ref seen 0)) (worker-tid w) (vector-ref seen 3))))
                      (if t
                          (hashtable-set! slices w (vector t clock #f (- now clock) gc))
                          (hashtable-delete! slices w))))))))
        (unbox all-workers))))

  (define (held-text t w held)
    (let ([now (let ([tid (kernel-thread-id (worker-tid w))]) (and tid (kernel-thread-activity tid)))])
      (format "spindle watchdog: thread ~s (~a) has held its worker (OS thread ~a) for ~a ms without parking or reaching a preemption check~a: a blocking call? (run it through call-blocking, or declare it with define-blocking-foreign)~%"
              (gthread-name t) (thread-kind w) (worker-tid w) held (if now (string-append "; now " now) ""))))

  (define (thread-kind w)
    (let ([p (worker-pool w)])
      (if (pool-main? p) "coroutine, main pool" (format "parallel, ~s" p)))))
