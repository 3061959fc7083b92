#!chezscheme
;;; Semaphores.  The count lives in a box so that uncontended post and
;;; wait are one CAS.  The box holds n >= 0 (n available, no waiters), or
;;; -1 (count 0 and waiters may be queued); it leaves -1 only under the lock.
(library (spindle private impl semaphore)
  (export (rename (make-semaphore* make-semaphore)) semaphore? semaphore-post semaphore-wait
          semaphore-try-wait? semaphore-wait/enable-break
          semaphore-peek-evt semaphore-peek-evt?
          call-with-semaphore call-with-semaphore/enable-break
          semaphore-count-now)
  (import (chezscheme) (spindle private core queue) (spindle private core scheduler) (spindle private core atomic)
          (spindle private core evt-core) (spindle private core sync)
          (only (spindle private core thread-requests) call-with-break-enabled)
          (only (spindle private core gthread) gthread-break-enabled?))

  (define-record-type semaphore
    (parent prim-evt)
    (fields count lock takers peekers)   ; lock: a spin-lock box, held with interrupts disabled (not re-entrant)
    (protocol
      (lambda (new)
        (lambda (n)
          ((new sema-attempt sema-cancel) (box n) (box #f) (make-queue) (make-queue)))))
    (nongenerative spindle-semaphore-v1))

  (define-record-type peek
    (parent prim-evt)
    (fields sema)
    (protocol (lambda (new) (lambda (s) ((new peek-attempt peek-cancel) s))))
    (nongenerative spindle-semaphore-peek-v1) (sealed #t))

  (define (semaphore-peek-evt? v) (peek? v))

  (define max-count (most-positive-fixnum))

  (define make-semaphore*
    (case-lambda
      [() (make-semaphore 0)]
      [(n)
       (unless (and (integer? n) (exact? n) (>= n 0))
         (assertion-violation 'make-semaphore "expected an exact non-negative integer" n))
       (when (>= n max-count)
         (error 'make-semaphore "initial count is above the maximum" n))
       (make-semaphore n)]))

  (define (check who s)
    (unless (semaphore? s) (assertion-violation who "expected a semaphore" s)))

  ;; ---- attempts (interrupts disabled)
  (define (take! sem s branch)
    ;; decrement a positive count for syncer s; #t if done
    (let ([b (semaphore-count sem)])
      (let loop ()
        (let ([n (unbox b)])
          (and (fx> n 0)
               (claim! s)
               (if (box-cas! b n (fx- n 1))
                   (begin (finish! s branch (list sem)) #t)
                   (begin (unclaim! s) (loop))))))))

  ;; With the lock held: mark that waiters exist (count is 0 then).
  (define (mark-waiting! sem)
    (let ([b (semaphore-count sem)])
      (let loop ()
        (let ([n (unbox b)])
          (cond
            [(fx= n -1) #t]
            [(fx= n 0) (or (box-cas! b 0 -1) (loop))]
            [else #f])))))          ; count became positive: retry the take

  (define (sema-attempt sem s branch register?)
    (assert-atomic 'sema-attempt)
    (or (take! sem s branch)
        (and register?
             (begin
               (spin-lock! (semaphore-lock sem))
               (let loop ()
                 (cond
                   [(mark-waiting! sem)
                    (let ([node (queue-push! (semaphore-takers sem) (make-waiter s branch #f))])
                      (spin-unlock! (semaphore-lock sem))
                      node)]
                   [(take! sem s branch) (spin-unlock! (semaphore-lock sem)) #t]
                   [(syncer-done? s) (spin-unlock! (semaphore-lock sem)) #f]
                   [else (loop)]))))))

  (define (unmark-if-idle! sem)
    (when (and (queue-empty? (semaphore-takers sem)) (queue-empty? (semaphore-peekers sem)))
      (set-box! (semaphore-count sem) 0)))

  (define (sema-cancel sem node)
    (assert-atomic 'sema-cancel)
    (spin-lock! (semaphore-lock sem))
    (queue-remove! (semaphore-takers sem) node)
    (queue-remove! (semaphore-peekers sem) node)
    (when (fx= (unbox (semaphore-count sem)) -1) (unmark-if-idle! sem))
    (spin-unlock! (semaphore-lock sem)))

  (define (peek-attempt pk s branch register?)
    (assert-atomic 'peek-attempt)
    (let* ([sem (peek-sema pk)] [b (semaphore-count sem)])
      (cond
        [(fx> (unbox b) 0) (commit-one! s branch (list pk))]
        [register?
         (spin-lock! (semaphore-lock sem))
         (let loop ()
           (cond
             [(mark-waiting! sem)
              (let ([node (queue-push! (semaphore-peekers sem) (make-waiter s branch pk))])
                (spin-unlock! (semaphore-lock sem))
                node)]
             [(fx> (unbox b) 0) (spin-unlock! (semaphore-lock sem)) (commit-one! s branch (list pk))]
             [else (loop)]))]
        [else #f])))

  (define (peek-cancel pk node) (sema-cancel (peek-sema pk) node))

  ;; ---- operations
  (define (semaphore-post sem)
    (check 'semaphore-post sem)
    (sim-point!)
    (let ([b (semaphore-count sem)])
      (let loop ()
        (let ([n (unbox b)])
          (cond
            ;; the largest count is max-count - 1, as for make-semaphore
            [(fx>= n (fx- max-count 1)) (error 'semaphore-post "semaphore count is at its maximum" sem)]
            [(fx>= n 0) (unless (box-cas! b n (fx+ n 1)) (loop))]
            [else (with-interrupts-disabled (post-slow! sem))])))))

  ;; Count is 0 with waiters queued: wake every peeker and hand the unit to
  ;; the first live taker, or keep it if there is none.
  (define (post-slow! sem)
    (spin-lock! (semaphore-lock sem))
    (let ([b (semaphore-count sem)])
      (if (fx= (unbox b) -1)
          (begin
            (let peekers ()
              (let ([w (queue-pop! (semaphore-peekers sem) #f)])
                (when w
                  (commit-partner! (waiter-syncer w) (waiter-branch w) (list (waiter-value w)))
                  (peekers))))
            (let takers ()
              (let ([w (queue-pop! (semaphore-takers sem) #f)])
                (cond
                  [(not w) (set-box! b 1)]
                  [(commit-partner! (waiter-syncer w) (waiter-branch w) (list sem))
                   (unmark-if-idle! sem)]
                  [else (takers)]))))
          ;; the waiters left meanwhile: an ordinary increment
          (let loop () (let ([n (unbox b)]) (unless (box-cas! b n (fx+ n 1)) (loop))))))
    (spin-unlock! (semaphore-lock sem)))

  ;; A snapshot of the count (for fsemaphore-count).
  (define (semaphore-count-now sem) (fxmax 0 (unbox (semaphore-count sem))))

  (define (semaphore-try-wait? sem)
    (check 'semaphore-try-wait? sem)
    (let ([b (semaphore-count sem)])
      (let loop ()
        (let ([n (unbox b)])
          (and (fx> n 0) (if (box-cas! b n (fx- n 1)) #t (loop)))))))

  ;; The fast path (a count to take) is no cancellation checkpoint and
  ;; stamps nothing (see (spindle private core sync)): it stays a CAS.
  (define (semaphore-wait sem)
    (check 'semaphore-wait sem)
    (let ([b (semaphore-count sem)])
      (let loop ()
        (let ([n (unbox b)])
          (if (fx> n 0)
              (if (box-cas! b n (fx- n 1)) (sim-point!) (loop))
              (sync-prim sem #t))))))   ; a tail call: one frame fewer when parked

  (define (semaphore-wait/enable-break sem)
    (check 'semaphore-wait/enable-break sem)
    (sync/enable-break sem)
    (void))

  (define (semaphore-peek-evt sem)
    (check 'semaphore-peek-evt sem)
    (make-peek sem))

  ;; Neither a cancellation nor a break comes between taking the count and
  ;; the winder that gives it back: the take and the winder's installation
  ;; run with breaks disabled (a /enable-break wait enables them for its
  ;; own wait only, where a break comes before the take or not at all), and
  ;; with a sync's return stamp (see before-take!); proc runs with the
  ;; caller's break state.
  (define (call-with-sema who wait sem proc try-fail args)
    (check who sem)
    (unless (procedure? proc) (assertion-violation who "expected a procedure" proc))
    (before-take! (not try-fail))
    (let ([breaks? (gthread-break-enabled? (current-gthread))])
      (call-with-break-enabled #f
        (lambda ()
          (if (and try-fail (not (semaphore-try-wait? sem)))
              (call-with-break-enabled breaks? try-fail)
              (let ([entered #f])
                (unless try-fail (wait sem))
                (dynamic-wind
                  (lambda ()
                    (when entered (assertion-violation who "cannot re-enter by continuation" proc))
                    (set! entered #t))
                  (lambda () (call-with-break-enabled breaks? (lambda () (apply proc args))))
                  (lambda () (semaphore-post sem)))))))))

  (define call-with-semaphore
    (case-lambda
      [(sem proc) (call-with-sema 'call-with-semaphore semaphore-wait sem proc #f '())]
      [(sem proc try-fail . args)
       (call-with-sema 'call-with-semaphore semaphore-wait sem proc try-fail args)]))

  (define call-with-semaphore/enable-break
    (case-lambda
      [(sem proc) (call-with-sema 'call-with-semaphore/enable-break semaphore-wait/enable-break sem proc #f '())]
      [(sem proc try-fail . args)
       (call-with-sema 'call-with-semaphore/enable-break semaphore-wait/enable-break sem proc try-fail args)]))

  (record-prints-as! (record-type-descriptor semaphore) "semaphore")
  (record-prints-as! (record-type-descriptor peek) "semaphore-peek-evt")
  (evt-trace-reason! (record-type-descriptor semaphore) 'semaphore (lambda (s) (list s 'wait)))
  (evt-trace-reason! (record-type-descriptor peek) 'semaphore (lambda (e) (list (peek-sema e) 'peek))))
