#!chezscheme
;;; (util concurrent thread-pool): Kato's thread pools on spindle (doc/reference.md).
;;;
;;; WORKER KIND.  Workers are SRFI-18 threads made in the spindle pool that
;;; the Chez parameter srfi-18-thread-pool names when make-thread-pool is
;;; called; the pool remembers it, and replacement workers (after
;;; thread-pool-thread-terminate!) are made the same way.  The default,
;;; 'own, gives every worker its own OS thread (parallel workers).  For
;;; coroutine workers (green threads on the main OS thread) make the pool
;;; with the parameter set to #f:
;;;
;;;   (parameterize ([srfi-18-thread-pool #f]) (make-thread-pool 4))
;;;
;;; and to run the workers on an existing parallel thread pool P (at most
;;; P's size of them at once): (parameterize ([srfi-18-thread-pool P]) ...).
;;; (srfi-18-thread-pool comes from (spindle) or (spindle thread).)
;;;
;;; Structure.  Each worker has a slot: a FIFO of tasks, a semaphore counting
;;; them, and a state (idle, busy or dead).  Pool bookkeeping (slots, the
;;; FIFO of idle worker ids, waiters of thread-pool-wait-all!) is guarded by
;;; one Chez mutex, held only briefly with interrupts disabled and never
;;; across user code or a blocking call.  An idle worker's queue is always
;;; empty: a push to it makes it busy at once.  thread-pool-wait-all! waits
;;; on a semaphore that the last worker to become idle posts (no polling).
(library (util concurrent thread-pool)
  (export make-thread-pool thread-pool? <thread-pool>
          thread-pool-size thread-pool-idling-count thread-pool-idling?
          thread-pool-push-task! thread-pool-wait-all! thread-pool-release!
          thread-pool-thread-terminate! thread-pool-thread thread-pool-thread-id
          thread-pool-thread-task-running? thread-pool-current-thread-id)
  (import (except (chezscheme) make-mutex mutex? mutex-name thread? sleep
                  make-parameter parameterize)
          (prefix (only (chezscheme) make-mutex) chez:)
          (only (spindle private core atomic) with-os-mutex)
          (only (spindle) make-semaphore semaphore-post semaphore-wait current-thread
                srfi-18-thread-pool)
          (only (spindle private impl thread) make-thread*)
          (only (srfi :18) thread-join! thread-terminate!))

  ;; ---------------------------------------------------------------- records
  (define-record-type slot
    (fields id
            (mutable thread)
            (mutable head) (mutable tail) (mutable count)   ; the task FIFO
            sem                                             ; one unit per queued task
            (mutable state))                                ; idle, busy or dead
    (protocol (lambda (new) (lambda (id) (new id #f '() '() 0 (make-semaphore 0) 'idle))))
    (nongenerative util-concurrent-thread-pool-slot-v1) (sealed #t))

  (define-record-type (<thread-pool> make-pool thread-pool?)
    (fields (immutable slots tp-slots)              ; vector of the current slots
            (immutable lock tp-lock)
            (mutable idle tp-idle tp-idle-set!)      ; FIFO (list) of idle ids
            (mutable idle-count tp-idle-count tp-idle-count-set!)
            (mutable waiters tp-waiters tp-waiters-set!) ; semaphores of wait-all!
            (mutable released tp-released tp-released-set!)
            (immutable error-handler tp-error-handler)
            (immutable spawn-pool tp-spawn-pool))   ; srfi-18-thread-pool at creation
    (nongenerative util-concurrent-thread-pool-v1))

  (define-syntax locked
    (syntax-rules ()
      [(_ tp body1 body ...)
       (with-os-mutex (tp-lock tp) body1 body ...)]))

  ;; thread -> worker id, for thread-pool-current-thread-id
  (define ids (make-weak-eq-hashtable))
  (define ids-lock (chez:make-mutex))
  (define-syntax ids-locked
    (syntax-rules ()
      [(_ body1 body ...) (with-os-mutex ids-lock body1 body ...)]))

  (define (thread-pool-current-thread-id)
    (let ([t (current-thread)]) (ids-locked (hashtable-ref ids t #f))))

  (define stop-marker (list 'stop))

  ;; ---------------------------------------------------------------- locked helpers
  ;; With the lock held.
  (define (enqueue-locked! tp s task)
    (let ([new (list task)])
      (if (pair? (slot-tail s)) (set-cdr! (slot-tail s) new) (slot-head-set! s new))
      (slot-tail-set! s new)
      (slot-count-set! s (+ (slot-count s) 1))
      (when (eq? (slot-state s) 'idle)
        (tp-idle-set! tp (remv (slot-id s) (tp-idle tp)))
        (tp-idle-count-set! tp (- (tp-idle-count tp) 1))
        (slot-state-set! s 'busy))))

  (define (dequeue-locked! s)
    (let ([head (slot-head s)])
      (and (pair? head)
           (begin
             (slot-head-set! s (cdr head))
             (when (null? (cdr head)) (slot-tail-set! s '()))
             (slot-count-set! s (- (slot-count s) 1))
             (car head)))))

  (define (make-idle-locked! tp s)
    (slot-state-set! s 'idle)
    (tp-idle-set! tp (append (tp-idle tp) (list (slot-id s))))
    (tp-idle-count-set! tp (+ (tp-idle-count tp) 1)))

  ;; -> the wait-all! waiters to wake (their list is emptied), or '().
  (define (take-waiters-locked! tp)
    (if (or (tp-released tp) (= (tp-idle-count tp) (vector-length (tp-slots tp))))
        (let ([ws (tp-waiters tp)]) (tp-waiters-set! tp '()) ws)
        '()))

  ;; ---------------------------------------------------------------- workers
  (define (call-error-handler tp c)
    (guard (e [#t #f]) ((tp-error-handler tp) c)))

  (define (worker-body tp s started)
    (lambda ()
      (ids-locked (hashtable-set! ids (current-thread) (slot-id s)))
      (when started (semaphore-post started))
      (let loop ()
        (semaphore-wait (slot-sem s))
        (let ([task (locked tp (and (not (eq? (slot-state s) 'dead)) (dequeue-locked! s)))])
          (cond
            [(or (not task) (eq? task stop-marker))
             (ids-locked (hashtable-delete! ids (current-thread)))]
            [else
             (guard (c [#t (call-error-handler tp c)]) (task))
             (for-each semaphore-post
               (locked tp
                 (if (and (eq? (slot-state s) 'busy) (null? (slot-head s)))
                     (begin (make-idle-locked! tp s) (take-waiters-locked! tp))
                     '())))
             (loop)])))))

  (define (start-worker! tp s started)
    (slot-thread-set! s
      (make-thread* 'make-thread-pool (worker-body tp s started) (tp-spawn-pool tp) #t #t
                    (string->symbol (format "thread-pool-worker-~a" (slot-id s))) #t #f)))

  ;; ---------------------------------------------------------------- creation
  (define (default-error-handler c) #f)

  (define make-thread-pool
    (case-lambda
      [(n) (make-thread-pool n default-error-handler)]
      [(n error-handler)
       (unless (and (integer? n) (exact? n) (> n 0))
         (assertion-violation 'make-thread-pool "expected an exact positive integer" n))
       (unless (procedure? error-handler)
         (assertion-violation 'make-thread-pool "expected a procedure" error-handler))
       (let* ([slots (make-vector n #f)]
              [tp (make-pool slots (chez:make-mutex) (iota n) n '() #f error-handler
                             (srfi-18-thread-pool))]
              [started (make-semaphore 0)])
         (do ([i 0 (+ i 1)]) ((= i n)) (vector-set! slots i (make-slot i)))
         (do ([i 0 (+ i 1)]) ((= i n)) (start-worker! tp (vector-ref slots i) started))
         ;; every worker is up (and idle) before the pool is returned
         (do ([i 0 (+ i 1)]) ((= i n)) (semaphore-wait started))
         tp)]))

  (define (check-tp who tp)
    (unless (thread-pool? tp) (assertion-violation who "expected a thread pool" tp)))

  (define (check-id who tp id)
    (unless (and (integer? id) (exact? id) (<= 0 id) (< id (vector-length (tp-slots tp))))
      (assertion-violation who "expected a worker id of the pool" id)))

  (define (thread-pool-size tp)
    (check-tp 'thread-pool-size tp)
    (vector-length (tp-slots tp)))

  (define (thread-pool-idling-count tp)
    (check-tp 'thread-pool-idling-count tp)
    (tp-idle-count tp))

  (define (thread-pool-idling? tp)
    (check-tp 'thread-pool-idling? tp)
    (> (tp-idle-count tp) 0))

  ;; ---------------------------------------------------------------- tasks
  (define (default-add-to-back n) (if (negative? n) 0 n))

  (define (raise-released who tp)
    (assertion-violation who "the thread pool has been released" tp))

  (define thread-pool-push-task!
    (case-lambda
      [(tp thunk) (thread-pool-push-task! tp thunk default-add-to-back)]
      [(tp thunk add-to-back)
       (check-tp 'thread-pool-push-task! tp)
       (unless (procedure? thunk)
         (assertion-violation 'thread-pool-push-task! "expected a procedure" thunk))
       (unless (procedure? add-to-back)
         (assertion-violation 'thread-pool-push-task! "expected a procedure" add-to-back))
       (let ([slots (tp-slots tp)])
         ;; an idle worker, if any
         (let ([r (locked tp
                    (cond
                      [(tp-released tp) 'released]
                      [(pair? (tp-idle tp))
                       (let ([s (vector-ref slots (car (tp-idle tp)))])
                         (enqueue-locked! tp s thunk)
                         s)]
                      [else #f]))])
           (cond
             [(eq? r 'released) (raise-released 'thread-pool-push-task! tp)]
             [r (semaphore-post (slot-sem r)) (slot-id r)]
             [else
              ;; none: the least-loaded worker add-to-back finds eligible
              (let* ([n (vector-length slots)]
                     [loads (locked tp (let ([v (make-vector n 0)])
                                         (do ([i 0 (+ i 1)]) ((= i n) v)
                                           (vector-set! v i (slot-count (vector-ref slots i))))))]
                     [best (let loop ([i 0] [best -1])
                             (cond
                               [(= i n) best]
                               [(and (add-to-back i)
                                     (or (< best 0) (< (vector-ref loads i) (vector-ref loads best))))
                                (loop (+ i 1) i)]
                               [else (loop (+ i 1) best)]))]
                     [where (add-to-back best)])
                (check-id 'thread-pool-push-task! tp where)
                (let ([s (locked tp
                           (and (not (tp-released tp))
                                (let ([s (vector-ref slots where)])
                                  (enqueue-locked! tp s thunk)
                                  s)))])
                  (unless s (raise-released 'thread-pool-push-task! tp))
                  (semaphore-post (slot-sem s))
                  where))])))]))

  (define (thread-pool-wait-all! tp)
    (check-tp 'thread-pool-wait-all! tp)
    (let ([me (make-semaphore 0)])
      (when (locked tp
              (and (not (tp-released tp))
                   (< (tp-idle-count tp) (vector-length (tp-slots tp)))
                   (begin (tp-waiters-set! tp (cons me (tp-waiters tp))) #t)))
        (semaphore-wait me))
      #t))

  (define thread-pool-release!
    (case-lambda
      [(tp) (thread-pool-release! tp 'join)]
      [(tp how)
       (check-tp 'thread-pool-release! tp)
       (unless (memq how '(join terminate))
         (assertion-violation 'thread-pool-release! "expected 'join or 'terminate" how))
       (let* ([slots (tp-slots tp)]
              [first? (locked tp
                        (and (not (tp-released tp))
                             (begin
                               (vector-for-each
                                 (lambda (s)
                                   (when (eq? how 'terminate)
                                     (slot-head-set! s '())
                                     (slot-tail-set! s '())
                                     (slot-count-set! s 0))
                                   (enqueue-locked! tp s stop-marker))
                                 slots)
                               (tp-released-set! tp #t)
                               #t)))])
         (when first?
           (vector-for-each (lambda (s) (semaphore-post (slot-sem s))) slots)
           (for-each semaphore-post (locked tp (take-waiters-locked! tp))))
         (vector-for-each
           (lambda (s)
             (let ([t (slot-thread s)])
               (unless (eq? t (current-thread))
                 (if (eq? how 'terminate)
                     (thread-terminate! t)
                     (guard (e [#t #f]) (thread-join! t))))))
           slots)
         (void))]))

  ;; ---------------------------------------------------------------- workers by id
  (define (thread-pool-thread-terminate! tp id)
    (check-tp 'thread-pool-thread-terminate! tp)
    (check-id 'thread-pool-thread-terminate! tp id)
    (let* ([slots (tp-slots tp)]
           [new (make-slot id)]
           [old (locked tp
                  (and (not (tp-released tp))
                       (let ([old (vector-ref slots id)])
                         (when (eq? (slot-state old) 'idle)
                           (tp-idle-set! tp (remv id (tp-idle tp)))
                           (tp-idle-count-set! tp (- (tp-idle-count tp) 1)))
                         ;; drop its queue
                         (slot-state-set! old 'dead)
                         (slot-head-set! old '())
                         (slot-tail-set! old '())
                         (slot-count-set! old 0)
                         (make-idle-locked! tp new)
                         (vector-set! slots id new)
                         old)))])
      (unless old (raise-released 'thread-pool-thread-terminate! tp))
      (start-worker! tp new #f)
      (let ([t (slot-thread old)])
        (ids-locked (hashtable-delete! ids t))
        (for-each semaphore-post (locked tp (take-waiters-locked! tp)))
        (thread-terminate! t))
      (void)))

  (define (thread-pool-thread tp id)
    (check-tp 'thread-pool-thread tp)
    (check-id 'thread-pool-thread tp id)
    (slot-thread (vector-ref (tp-slots tp) id)))

  (define (thread-pool-thread-id tp thread)
    (check-tp 'thread-pool-thread-id tp)
    (let ([slots (tp-slots tp)])
      (let loop ([i 0])
        (cond
          [(= i (vector-length slots))
           (error 'thread-pool-thread-id "not a managed thread" thread)]
          [(eq? (slot-thread (vector-ref slots i)) thread) i]
          [else (loop (+ i 1))]))))

  (define (thread-pool-thread-task-running? tp id)
    (check-tp 'thread-pool-thread-task-running? tp)
    (check-id 'thread-pool-thread-task-running? tp id)
    (not (eq? (slot-state (vector-ref (tp-slots tp) id)) 'idle))))
