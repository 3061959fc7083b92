#!chezscheme
;;; Futures: tasks on a shared parallel pool of (processor-count) workers.
;;;
;;; A future's state moves from queued to running, by CAS, for whoever
;;; gets there first: the pool's worker thread or a toucher, which then runs
;;; the thunk itself.  The loser does nothing (the worker thread just ends),
;;; so acyclic touch dependencies never deadlock the pool.  While it runs,
;;; the state is the thread running it: a runner killed (kill-thread, a
;;; custodian shutdown) before it settled the future leaves it to the next
;;; toucher, which puts it back to queued and runs the thunk again.  An
;;; owned future (make-owned-future, for scope-future) starts running: only
;;; its owner runs the thunk, and a touch waits.
(library (spindle private impl future)
  (export future touch future? would-be-future futures-enabled? current-future
          current-future-pool future-pool
          (rename (make-fsemaphore* make-fsemaphore)) fsemaphore? fsemaphore-post fsemaphore-wait
          fsemaphore-try-wait? fsemaphore-count
          for/async map/async processor-count
          ;; for (spindle scope) ((spindle future) leaves it out)
          make-owned-future)
  (import (except (chezscheme) make-parameter thread?) (only (spindle private core atomic) with-os-mutex)
          (only (spindle private impl thread) thread-procedure make-parallel-thread-pool
                parallel-thread-pool? processor-count current-thread thread? thread-dead? thread-dead-evt)
          (spindle private core evt-core) (spindle private core sync)
          (spindle private impl semaphore)
          (only (spindle private impl parameter) make-parameter)
          (only (spindle private diagnostics trace) tracing? trace-now trace-instant! trace-span!))

  (define-record-type (future-record make-future future?)
    (fields thunk
            state                  ; box: queued, the running thread (owned: running), done, failed
            (mutable results)      ; list of values, or the raised object
            done)                  ; latch fired when results are set
    (protocol
      (lambda (new)
        (lambda (thunk)
          (let ([f (new thunk (box 'queued) #f (make-owned-latch (lambda (l) l) #f))])
            (owned-latch-owner-set! (future-record-done f) f)   ; dump-threads names it
            f))))
    (nongenerative spindle-future-v1))

  ;; The future whose thunk the current thread runs (worker or toucher).
  (define current-future (make-parameter #f))

  ;; #f = the shared pool, made on first use.
  (define current-future-pool
    (make-thread-parameter #f
      (lambda (p)
        (unless (or (not p) (parallel-thread-pool? p))
          (assertion-violation 'current-future-pool "expected #f or a parallel thread pool" p))
        p)))

  ;; future-pool: the pool new futures run on (for (spindle scope)).
  (define shared-pool #f)
  (define shared-pool-lock (make-mutex))
  (define (future-pool)
    (or (current-future-pool)
        shared-pool
        (with-os-mutex shared-pool-lock
          (or shared-pool
              (begin (set! shared-pool (make-parallel-thread-pool (processor-count)))
                     shared-pool)))))

  (define (futures-enabled?) (threaded?))

  (define (check-thunk who thunk)
    (unless (and (procedure? thunk) (logbit? 0 (procedure-arity-mask thunk)))
      (assertion-violation who "expected a procedure of no arguments" thunk)))

  ;; Runs f's thunk here if nobody has started it.  #t if this call ran it.
  (define (run-if-queued! f)
    (and (box-cas! (future-record-state f) 'queued (current-thread))
         (begin (settle! f (outcome f (future-record-thunk f))) #t)))

  ;; Runs thunk as f's: (done . values) or (failed . raised).
  (define (outcome f thunk)
    (let ([t0 (and tracing? (trace-now))])
      (let ([r (call/cc
                 (lambda (k)
                   (with-exception-handler
                     (lambda (c) (k (cons 'failed c)))
                     (lambda ()
                       (current-future f)
                       (call-with-values thunk (lambda vals (cons 'done vals)))))))])
        (when tracing? (trace-span! 'future t0 f #f))
        r)))

  ;; Sets f's outcome r; f is running, and only this thread settles it.
  ;; The results are in place before the state says so: a touch that sees
  ;; done or failed reads them without waiting for the latch.
  (define (settle! f r)
    (future-record-results-set! f (cdr r))
    (set-box! (future-record-state f) (car r))
    (latch-fire! (future-record-done f)))

  ;; For (spindle scope): a future that no toucher runs (it is running from
  ;; the start), and two procedures that settle it, of which the first to
  ;; finish wins: (run thunk) runs thunk as the future's thunk and raises
  ;; again what it raised; (fail c) makes c its raise (for an owner that
  ;; ended, even killed mid-run, before run finished).
  (define (make-owned-future)
    (let* ([f (make-future #f)] [settled (box #f)]
           [settle-once! (lambda (r) (when (box-cas! settled #f #t) (settle! f r)))])
      (set-box! (future-record-state f) 'running)
      (values f
              (lambda (thunk)
                (let ([r (outcome f thunk)])
                  (settle-once! r)
                  (if (eq? (car r) 'failed) (raise (cdr r)) (void))))
              (lambda (c) (settle-once! (cons 'failed c))))))

  (define (future thunk)
    (check-thunk 'future thunk)
    (let ([f (make-future thunk)])
      (when tracing? (trace-instant! 'future-create f #f))
      (thread-procedure (lambda () (run-if-queued! f)) (future-pool))
      f))

  (define (would-be-future thunk)
    (check-thunk 'would-be-future thunk)
    (make-future thunk))

  (define (touch f)
    (unless (future? f) (assertion-violation 'touch "expected a future" f))
    (let ([outer (current-future)])
      (run-if-queued! f)
      (current-future outer))
    (when tracing?
      (trace-instant! 'future-touch f (not (memq (unbox (future-record-state f)) '(done failed)))))
    (let wait ()
      (let ([st (unbox (future-record-state f))])
        (cond
          [(eq? st 'done) (apply values (future-record-results f))]
          [(eq? st 'failed) (raise (future-record-results f))]
          [(thread? st)
           ;; its runner's death without a result hands the future back
           (sync (future-record-done f) (thread-dead-evt st))
           (when (thread-dead? st)
             (when (box-cas! (future-record-state f) st 'queued)
               (let ([outer (current-future)])
                 (run-if-queued! f)
                 (current-future outer))))
           (wait)]
          [else (sync (future-record-done f)) (wait)]))))

  (define writer-installed
    (begin (record-writer (record-type-descriptor future-record)
             (lambda (f port wr) (display "#<future>" port)))
           #t))

  ;; ---------------------------------------------------------------- fsemaphores
  (define-record-type fsemaphore
    (fields sema)
    (nongenerative spindle-fsemaphore-v1) (sealed #t))

  (define (make-fsemaphore* init)
    (unless (and (integer? init) (exact? init) (>= init 0))
      (assertion-violation 'make-fsemaphore "expected an exact non-negative integer" init))
    (make-fsemaphore (make-semaphore init)))

  (define (check-fs who fs)
    (unless (fsemaphore? fs) (assertion-violation who "expected an fsemaphore" fs)))

  (define (fsemaphore-post fs) (check-fs 'fsemaphore-post fs) (semaphore-post (fsemaphore-sema fs)))
  (define (fsemaphore-wait fs) (check-fs 'fsemaphore-wait fs) (semaphore-wait (fsemaphore-sema fs)))
  (define (fsemaphore-try-wait? fs)
    (check-fs 'fsemaphore-try-wait? fs)
    (semaphore-try-wait? (fsemaphore-sema fs)))
  (define (fsemaphore-count fs)
    (check-fs 'fsemaphore-count fs)
    (semaphore-count-now (fsemaphore-sema fs)))

  ;; ---------------------------------------------------------------- helpers
  (define (map/async proc list1 . lists)
    (unless (procedure? proc) (assertion-violation 'map/async "expected a procedure" proc))
    (let ([fs (apply map (lambda args (future (lambda () (apply proc args)))) list1 lists)])
      (map touch fs)))

  (define (sequence->list who s)
    (cond
      [(list? s) s]
      [(vector? s) (vector->list s)]
      [(and (integer? s) (exact? s) (>= s 0)) (iota s)]
      [else (assertion-violation who "expected a list, a vector or an exact non-negative integer" s)]))

  (define-syntax for/async
    (syntax-rules ()
      [(_ ([id seq] ...) body1 body ...)
       (let ([fs (map (lambda (id ...) (future (lambda () body1 body ...)))
                      (sequence->list 'for/async seq) ...)])
         (for-each touch fs))])))
