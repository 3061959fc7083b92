#!chezscheme
;;; Deadlocks: the report of threads that can never run again, and the
;;; end of a program whose every thread is blocked for ever.
;;;
;;; The watch.  An idle worker with no timer to wait for checks, after a
;;; quiet stretch (see set-idle-check! in core/wakeup), whether anything
;;; can still wake a thread of the process.  Nothing can when, at once:
;;; the main OS thread has been adopted; every worker of every pool sleeps
;;; (on its semaphore, or in the poller) with no wake-up posted, no
;;; runnable thread and no live timer; no descriptor has a waiter and
;;; nothing is watched level-triggered (a subprocess's end, a place's
;;; channel, a signal descriptor); no call-blocking job is queued or
;;; running; no signal handler was installed since spindle started; the
;;; main thread runs under no exception handler it did not have when it
;;; was adopted (one may catch the break of a Ctrl-C: an uncaught one
;;; would end the program anyway, so it does not count as a wake-up); and
;;; the process has no OS thread spindle does not know (one in a foreign
;;; call, or made with fork-thread, may call back in).  Then every parked
;;; thread waits for ever, and a fresh thread prints the report to the
;;; error port and exits with status 2 (Go's "all goroutines are asleep").
;;; Every test is a racy read; a worker that reads "busy" sleeps until
;;; woken, and only an unknown OS thread (which may be about to exit) is
;;; looked at again, a few times.  When unsure, it does not report.
;;;
;;; The report on demand (find-deadlocks) adds two things the watch does
;;; not need: wait-for cycles among parked threads (a thread waits for a
;;; SRFI-18 mutex, a semaphore or a thread's end, held by (or being)
;;; another parked thread of the cycle), and coroutine threads parked on
;;; objects that nothing running can reach (a full collection with the
;;; parked threads in a guardian: one that comes back was reachable only
;;; from what cannot run).
(library (spindle private impl deadlock)
  (export find-deadlocks deadlock-report deadlock-exit-enabled
          ;; for (spindle private impl thread) ((spindle deadlock) leaves it out)
          set-deadlock-dumper!)
  (import (chezscheme)
          (spindle private core pools)
          (only (spindle private core atomic) with-spin-lock)
          (only (spindle private core timers) timer-heap-live?)
          (only (spindle private core queue) queue-empty?)
          (only (spindle private core scheduler) set-idle-check! main-adoption-exn-state main-gthread gthread? gthread-name
                gthread-pool gthread-state adopted-gthreads main-pool spawn! start-gthread!
                gthread-finisher-set! exit-current-thread!)
          (only (spindle private core gthread) gthread-winders gthread-exn-state)
          (only (spindle private host dynamic-state) winder-exit exception-state-handlers)
          (only (spindle private host collector) collector-helper-threads)
          (only (spindle private core cancel) scope-handler?)
          (only (spindle private core wait-targets) thread-wait-list)
          (only (spindle private diagnostics thread-dump) dump-object-text)
          (only (spindle private io poller) poller-may-wake?)
          (only (spindle private os signals) signal-handlers sigquit)
          (only (spindle private impl blocking) blocking-helpers-busy? blocking-helper-count)
          (only (spindle private diagnostics watchdog) watchdog-os-threads)
          (only (spindle private impl semaphore) semaphore?)
          (only (spindle private impl custodian) all-managed-objects))

  ;; ---------------------------------------------------------------- the watch
  ;; The signal handlers at start: one installed later may wake a thread.
  (define initial-handlers (signal-handlers))

  (define (handler-added?)
    (let ([now (signal-handlers)])
      (let loop ([n 1])
        (and (fx< n 65)
             (or (let ([h (vector-ref now n)])
                   (and h (not (fx= n sigquit)) (not (memv h '(0 1)))
                        (not (eqv? h (vector-ref initial-handlers n)))))
                 (loop (fx+ n 1)))))))

  ;; The number of handlers an exception state holds above Chez's default
  ;; one, but for those of move-on-after and task scopes (scope-handler?:
  ;; a break they catch is raised on).  #f if the host cannot tell.
  (define (handler-depth s)
    (let ([hs (exception-state-handlers s)])
      (and hs (length (remp scope-handler? hs)))))

  ;; #t if the parked main thread runs under a handler it did not have
  ;; when it was adopted: a guard that may catch the break of a Ctrl-C,
  ;; which would wake it.  (An uncaught break ends the program: no
  ;; wake-up.)  When unsure, #t.
  (define (main-handler-added?)
    (let ([m (main-gthread)])
      (or (not m)
          (let ([now (handler-depth (gthread-exn-state m))]
                [then (handler-depth (main-adoption-exn-state))])
            (or (not now) (not then) (fx> now then))))))

  ;; Under each pool's lock: every worker asleep, nothing to run, no
  ;; wake-up on its way, no live timer.
  (define (pools-asleep?)
    (for-all (lambda (wp)
               (let ([p (car wp)])
                 (or (bwp-object? p)
                     (with-spin-lock (pool-lock p)
                       (and (queue-empty? (pool-run-queue p))
                            (fx= (pool-posted p) 0)
                            (fx= (pool-workers p) (fx+ (pool-idle p) (if (pool-poll-sleeper? p) 1 0)))
                            (not (timer-heap-live? (pool-timers p))))))))
             (unbox all-pools)))

  ;; #t if every OS thread of the process is a worker, a call-blocking
  ;; helper, the watchdog or one of the collector's helpers.
  (define (os-threads-known?)
    (let ([n (guard (c [#t #f]) (length (directory-list "/proc/self/task")))])
      (and n
           (fx= n (fx+ (blocking-helper-count) (watchdog-os-threads) (collector-helper-threads)
                       (fold-left (lambda (acc wp)
                                    (let ([p (car wp)]) (if (bwp-object? p) acc (fx+ acc (pool-workers p)))))
                                  0 (unbox all-pools)))))))

  ;; 'blocked (nothing can wake any thread), 'busy, or 'unsure (an OS
  ;; thread spindle does not know).  In an idle worker, interrupts disabled.
  (define (quiescence)
    (cond
      [(not (main-gthread)) 'busy]
      [(not (pools-asleep?)) 'busy]
      [(poller-may-wake?) 'busy]
      [(blocking-helpers-busy?) 'busy]
      [(handler-added?) 'busy]
      [(main-handler-added?) 'busy]
      [(not (os-threads-known?)) 'unsure]
      ;; read again: a worker may have woken during the looks above
      [(not (pools-asleep?)) 'busy]
      [else 'blocked]))

  (define reported (box #f))

  ;; The scheduler's idle check: #t to be asked again later.
  (define (idle-check)
    (case (quiescence)
      [(blocked) (when (box-cas! reported #f #t) (start-reporter!)) #f]
      [(unsure) #t]
      [else #f]))

  (define exit-enabled?
    (let ([v (getenv "SPINDLE_DEADLOCK")]) (not (and v (member v '("off" "0" "no"))))))

  (define deadlock-exit-enabled
    (case-lambda
      [() exit-enabled?]
      [(on?)
       (set! exit-enabled? (and on? #t))
       (set-idle-check! (and exit-enabled? idle-check))]))

  (define installed (begin (set-idle-check! (and exit-enabled? idle-check)) #t))

  ;; The exit status of a deadlocked program.
  (define deadlock-status 2)

  ;; The report is written by a thread of its own (as dump-threads on
  ;; SIGQUIT), not in the worker's scheduler loop: the port may park.
  (define (start-reporter!)
    (let ([t (spawn! (make-own-pool) 'deadlock-report #f report-and-exit #f)])
      (gthread-finisher-set! t (lambda (outcome) (exit-current-thread!)))
      (start-gthread! t)))

  (define (report-and-exit t)
    (enable-interrupts)
    (let ([port (console-error-port)])
      (guard (c [#t (void)])
        (display "spindle: deadlock: every thread is blocked for ever (no thread can run, and no timer, descriptor, call-blocking helper, subprocess, place or signal handler can wake one)\n" port)
        (print-findings (find-cycles (live-threads)) port)
        (dumper port))
      (guard (c [#t (void)]) (flush-output-port port)))
    (exit deadlock-status))

  ;; How the report prints every thread: (spindle private impl thread)'s dump-threads.
  (define dumper (lambda (port) (void)))
  (define (set-deadlock-dumper! proc) (set! dumper proc))

  ;; ---------------------------------------------------------------- the graph
  (define (live-threads)
    (let ([seen (make-eq-hashtable)])
      (filter (lambda (x)
                (and (gthread? x) (not (hashtable-ref seen x #f))
                     (begin (hashtable-set! seen x #t) #t)
                     (not (eq? (gthread-state x) 'dead))))
              (append (adopted-gthreads) (all-managed-objects)))))

  (define (parked? t) (memq (gthread-state t) '(parked suspended)))

  ;; The values a procedure closes over ('() for anything else).
  (define (free-values p)
    (guard (c [#t '()])
      (let ([o (inspect/object p)])
        (if (eq? (o 'type) 'procedure)
            (let loop ([i 0] [acc '()])
              (if (fx= i (o 'length)) acc (loop (fx+ i 1) (cons (((o 'ref i) 'ref) 'value) acc))))
            '()))))

  ;; semaphore -> the parked threads that hold it: whose dynamic-wind exits
  ;; (call-with-semaphore's among them) close over it.  A parked thread's
  ;; winders are those it saved.
  (define (semaphore-holders threads)
    (let ([h (make-eq-hashtable)])
      (for-each
        (lambda (t)
          (for-each (lambda (w)
                      (let ([out (winder-exit w)])
                        (when out
                          (for-each (lambda (v)
                                      (when (and (semaphore? v) (not (memq t (hashtable-ref h v '()))))
                                        (hashtable-update! h v (lambda (l) (cons t l)) '())))
                                    (free-values out)))))
                    (let ([ws (gthread-winders t)]) (if (list? ws) ws '()))))
        threads)
      h))

  ;; The threads t waits for, if it waits on one thing only: a mutex's
  ;; holder, a semaphore's holders, a thread to end, a task scope's
  ;; children to end.
  (define (waits-for t holders)
    (let ([ws (thread-wait-list t)])
      (if (and (pair? ws) (null? (cdr ws)))
          (let ([w (car ws)])
            (case (car w)
              [(mutex) (let ([h (and (fx= (length w) 4) (cadddr w))]) (if (gthread? h) (list h) '()))]
              [(semaphore) (hashtable-ref holders (cadr w) '())]
              [(wait) (if (gthread? (cadr w)) (list (cadr w)) '())]
              [(children) (let ([h (and (fx= (length w) 4) (cadddr w))]) (if (list? h) (filter gthread? h) '()))]
              [else '()]))
          '())))

  ;; Every cycle of the wait-for graph among parked threads, each as
  ;; (cycle (thread wait) ...): each thread waits (wait, as thread-waits
  ;; shows it) for something the next one holds, the last for the first's.
  (define (find-cycles threads)
    (let* ([parked (filter parked? threads)]
           [holders (semaphore-holders parked)]
           [color (make-eq-hashtable)]        ; absent: white; 1: on the path; 2: done
           [cycles '()])
      (define (visit t path)
        (hashtable-set! color t 1)
        (for-each (lambda (u)
                    (case (hashtable-ref color u 0)
                      [(1) (set! cycles (cons (cycle-from u (reverse (cons t path))) cycles))]
                      [(0) (when (parked? u) (visit u (cons t path)))]
                      [else (void)]))
                  (waits-for t holders))
        (hashtable-set! color t 2))
      (for-each (lambda (t) (when (fx= (hashtable-ref color t 0) 0) (visit t '()))) parked)
      (reverse cycles)))

  ;; path: the DFS path, oldest first; the cycle is its tail from u.
  (define (cycle-from u path)
    (cons 'cycle (map (lambda (t) (list t (let ([ws (thread-wait-list t)]) (if (pair? ws) (car ws) '()))))
                      (memq u path))))

  ;; ---------------------------------------------------------------- unreachable
  ;; Coroutine threads parked on what nothing running can reach: each
  ;; parked one goes into a guardian, then a full collection; a thread
  ;; the guardian gives back was reachable only through the guardian (the
  ;; custodians hold threads weakly), so nothing can ever wake it.
  ;; Parallel-pool threads are held by their pool and never come back.
  (define (unreachable-threads)
    (let ([g (make-guardian)])
      (guard-parked! g)
      (full-collection!)
      (let loop ([acc '()])
        (let ([t (g)])
          (if t (loop (cons t acc)) (reverse acc))))))

  ;; Separate, so that its list of threads is dead at the collection.
  (define (guard-parked! g)
    (for-each (lambda (t) (when (and (eq? (gthread-pool t) main-pool) (eq? (gthread-state t) 'parked)) (g t)))
              (live-threads)))

  ;; With other OS threads running, collect raises; a collect request
  ;; (collect-rendezvous) runs the handler with every thread stopped.
  (define (full-collection!)
    (let ([old (collect-request-handler)])
      (collect-request-handler (lambda () (collect (collect-maximum-generation))))
      (collect-rendezvous)
      (collect-request-handler old)))

  ;; ---------------------------------------------------------------- reports
  (define (find-deadlocks)
    (let ([unreachable (unreachable-threads)])
      (append (find-cycles (live-threads))
              (map (lambda (t) (cons* 'unreachable t (thread-wait-list t))) unreachable))))

  (define (wait-text w)
    (with-output-to-string
      (lambda ()
        (let ([o (current-output-port)])
          (cond
            [(null? w) (display "nothing known" o)]
            [else
             (display (car w) o)
             (for-each (lambda (x) (put-char o #\space) (display (dump-object-text x) o)) (cdr w))])))))

  ;; One step of a cycle: what a thread waits for, held by the next one.
  (define (cycle-wait-text w holder)
    (case (and (pair? w) (car w))
      [(mutex) (format "~a ~a, held by thread ~s" (car w) (dump-object-text (cadr w)) holder)]
      [(semaphore) (format "semaphore ~a (~a), held by thread ~s" (dump-object-text (cadr w)) (caddr w) holder)]
      [(wait) (format "thread ~s to end" holder)]
      [(children) (format "its task scope's children to end (~a), thread ~s among them" (dump-object-text (cadr w)) holder)]
      [else (wait-text w)]))

  (define (print-findings findings port)
    (for-each
      (lambda (f)
        (case (car f)
          [(cycle)
           (fprintf port "wait-for cycle of ~a thread~a:~%" (length (cdr f)) (if (null? (cddr f)) "" "s"))
           (let ([ts (cdr f)])
             (for-each (lambda (tw next)
                         (fprintf port "  thread ~s waits for ~a~%" (gthread-name (car tw))
                                  (cycle-wait-text (cadr tw) (gthread-name (car next)))))
                       ts (append (cdr ts) (list (car ts)))))]
          [(unreachable)
           (fprintf port "thread ~s is blocked for ever: it waits on ~a, which nothing that can run reaches~%"
                    (gthread-name (cadr f))
                    (if (null? (cddr f)) "nothing known" (wait-text (caddr f))))]))
      findings))

  (define deadlock-report
    (case-lambda
      [() (deadlock-report (current-error-port))]
      [(port)
       (unless (and (output-port? port) (textual-port? port))
         (assertion-violation 'deadlock-report "expected a textual output port" port))
       (let ([findings (find-deadlocks)])
         (if (null? findings)
             (display "no deadlock found\n" port)
             (print-findings findings port))
         (flush-output-port port)
         findings)])))
