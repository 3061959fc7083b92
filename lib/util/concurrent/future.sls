#!chezscheme
;;; (util concurrent future): Kato's futures on spindle (doc/reference.md).
;;;
;;; A future's result field holds, while it is pending, a shared box (one-
;;; shot cell) that the task fills, or a procedure called by future-get (an
;;; executor future not yet executed raises from it); once fetched, the value
;;; itself.  canceller is #t when the value is what the task raised (as in
;;; the original), else #f or a procedure future-cancel calls.
;;;
;;; States: created -> finished (the task ended, result not fetched) ->
;;; done (a future-get returned); created/finished -> terminated (cancel).
;;; Transitions are made under one internal lock, held only briefly with
;;; interrupts disabled: a task that ends while the future is cancelled
;;; cannot revive it.  A cancel also fills the box with a private marker, so
;;; getters blocked on it wake and raise &future-terminated.
(library (util concurrent future)
  (export <future> future? future class future-get future-cancel
          future-done? future-cancelled? future-state
          &future-terminated future-terminated? terminated-future
          <simple-future> make-simple-future simple-future?
          ;; sub: for executor code (not re-exported by (util concurrent))
          future-state-set! future-thunk future-result future-result-set!
          future-canceller future-canceller-set!
          make-shared-box shared-box? shared-box-put! shared-box-get!
          ;; internal to (util concurrent executor)
          %future-finish! %run-thunk)
  (import (except (chezscheme) make-mutex mutex? mutex-name thread? sleep
                  make-parameter parameterize)
          (prefix (only (chezscheme) make-mutex) chez:)
          (only (spindle private core atomic) with-os-mutex)
          (only (spindle) make-semaphore semaphore-post semaphore-peek-evt sync sync/timeout
                current-inexact-monotonic-milliseconds)
          (only (srfi :18) make-thread thread-start!))

  ;; ---------------------------------------------------------------- timeouts
  ;; #f: forever; real: relative seconds (<= 0: poll); time-utc or
  ;; time-monotonic: absolute; time-duration: relative.  -> seconds or #f.
  (define (timeout->seconds who timeout)
    (define (secs t) (+ (time-second t) (/ (time-nanosecond t) 1e9)))
    (cond
      [(not timeout) #f]
      [(real? timeout) (max 0 timeout)]
      [(time? timeout)
       (case (time-type timeout)
         [(time-duration) (max 0 (secs timeout))]
         [(time-utc time-monotonic)
          (max 0 (- (secs timeout) (secs (current-time (time-type timeout)))))]
         [else (assertion-violation who "unsupported time type" timeout)])]
      [else (assertion-violation who "expected #f, a real number or a time object" timeout)]))

  ;; ---------------------------------------------------------------- shared box
  ;; One-shot: the first put wins, later ones are ignored (-> #f).  The value
  ;; is stored before the semaphore is posted (a happens-before edge); the
  ;; semaphore is posted once and only peeked, so it stays ready.
  (define empty-mark (list 'empty))

  (define-record-type (<shared-box> make-shared-box shared-box?)
    (fields (mutable value sb-value sb-value-set!)
            (immutable claimed sb-claimed)
            (immutable ready sb-ready))
    (protocol (lambda (new) (lambda () (new empty-mark (box #f) (make-semaphore 0)))))
    (nongenerative util-concurrent-shared-box-v1))

  (define (shared-box-put! sb v)
    (unless (shared-box? sb) (assertion-violation 'shared-box-put! "expected a shared box" sb))
    (and (box-cas! (sb-claimed sb) #f #t)
         (begin
           (sb-value-set! sb v)
           (semaphore-post (sb-ready sb))
           #t)))

  (define (shared-box-get! sb . opt)
    (unless (shared-box? sb) (assertion-violation 'shared-box-get! "expected a shared box" sb))
    (let ([secs (timeout->seconds 'shared-box-get! (and (pair? opt) (car opt)))]
          [timeout-val (and (pair? opt) (pair? (cdr opt)) (cadr opt))])
      (let ([v (sb-value sb)])
        (cond
          [(not (eq? v empty-mark)) v]
          [(if secs
               (sync/timeout secs (semaphore-peek-evt (sb-ready sb)))
               (sync (semaphore-peek-evt (sb-ready sb))))
           (sb-value sb)]
          [else timeout-val]))))

  ;; ---------------------------------------------------------------- futures
  (define-condition-type &future-terminated &error
    make-future-terminated future-terminated?
    (future terminated-future))

  (define-record-type (<future> make-future future?)
    (fields (mutable thunk future-thunk future-thunk-set!)
            (mutable result future-result future-result-set!)
            (mutable state future-state future-state-set!)
            (mutable canceller future-canceller future-canceller-set!))
    (protocol (lambda (new) (lambda (thunk result) (new thunk result 'created #f))))
    (nongenerative util-concurrent-future-v1))

  (define state-lock (chez:make-mutex))
  (define-syntax locked
    (syntax-rules ()
      [(_ body1 body ...) (with-os-mutex state-lock body1 body ...)]))

  ;; Filled into a cancelled future's box: its getters raise.
  (define cancelled-mark (list 'cancelled))

  ;; Runs thunk; -> (values result raised?).  Everything raised is caught.
  (define (%run-thunk thunk)
    (call/1cc
      (lambda (k)
        (with-exception-handler
          (lambda (c) (k c #t))
          (lambda () (let ([v (thunk)]) (values v #f)))))))

  ;; The task of f ended with v (raised? when v was raised): created ->
  ;; finished and the box filled.  -> #f (result dropped) if f was
  ;; cancelled meanwhile.
  (define (%future-finish! f v raised?)
    (let ([box (locked
                 (and (eq? (future-state f) 'created)
                      (let ([r (future-result f)])
                        (when raised? (future-canceller-set! f #t))
                        (future-state-set! f 'finished)
                        ;; no box to fill (a custom executor's future): the value itself
                        (if (shared-box? r) r (begin (future-result-set! f v) #t)))))])
      (when (shared-box? box) (shared-box-put! box v))
      (and box #t)))

  (define-record-type (<simple-future> make-simple-future simple-future?)
    (parent <future>)
    (protocol
      (lambda (n)
        (lambda (thunk)
          (unless (procedure? thunk)
            (assertion-violation 'make-simple-future "expected a procedure" thunk))
          (let* ([box (make-shared-box)] [f ((n thunk box))])
            (thread-start!
              (make-thread
                (lambda ()
                  (let-values ([(v raised?) (%run-thunk thunk)])
                    (%future-finish! f v raised?)))
                'simple-future))
            f))))
    (nongenerative util-concurrent-simple-future-v1))

  (define-syntax class
    (lambda (x) (syntax-violation 'class "misplaced auxiliary keyword" x)))

  (define-syntax future
    (syntax-rules (class)
      [(_ (class type) expr ...)
       ((record-constructor (record-constructor-descriptor type)) (lambda () expr ...))]
      [(_ expr ...) (make-simple-future (lambda () expr ...))]))

  (define (raise-terminated f)
    (raise (condition (make-future-terminated f)
                      (make-who-condition 'future-get)
                      (make-message-condition "future is terminated")
                      (make-irritants-condition (list f)))))

  (define (check-future who f)
    (unless (future? f) (assertion-violation who "expected a future" f)))

  (define timeout-mark (list 'timeout))

  ;; The fetched value v: f becomes done (unless cancelled meanwhile).
  (define (deliver f v)
    (let ([state (locked
                   (let ([s (future-state f)])
                     (unless (eq? s 'terminated)
                       (future-result-set! f v)
                       (future-state-set! f 'done))
                     s))])
      (cond
        [(eq? state 'terminated) (raise-terminated f)]
        [(eqv? (future-canceller f) #t) (raise v)]
        [else v])))

  (define (future-get f . opt)
    (check-future 'future-get f)
    (let ([timeout (and (pair? opt) (car opt))]
          [timeout-val (and (pair? opt) (pair? (cdr opt)) (cadr opt))])
      (timeout->seconds 'future-get timeout)
      (let-values ([(state r) (locked (values (future-state f) (future-result f)))])
        (cond
          [(eq? state 'terminated) (raise-terminated f)]
          [(eq? state 'done)
           (if (eqv? (future-canceller f) #t) (raise r) r)]
          [(shared-box? r)
           (let ([v (shared-box-get! r timeout timeout-mark)])
             (cond
               [(eq? v timeout-mark) timeout-val]
               [(eq? v cancelled-mark) (raise-terminated f)]
               [else (deliver f v)]))]
          [(procedure? r)
           ;; the original protocol: (r future [timeout [timeout-val]])
           (deliver f (apply r f opt))]
          [else (deliver f r)]))))

  (define (future-cancel f)
    (check-future 'future-cancel f)
    (let-values ([(cancelled? canceller box)
                  (locked
                    (if (eq? (future-state f) 'done)
                        (values #f #f #f)
                        (let ([c (future-canceller f)])
                          (future-state-set! f 'terminated)
                          (when (procedure? c) (future-canceller-set! f #f))
                          (values #t (and (procedure? c) c) (future-result f)))))])
      (when cancelled?
        (when (shared-box? box) (shared-box-put! box cancelled-mark))
        (when canceller (canceller f)))
      cancelled?))

  (define (future-done? f)
    (check-future 'future-done? f)
    (eq? (future-state f) 'done))

  (define (future-cancelled? f)
    (check-future 'future-cancelled? f)
    (eq? (future-state f) 'terminated)))
