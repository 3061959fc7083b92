#!chezscheme
;;; call-blocking: runs a procedure that may block its OS thread (a slow
;;; foreign call, a host-name lookup, a disk read) on a helper OS thread,
;;; while the calling green thread parks.  Other threads of the caller's
;;; worker keep running.
;;;
;;; Helpers are plain OS threads, made on demand up to max-helpers and
;;; ended after idle-seconds without work.  A helper waits for work in
;;; condition-wait with interrupts enabled, so it never holds up a
;;; collection; a foreign procedure it runs for long should be declared
;;; __collect_safe for the same reason.
(library (spindle private impl blocking)
  (export call-blocking blocking-helper-count blocking-helpers-busy?)
  (import (chezscheme) (only (spindle private core atomic) with-os-mutex) (spindle private core evt-core) (spindle private core queue)
          (only (spindle private core sim-hooks) sim-here?)
          (only (spindle private core sync) sync)
          (only (spindle private os signals) fork-os-thread)
          (only (spindle private diagnostics watchdog) watchdog-note-os-thread!))

  (define max-helpers 64)
  (define idle-seconds 10)

  (define lock (make-mutex))
  (define work-ready (make-condition))
  (define jobs (make-queue))            ; under lock
  (define helpers 0)                    ; under lock
  (define idle 0)                       ; helpers waiting for work, under lock

  (define (blocking-helper-count) (with-os-mutex lock helpers))

  ;; For the deadlock watch: #t if a job is queued or running (its end
  ;; may wake a thread).
  (define (blocking-helpers-busy?)
    (with-os-mutex lock (or (fx> helpers idle) (not (queue-empty? jobs)))))

  ;; A job: the thunk, and the latch its caller waits on.  The latch's
  ;; value is (ok . values) or (raised . condition).
  (define (helper-loop)
    (let loop ()
      (let ([job (begin
                   (mutex-acquire lock)
                   (let wait ([waited? #f])
                     (cond
                       [(queue-pop! jobs #f) => (lambda (j) (mutex-release lock) j)]
                       [waited?
                        (set! helpers (fx- helpers 1))
                        (mutex-release lock)
                        #f]
                       [else
                        (set! idle (fx+ idle 1))
                        (let ([signalled? (condition-wait work-ready lock
                                            (make-time 'time-duration 0 idle-seconds))])
                          (set! idle (fx- idle 1))
                          (wait (not signalled?)))])))])
        (when job
          ((car job))
          (loop)))))

  ;; Called by a green thread: the lock is held with interrupts disabled.
  (define (submit! run)
    (with-os-mutex lock
      (queue-push! jobs (list run))
      ;; idle counts helpers that may not have woken for earlier jobs yet: a
      ;; helper more is started unless every queued job has an idle helper
      (when (and (fx> (queue-length jobs) idle) (fx< helpers max-helpers))
        (set! helpers (fx+ helpers 1))
        (fork-os-thread helper-loop))
      (condition-signal work-ready)))

  ;; What a thread in call-blocking waits for, as dump-threads names it.
  (define-record-type blocking-call (fields proc) (nongenerative spindle-blocking-call-v1) (sealed #t))
  (define blocking-call-writer
    (record-writer (record-type-descriptor blocking-call)
      (lambda (b port wr) (display "#<call-blocking " port) (wr (blocking-call-proc b) port) (display ">" port))))

  ;; (call-blocking proc arg ...) -> proc's values, run on a helper OS
  ;; thread; an exception it raises is raised again here.  If the calling
  ;; thread is killed meanwhile, the call still runs to its end and its
  ;; result is dropped.
  (define (call-blocking proc . args)
    (unless (procedure? proc) (assertion-violation 'call-blocking "expected a procedure" proc))
    (if (sim-here?)
        ;; a simulation runs on one OS thread, in the order of its seed:
        ;; the call blocks that thread, and the run stays a function of it
        (apply proc args)
        (call-blocking-on-helper proc args)))

  (define (call-blocking-on-helper proc args)
    (watchdog-note-os-thread!)
    (let* ([outcome #f]
           [done (make-owned-latch (lambda (l) outcome) (make-blocking-call proc))])
      (submit! (lambda ()
                 (set! outcome
                   (call/cc
                     (lambda (k)
                       (with-exception-handler
                         (lambda (c) (k (cons 'raised c)))
                         (lambda () (call-with-values (lambda () (apply proc args))
                                      (lambda vals (cons 'ok vals))))))))
                 (latch-fire! done)))
      (let ([r (sync done)])
        (if (eq? (car r) 'ok)
            (apply values (cdr r))
            (raise (cdr r)))))))
