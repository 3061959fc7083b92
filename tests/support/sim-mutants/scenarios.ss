#!chezscheme
;;; The mutation check of (spindle simulation): scenarios that fail when
;;; one race fixed earlier in spindle's history is put back (run.sh puts
;;; each back in turn), run either under simulate-many or as a plain
;;; stress loop of real threads.
;;;
;;;   scheme ... --program scenarios.ss NAME sim RUNS      seeds 1..RUNS
;;;   scheme ... --program scenarios.ss NAME stress RUNS SECONDS
;;;
;;; Prints one line: NAME MODE found-at K (the run that failed) or
;;; NAME MODE not-found N (runs made).  The threads are parallel threads
;;; on a pool of 2 workers, so the stress loop has real parallelism.
(import (except (chezscheme) thread? sleep make-parameter parameterize)
        (spindle) (spindle simulation))

(define (pool) (make-parallel-thread-pool 2))

(define (spin n) (let loop ([i 0]) (when (< i n) (yield) (loop (+ i 1)))))

;; Starts a task scope in a thread; returns (values thread scope).
(define (scoped-thread p body)
  (let* ([ready (make-semaphore 0)] [scope #f]
         [t (thread (lambda ()
                      (call-with-task-scope
                        (lambda (sc) (set! scope sc) (semaphore-post ready) (body))))
                    #:pool p)])
    (semaphore-wait ready)
    (values t scope)))

;; f74085b: a cancelled thread's cleanup (call-with-semaphore's post in
;; its dynamic-wind exit) is cancelled again at a preemption, so the
;; semaphore stays held.
(define (cleanup-recancelled)
  (let ([s (make-semaphore 1)] [p (pool)])
    (let-values ([(t sc) (scoped-thread p (lambda () (call-with-semaphore s (lambda () (spin 300)))))])
      (spin 20)
      (scope-cancel! sc)
      (thread-wait t)
      (parallel-thread-pool-close p)
      (unless (semaphore-try-wait? s) (error 'cleanup "the semaphore was left held")))))

;; 9a988c7: call-with-semaphore takes the count (semaphore-wait's fast
;; path) and a cancellation at a preemption before its dynamic-wind keeps
;; the count for ever.
(define (take-then-cancelled)
  (let ([s (make-semaphore 1)] [p (pool)])
    (let-values ([(t sc) (scoped-thread p (lambda () (let loop ([i 0]) (when (< i 200) (call-with-semaphore s (lambda () #t)) (yield) (loop (+ i 1))))))])
      (spin 30)
      (scope-cancel! sc)
      (thread-wait t)
      (parallel-thread-pool-close p)
      (unless (semaphore-try-wait? s) (error 'take "the count was kept")))))

;; 8fa44d4: a preemption right after a sync committed raises the
;; cancellation and drops the value the sync returned.
(define (value-dropped)
  (let ([ch (make-channel)] [got 0] [sent 0] [p (pool)])
    (let-values ([(t sc) (scoped-thread p (lambda () (let loop () (channel-get ch) (set! got (+ got 1)) (loop))))])
      (let ([producer (thread (lambda ()
                                (let loop ()
                                  (when (and (< sent 40) (sync/timeout 0.5 (channel-put-evt ch sent)))
                                    (set! sent (+ sent 1))
                                    (loop))))
                              #:pool p)])
        (spin 25)
        (scope-cancel! sc)
        (thread-wait t)
        (thread-wait producer)
        (parallel-thread-pool-close p)
        (unless (= got sent) (error 'value "a value a sync returned was dropped" sent got))))))

;; 4a18807: a wait that can complete at once is no checkpoint, so a loop
;; of such waits in a cancelled scope is not cancelled (until it parks).
(define (loop-uncancelled)
  (let ([s (make-semaphore 1000000)] [p (pool)] [cancelled? (box #f)] [after (box 0)])
    (let-values ([(t sc) (scoped-thread p (lambda ()
                                            (let loop ()
                                              (sync s)
                                              (when (unbox cancelled?)
                                                (set-box! after (+ (unbox after) 1))
                                                (when (> (unbox after) 10000)
                                                  (error 'loop "10000 waits after the cancellation")))
                                              (yield)
                                              (loop))))])
      (spin 5)
      (scope-cancel! sc)
      (set-box! cancelled? #t)
      (thread-wait t)
      (parallel-thread-pool-close p)
      (when (> (unbox after) 10000) (error 'loop "10000 waits after the cancellation")))))

;; bfeed0a: a break that unwinds a parking synchronized port's output
;; after the wrapped port wrote its bytes but before its buffer was
;; emptied makes the next flush write them again.
(define (write-twice)
  (let-values ([(in out) (make-pipe 8)])
    (let* ([sp (make-synchronized-port out 'parking)] [p (pool)]
           [ready (make-semaphore 0)]
           [writer (thread (lambda ()
                             (guard (e [(break-condition? e) (flush-output-port sp) (close-port sp)])
                               (semaphore-post ready)
                               (let loop ([i 0])
                                 (when (< i 20)
                                   (put-bytevector sp (make-bytevector 6 i))
                                   (flush-output-port sp)
                                   (loop (+ i 1))))
                               (close-port sp)))
                           #:pool p)]
           [reader (thread (lambda () (get-bytevector-all in)) #:pool p #:keep 'results)])
      (semaphore-wait ready)
      (spin 3)
      (break-thread writer)
      (thread-wait writer)
      (let ([bytes (thread-wait reader)])
        (parallel-thread-pool-close p)
        (unless (or (eof-object? bytes) (= 0 (mod (bytevector-length bytes) 6)))
          (error 'write "bytes written twice or torn" (bytevector-length bytes)))))))

;; Found by the simulation: a kill that reached a thread while it ran its
;; exit hooks (a scope child, killed by its scope's custodian) ended it
;; again: the hooks ran again or stopped half done.
(define (kill-in-exit-hooks)
  (let ([ended 0])
    (move-on-after 1
      (call-with-task-scope
        (lambda (sc)
          (do ([i 0 (+ i 1)]) ((= i 3))
            (scope-thread sc (lambda () (dynamic-wind void (lambda () (sleep 10)) (lambda () (set! ended (+ ended 1)))))))
          (sleep 5))))
    (sleep 2)
    (unless (= ended 3) (error 'scope "children not unwound" ended))))

(define scenarios
  `((cleanup-recancelled . ,cleanup-recancelled) (take-then-cancelled . ,take-then-cancelled)
    (value-dropped . ,value-dropped) (loop-uncancelled . ,loop-uncancelled)
    (write-twice . ,write-twice) (kill-in-exit-hooks . ,kill-in-exit-hooks)))

;; A stress run: the scenario with real threads, bounded in time: #f if
;; it raised or did not end within 5 s.
(define (stress-once thunk)
  (guard (e [#t #f])
    (let ([t (thread (lambda () (thunk) #t) #:keep 'results)])
      ;; a raise in the scenario fails its thread: thread-wait's failure
      ;; continuation answers #f
      (sync/timeout 5 (wrap-evt t (lambda (_) (thread-wait t (lambda () #f))))))))

(let* ([args (cdr (command-line))]
       [name (string->symbol (car args))]
       [mode (string->symbol (cadr args))]
       [runs (string->number (caddr args))]
       [thunk (cdr (assq name scenarios))])
  (case mode
    [(sim)
     (let ([r (guard (c [(simulation-failure? c) (list 'found-at (simulation-failure-run c) (simulation-failure-seed c)
                                                       (simulation-failure-kind c))])
                (simulate-many thunk #:runs runs #:seed 1 #:max-steps 200000)
                (list 'not-found runs))])
       (printf "~a sim ~{~a~^ ~}\n" name r))]
    [(stress)
     (let ([limit (* 1000 (string->number (cadddr args)))] [t0 (real-time)])
       (let loop ([i 1])
         (cond
           [(not (stress-once thunk)) (printf "~a stress found-at ~a (~a s)\n" name i (/ (- (real-time) t0) 1000.))]
           [(or (= i runs) (> (- (real-time) t0) limit))
            (printf "~a stress not-found ~a (~a s)\n" name i (/ (- (real-time) t0) 1000.))]
           [else (loop (+ i 1))])))])
  (flush-output-port (current-output-port))
  (exit 0))
