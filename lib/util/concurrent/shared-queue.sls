#!chezscheme
;;; (util concurrent shared-queue): Kato's shared queues on
;;; spindle.
;;;
;;; A queue is guarded by one SRFI-18 mutex (the one shared-queue-lock!,
;;; -unlock! and -locked? expose); blocked getters and putters wait on two
;;; SRFI-18 condition variables, joined atomically with the unlock, so no
;;; wake-up is lost.  Every wake-up is a broadcast: a waiter that timed out
;;; or was killed never swallows a signal meant for another.
;;;
;;; Kill-safety: each change to the queue's structure is committed with
;;; interrupts disabled (user procedures -- compare, =, find's pred -- run
;;; before the commit, never inside it), so a thread killed while holding
;;; the lock leaves the queue consistent; its mutex is abandoned and the
;;; next operation takes it over.
;;;
;;; Plain queue: a list with a tail pointer.  Priority queue: an immutable
;;; pairing heap, replaced by one store per change.
(library (util concurrent shared-queue)
  (export make-shared-queue shared-queue? <shared-queue>
          shared-queue-empty? shared-queue-size shared-queue-max-length
          shared-queue-overflows? shared-queue-put! shared-queue-get!
          shared-queue-remove! shared-queue-clear! shared-queue-find
          shared-queue-locked? shared-queue-lock! shared-queue-unlock!
          make-shared-priority-queue shared-priority-queue? <shared-priority-queue>
          shared-priority-queue-empty? shared-priority-queue-size
          shared-priority-queue-max-length shared-priority-queue-overflows?
          shared-priority-queue-put! shared-priority-queue-get!
          shared-priority-queue-remove! shared-priority-queue-clear!
          shared-priority-queue-locked? shared-priority-queue-lock!
          shared-priority-queue-unlock!)
  (import (except (chezscheme) make-mutex mutex? mutex-name thread? sleep
                  make-parameter parameterize)
          (only (spindle) current-inexact-monotonic-milliseconds current-thread thread-dead?)
          (only (srfi :18) make-mutex mutex-lock! mutex-unlock! mutex-state
                make-condition-variable condition-variable-broadcast!
                abandoned-mutex-exception? thread?))

  ;; ---------------------------------------------------------------- timeouts
  ;; timeout: #f (forever), a real (relative seconds, <= 0: no wait), a
  ;; time-utc/time-monotonic (absolute) or time-duration (relative).
  ;; -> #f or a deadline in monotonic milliseconds.
  (define (timeout->deadline who timeout)
    (define (secs t) (+ (time-second t) (/ (time-nanosecond t) 1e9)))
    (let ([now (current-inexact-monotonic-milliseconds)])
      (cond
        [(not timeout) #f]
        [(real? timeout) (+ now (* 1000. timeout))]
        [(time? timeout)
         (case (time-type timeout)
           [(time-duration) (+ now (* 1000. (secs timeout)))]
           [(time-utc time-monotonic)
            (+ now (* 1000. (- (secs timeout) (secs (current-time (time-type timeout))))))]
           [else (assertion-violation who "unsupported time type" timeout)])]
        [else (assertion-violation who "expected #f, a real number or a time object" timeout)])))

  ;; Seconds left before deadline (> 0), or #f once it has passed.
  (define (seconds-left deadline)
    (let ([ms (- deadline (current-inexact-monotonic-milliseconds))])
      (and (> ms 0) (/ ms 1000.))))

  ;; ---------------------------------------------------------------- common core
  ;; Shared by both queue kinds (neither is a subtype of the other).
  ;; getters: a box holding the list of threads inside get! (waiting or
  ;; about to); putters: a box counting the threads inside put!.  Both are
  ;; changed by CAS, so a waiter that gives up without the lock can still
  ;; leave.  A getter killed while waiting stays listed, so the hand-off
  ;; check counts only live getters.
  (define-record-type sync-queue
    (fields (mutable size) max-length lock read-cv write-cv getters putters)
    (nongenerative util-concurrent-sync-queue-v1))

  (define (new-core new max-length)
    (new 0 max-length (make-mutex 'shared-queue) (make-condition-variable)
         (make-condition-variable) (box '()) (box 0)))

  (define (count-add! b n)
    (let loop () (let ([v (unbox b)]) (unless (box-cas! b v (+ v n)) (loop)))))

  (define (getter-add! b t)
    (let loop () (let ([v (unbox b)]) (unless (box-cas! b v (cons t v)) (loop)))))
  (define (getter-remove! b t)
    (let loop () (let ([v (unbox b)]) (unless (box-cas! b v (remq t v)) (loop)))))

  (define (getters? q) (pair? (unbox (sync-queue-getters q))))
  (define (live-getters q)
    (fold-left (lambda (n t) (if (thread-dead? t) n (+ n 1))) 0 (unbox (sync-queue-getters q))))
  (define (putters q) (unbox (sync-queue-putters q)))

  (define (check-max-length who n)
    (unless (integer? n) (assertion-violation who "max-length must be an integer" n))
    (exact n))

  ;; Takes the lock (by the deadline, if any: -> #f when it could not); an
  ;; abandoned lock (its holder was killed) is taken over.
  (define (lock! q deadline)
    (guard (e [(abandoned-mutex-exception? e) #t])
      (if deadline
          (mutex-lock! (sync-queue-lock q) (or (seconds-left deadline) 0))
          (mutex-lock! (sync-queue-lock q)))))

  (define (unlock! q) (mutex-unlock! (sync-queue-lock q)))

  ;; Runs (body wait) with the lock held, releasing it on any escape; if the
  ;; lock cannot be had by the deadline, (on-timeout) instead.  (wait cv)
  ;; releases the lock, waits for a broadcast on cv (or the deadline), takes
  ;; the lock again and returns #t; #f when the lock could not be retaken by
  ;; the deadline (then it is not held).
  (define (call-locked q deadline on-timeout body)
    (let ([held? #f])
      (dynamic-wind
        void
        (lambda ()
          (if (lock! q deadline)
              (begin
                (set! held? #t)
                (body (lambda (cv)
                        (let ([left (and deadline (seconds-left deadline))])
                          (or (and deadline (not left))       ; no time left: keep the lock
                              (begin
                                (set! held? #f)
                                (if left
                                    (mutex-unlock! (sync-queue-lock q) cv left)
                                    (mutex-unlock! (sync-queue-lock q) cv))
                                (and (lock! q deadline) (begin (set! held? #t) #t))))))))
              (on-timeout)))
        (lambda () (when held? (set! held? #f) (unlock! q))))))

  (define (wake-getters! q)
    (when (getters? q) (condition-variable-broadcast! (sync-queue-read-cv q))))
  (define (wake-putters! q)
    (when (> (putters q) 0) (condition-variable-broadcast! (sync-queue-write-cv q))))

  ;; max 0 (hand-off): room only for a getter that waits and has no item yet.
  (define (full? q)
    (let ([max (sync-queue-max-length q)] [size (sync-queue-size q)])
      (cond
        [(< max 0) #f]
        [(= max 0) (<= (live-getters q) size)]
        [else (>= size max)])))

  (define (overflows? q count)
    (let ([max (sync-queue-max-length q)])
      (and (>= max 0) (> (+ (sync-queue-size q) count) max))))

  (define (opt-timeout who opt)
    (let ([timeout (if (pair? opt) (car opt) #f)]
          [timeout-val (if (and (pair? opt) (pair? (cdr opt))) (cadr opt) #f)])
      (when (and (pair? opt) (pair? (cdr opt)) (pair? (cddr opt)))
        (assertion-violation who "too many arguments" opt))
      (values (timeout->deadline who timeout) timeout-val)))

  (define (timed-out? deadline) (and deadline (not (seconds-left deadline))))

  ;; (prepare) -> commit thunk (may call user code); the commit runs with
  ;; interrupts disabled and must not call user code.
  (define (core-put! q obj deadline timeout-val prepare)
    (define pb (sync-queue-putters q))
    (call-locked q deadline (lambda () timeout-val)
      (lambda (wait)
        (let loop ([waiting? #f])
          (cond
            [(not (full? q))
             (when waiting? (count-add! pb -1))
             (let ([commit (prepare)])
               (with-interrupts-disabled
                 (commit)
                 (sync-queue-size-set! q (+ (sync-queue-size q) 1))))
             (wake-getters! q)
             obj]
            [(timed-out? deadline)
             (when waiting? (count-add! pb -1))
             timeout-val]
            [else
             (unless waiting? (count-add! pb 1))
             (if (wait (sync-queue-write-cv q))
                 (loop #t)
                 (begin (count-add! pb -1) timeout-val))])))))

  ;; (take) -> (values element commit-thunk).
  (define (core-get! q deadline timeout-val take)
    (define gb (sync-queue-getters q))
    (define me (current-thread))
    (call-locked q deadline (lambda () timeout-val)
      (lambda (wait)
        (getter-add! gb me)
        ;; a hand-off putter may go now
        (when (= (sync-queue-max-length q) 0) (wake-putters! q))
        (let loop ()
          (cond
            [(> (sync-queue-size q) 0)
             (let-values ([(e commit) (guard (c [#t (getter-remove! gb me) (raise c)]) (take))])
               (with-interrupts-disabled
                 (commit)
                 (sync-queue-size-set! q (- (sync-queue-size q) 1)))
               (getter-remove! gb me)
               (wake-putters! q)
               e)]
            [(timed-out? deadline)
             (getter-remove! gb me)
             timeout-val]
            [(wait (sync-queue-read-cv q)) (loop)]
            [else (getter-remove! gb me) timeout-val])))))

  ;; Without a deadline.
  (define (with-lock q body) (call-locked q #f void body))

  (define (core-locked? q opt)
    (let ([wait? (and (pair? opt) (car opt))])
      (and (thread? (mutex-state (sync-queue-lock q)))
           (if wait?
               (begin (lock! q #f) (unlock! q) #f)
               #t))))

  ;; ---------------------------------------------------------------- shared queue
  (define-record-type (<shared-queue> make-shared-queue shared-queue?)
    (parent sync-queue)
    (fields (mutable head shared-queue-head shared-queue-head-set!)
            (mutable tail shared-queue-tail shared-queue-tail-set!))
    (protocol
      (lambda (new)
        (case-lambda
          [() ((new-core new -1) '() '())]
          [(max-length)
           ((new-core new (check-max-length 'make-shared-queue max-length)) '() '())])))
    (nongenerative util-concurrent-shared-queue-v1))

  (define (check-sq who sq)
    (unless (shared-queue? sq) (assertion-violation who "expected a shared queue" sq)))

  (define (shared-queue-empty? sq)
    (check-sq 'shared-queue-empty? sq)
    (= (sync-queue-size sq) 0))

  (define (shared-queue-size sq)
    (check-sq 'shared-queue-size sq)
    (sync-queue-size sq))

  (define (shared-queue-max-length sq)
    (check-sq 'shared-queue-max-length sq)
    (sync-queue-max-length sq))

  (define (check-count who count)
    (unless (and (integer? count) (exact? count))
      (assertion-violation who "expected an exact integer" count)))

  (define (shared-queue-overflows? sq count)
    (check-sq 'shared-queue-overflows? sq)
    (check-count 'shared-queue-overflows? count)
    (overflows? sq count))

  (define (shared-queue-put! sq obj . opt)
    (check-sq 'shared-queue-put! sq)
    (let-values ([(deadline timeout-val) (opt-timeout 'shared-queue-put! opt)])
      (core-put! sq obj deadline timeout-val
        (lambda ()
          (let ([new (list obj)])
            (lambda ()
              (let ([tail (shared-queue-tail sq)])
                (if (pair? tail) (set-cdr! tail new) (shared-queue-head-set! sq new))
                (shared-queue-tail-set! sq new))))))))

  (define (shared-queue-get! sq . opt)
    (check-sq 'shared-queue-get! sq)
    (let-values ([(deadline timeout-val) (opt-timeout 'shared-queue-get! opt)])
      (core-get! sq deadline timeout-val
        (lambda ()
          (let ([head (shared-queue-head sq)])
            (values (car head)
                    (lambda ()
                      (shared-queue-head-set! sq (cdr head))
                      (when (null? (cdr head)) (shared-queue-tail-set! sq '())))))))))

  (define shared-queue-remove!
    (case-lambda
      [(sq obj) (shared-queue-remove! sq obj equal?)]
      [(sq obj =)
       (check-sq 'shared-queue-remove! sq)
       (unless (procedure? =) (assertion-violation 'shared-queue-remove! "expected a procedure" =))
       (with-lock sq
         (lambda (wait)
           ;; find the pair before the first match (user code, no change yet)
           (let loop ([prev #f] [l (shared-queue-head sq)])
             (cond
               [(null? l) #f]
               [(= (car l) obj)
                (with-interrupts-disabled
                  (if prev (set-cdr! prev (cdr l)) (shared-queue-head-set! sq (cdr l)))
                  (when (null? (cdr l)) (shared-queue-tail-set! sq (or prev '())))
                  (sync-queue-size-set! sq (- (sync-queue-size sq) 1)))
                (wake-putters! sq)
                #t]
               [else (loop l (cdr l))]))))]))

  (define (shared-queue-clear! sq)
    (check-sq 'shared-queue-clear! sq)
    (with-lock sq
      (lambda (wait)
        (with-interrupts-disabled
          (shared-queue-head-set! sq '())
          (shared-queue-tail-set! sq '())
          (sync-queue-size-set! sq 0))
        (wake-putters! sq)))
    (void))

  (define (shared-queue-find sq pred)
    (check-sq 'shared-queue-find sq)
    (unless (procedure? pred) (assertion-violation 'shared-queue-find "expected a procedure" pred))
    (with-lock sq (lambda (wait) (find pred (shared-queue-head sq)))))

  (define (shared-queue-locked? sq . opt)
    (check-sq 'shared-queue-locked? sq)
    (core-locked? sq opt))

  (define (shared-queue-lock! sq)
    (check-sq 'shared-queue-lock! sq)
    (lock! sq #f)
    #t)

  (define (shared-queue-unlock! sq)
    (check-sq 'shared-queue-unlock! sq)
    (unlock! sq)
    #t)

  ;; ---------------------------------------------------------------- priority queue
  ;; Pairing heap: #f (empty) or (element . subheaps), never mutated.
  (define (heap-merge cmp a b)
    (cond
      [(not a) b]
      [(not b) a]
      [(<= (cmp (car a) (car b)) 0) (cons (car a) (cons b (cdr a)))]
      [else (cons (car b) (cons a (cdr b)))]))

  (define (heap-merge-pairs cmp hs)
    (cond
      [(null? hs) #f]
      [(null? (cdr hs)) (car hs)]
      [else (heap-merge cmp (heap-merge cmp (car hs) (cadr hs))
                        (heap-merge-pairs cmp (cddr hs)))]))

  (define (heap-insert cmp h x) (heap-merge cmp (list x) h))

  (define (heap->list h)
    (let walk ([h h] [acc '()])
      (if h (fold-left (lambda (acc sub) (walk sub acc)) (cons (car h) acc) (cdr h)) acc)))

  (define-record-type (<shared-priority-queue> make-shared-priority-queue shared-priority-queue?)
    (parent sync-queue)
    (fields (immutable compare shared-priority-queue-compare)
            (mutable heap shared-priority-queue-heap shared-priority-queue-heap-set!))
    (protocol
      (lambda (new)
        (define (make compare max)
          (unless (procedure? compare)
            (assertion-violation 'make-shared-priority-queue "expected a procedure" compare))
          ((new-core new (check-max-length 'make-shared-priority-queue max)) compare #f))
        (case-lambda
          [(compare) (make compare -1)]
          [(compare max-length) (make compare max-length)])))
    (nongenerative util-concurrent-shared-priority-queue-v1))

  (define (check-spq who spq)
    (unless (shared-priority-queue? spq)
      (assertion-violation who "expected a shared priority queue" spq)))

  (define (shared-priority-queue-empty? spq)
    (check-spq 'shared-priority-queue-empty? spq)
    (= (sync-queue-size spq) 0))

  (define (shared-priority-queue-size spq)
    (check-spq 'shared-priority-queue-size spq)
    (sync-queue-size spq))

  (define (shared-priority-queue-max-length spq)
    (check-spq 'shared-priority-queue-max-length spq)
    (sync-queue-max-length spq))

  (define (shared-priority-queue-overflows? spq count)
    (check-spq 'shared-priority-queue-overflows? spq)
    (check-count 'shared-priority-queue-overflows? count)
    (overflows? spq count))

  (define (shared-priority-queue-put! spq obj . opt)
    (check-spq 'shared-priority-queue-put! spq)
    (let-values ([(deadline timeout-val) (opt-timeout 'shared-priority-queue-put! opt)])
      (core-put! spq obj deadline timeout-val
        (lambda ()
          (let ([h (heap-insert (shared-priority-queue-compare spq)
                                (shared-priority-queue-heap spq) obj)])
            (lambda () (shared-priority-queue-heap-set! spq h)))))))

  (define (shared-priority-queue-get! spq . opt)
    (check-spq 'shared-priority-queue-get! spq)
    (let-values ([(deadline timeout-val) (opt-timeout 'shared-priority-queue-get! opt)])
      (core-get! spq deadline timeout-val
        (lambda ()
          (let* ([h (shared-priority-queue-heap spq)]
                 [rest (heap-merge-pairs (shared-priority-queue-compare spq) (cdr h))])
            (values (car h) (lambda () (shared-priority-queue-heap-set! spq rest))))))))

  (define (shared-priority-queue-remove! spq o)
    (check-spq 'shared-priority-queue-remove! spq)
    (let ([cmp (shared-priority-queue-compare spq)])
      (with-lock spq
        (lambda (wait)
          (let loop ([l (heap->list (shared-priority-queue-heap spq))] [seen '()])
            (cond
              [(null? l) #f]
              [(zero? (cmp o (car l)))
               (let ([h (fold-left (lambda (h x) (heap-insert cmp h x)) #f
                                   (append (reverse seen) (cdr l)))])
                 (with-interrupts-disabled
                   (shared-priority-queue-heap-set! spq h)
                   (sync-queue-size-set! spq (- (sync-queue-size spq) 1))))
               (wake-putters! spq)
               #t]
              [else (loop (cdr l) (cons (car l) seen))]))))))

  (define (shared-priority-queue-clear! spq)
    (check-spq 'shared-priority-queue-clear! spq)
    (with-lock spq
      (lambda (wait)
        (with-interrupts-disabled
          (shared-priority-queue-heap-set! spq #f)
          (sync-queue-size-set! spq 0))
        (wake-putters! spq)))
    (void))

  (define (shared-priority-queue-locked? spq . opt)
    (check-spq 'shared-priority-queue-locked? spq)
    (core-locked? spq opt))

  (define (shared-priority-queue-lock! spq)
    (check-spq 'shared-priority-queue-lock! spq)
    (lock! spq #f)
    #t)

  (define (shared-priority-queue-unlock! spq)
    (check-spq 'shared-priority-queue-unlock! spq)
    (unlock! spq)
    #t))
