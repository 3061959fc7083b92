#!chezscheme
;;; The hooks through which a deterministic simulation ((spindle
;;; simulation)) takes over the core on the one OS thread it runs on:
;;; run queues, the next thread to run, timers, the clocks, scheduling
;;; points and the checks of nondeterministic operations.
;;;
;;; Outside a simulation active-tid holds #f and every hook site costs two
;;; loads and one test (sim-here?).  Inside one, only the simulating OS
;;; thread sees the hooks: workers of other pools, on other OS threads,
;;; keep running their own threads with real time.
(library (spindle private core sim-hooks)
  (export sim-here? sim-active? sim-install! sim-remove! current-sim-hooks make-sim-hooks
          sim-hooks-enqueue sim-hooks-spawned sim-hooks-next sim-hooks-add-timer
          sim-hooks-io-check sim-hooks-allow-io?
          sim-yield-reason sim-now sim-now-set! sim-work-set! sim-coarse-ms sim-epoch-ms sim-next-name! check-deterministic)
  (import (chezscheme))

  ;; enqueue: (t) -> #t if t is the simulation's (it is then runnable
  ;; there), #f to let the scheduler queue it on its pool.
  ;; spawned: (t) a thread made on the simulating OS thread.
  ;; next: (worker) -> the thread that worker runs next.
  ;; add-timer: (deadline action) -> a timer on the simulation's heap.
  ;; io-check: (who) raises unless the simulation allows real I/O.
  (define-record-type sim-hooks
    (fields enqueue spawned next add-timer io-check allow-io?)
    (nongenerative spindle-sim-hooks-v1) (sealed #t))

  (define active-tid (box #f))    ; the simulating OS thread, or #f (a box: read by a macro)
  (define active #f)              ; its sim-hooks
  (define now 0.)                 ; the virtual monotonic clock, ms
  (define names 0)                ; threads named in this simulation
  ;; Why the running thread gave its worker back, when it yielded: 'point
  ;; (a scheduling point), 'yield (yield, sleep 0, a preemption), or #f
  ;; (a park, an end).  The scheduler sets it; the simulation takes it.
  (define sim-yield-reason (box #f))
  (define work 0.)                ; ms of work the steps so far stand for

  (define-syntax sim-here?
    (syntax-rules ()
      [(_) (let ([id (unbox active-tid)]) (and id (fx= id (get-thread-id))))]))

  (define (sim-active?) (and (unbox active-tid) #t))

  ;; The hooks, on the simulating OS thread (after sim-here?).
  (define (current-sim-hooks) active)

  (define (sim-install! hooks start-ms)
    (set! now start-ms)
    (set! names 0)
    (set! work 0.)
    (set! active hooks)
    (set-box! active-tid (get-thread-id)))

  (define (sim-remove!)
    (set-box! active-tid #f)
    (set! active #f))

  ;; Threads made in a simulation are numbered from 1 in each run, so a
  ;; run prints the same names each time.
  (define (sim-next-name!) (set! names (fx+ names 1)) names)

  (define (sim-now) now)

  ;; The coarse clock of a simulation (see coarse-ms in (spindle private
  ;; core clock)): virtual time plus the work of the steps taken, so that
  ;; a thread that runs many steps without waiting ages as it computes,
  ;; while monotonic-ms moves only at timers.
  (define (sim-work-set! ms) (set! work ms))
  (define (sim-coarse-ms) (flonum->fixnum (fl+ now work)))
  (define (sim-now-set! ms) (set! now ms))

  ;; current-inexact-milliseconds in a simulation: virtual time from a
  ;; fixed date (2026-01-01 UTC), so that a run prints the same dates.
  (define sim-epoch-ms 1767225600000.)

  ;; Called by operations whose outcome depends on the world outside the
  ;; process (sockets, subprocesses, places, MPI): inside a simulation
  ;; they raise unless it was started with #:allow-io #t.
  (define (check-deterministic who)
    (when (sim-here?) ((sim-hooks-io-check active) who))))
