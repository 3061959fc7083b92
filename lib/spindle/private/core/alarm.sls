;;; Time as evts: alarm-evt (ready once a clock reaches a time, on the
;;; pool's timer heap) and system-idle-evt (ready when no other thread of
;;; the process runs or is runnable), with Racket's two clocks.
(library (spindle private core alarm)
  (export alarm-evt system-idle-evt current-inexact-milliseconds current-inexact-monotonic-milliseconds)
  (import (chezscheme) (spindle private core scheduler) (spindle private core atomic)
          (spindle private core clock) (spindle private core evt-core))

  (define (current-inexact-milliseconds) (wall-ms))

  (define (current-inexact-monotonic-milliseconds) (monotonic-ms))

  ;; An alarm is ready once its clock reaches msecs.
  (define-record-type alarm
    (parent prim-evt)
    (fields msecs monotonic?)
    (protocol (lambda (new) (lambda (ms mono?) ((new alarm-attempt alarm-cancel) ms mono?))))
    (nongenerative spindle-alarm-evt-v1) (sealed #t))

  (define (alarm-evt msecs . opt)
    (unless (real? msecs) (assertion-violation 'alarm-evt "expected a real number of milliseconds" msecs))
    (make-alarm (inexact msecs) (and (pair? opt) (car opt) #t)))

  ;; Milliseconds from now until the alarm, on the monotonic clock.
  (define (alarm-remaining a)
    (fl- (alarm-msecs a)
         (if (alarm-monotonic? a) (monotonic-ms) (current-inexact-milliseconds))))

  (define (alarm-attempt a s branch register?)
    (assert-atomic 'alarm-attempt)
    (let ([ms (alarm-remaining a)])
      (cond
        [(fl<= ms 0.) (commit-one! s branch (list a))]
        [register?
         (let ([t (syncer-thread s)])
           (add-timer! (gthread-pool t) (fl+ (monotonic-ms) ms)
             (lambda () (commit-partner! s branch (list a)))))]
        [else #f])))

  (define (alarm-cancel a tm)
    (assert-atomic 'alarm-cancel)
    (cancel-timer! tm))

  ;; system-idle-evt: ready (with void) when no thread of the process but
  ;; the syncing one runs or is runnable, in any pool: every other thread is
  ;; parked (on an evt, a timer, a descriptor).  The scheduler has no hook
  ;; for "a pool went idle", so a registered idle evt looks again every
  ;; idle-check-ms on its pool's timer heap until it commits or is cancelled.
  ;; Its token: a box holding the pending timer, or #f once cancelled.
  (define idle-check-ms 2.)

  (define (idle-attempt e s branch register?)
    (assert-atomic 'idle-attempt)
    (let ([self (syncer-thread s)])
      (cond
        [(not (other-threads-busy? self)) (commit-one! s branch (list (void)))]
        [register?
         (let ([token (box #f)] [p (gthread-pool self)])
           (define (check!)
             (when (unbox token)
               (if (or (syncer-done? s) (other-threads-busy? self))
                   (unless (syncer-done? s) (set-box! token (add-timer! p (fl+ (monotonic-ms) idle-check-ms) check!)))
                   (commit-partner! s branch (list (void))))))
           (set-box! token (add-timer! p (fl+ (monotonic-ms) idle-check-ms) check!))
           token)]
        [else #f])))

  ;; Runs with interrupts disabled, as timer actions do: no race with check!.
  (define (idle-cancel e token)
    (assert-atomic 'idle-cancel)
    (let ([tm (unbox token)])
      (set-box! token #f)
      (when tm (cancel-timer! tm))))

  (define the-system-idle-evt (make-prim-evt idle-attempt idle-cancel))
  (define (system-idle-evt) the-system-idle-evt)

  (record-prints-as! (record-type-descriptor alarm) "alarm-evt")
  ;; a dump shows when the alarm is due, from now
  (evt-trace-reason! (record-type-descriptor alarm) 'sleep
    (lambda (a) (list a 'due-in-ms (let ([r (alarm-remaining a)]) (if (flfinite? r) (exact (round r)) r))))))
