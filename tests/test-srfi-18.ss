#!chezscheme
;;; SRFI-18 on spindle (issue 5), written from SRFI-18's text and the manual.
(import (except (chezscheme) thread? sleep make-parameter make-mutex mutex? mutex-name)
        (srfi :18)
        (only (spindle) thread thread-wait kill-thread srfi-18-thread-pool make-parallel-thread-pool
              make-channel channel-get channel-put yield)
        (harness))

(define (start thunk) (thread-start! (make-thread thunk)))

(define (remove-duplicates l)
  (let ([h (make-eqv-hashtable)])
    (filter (lambda (x) (and (not (hashtable-ref h x #f)) (begin (hashtable-set! h x #t) #t))) l)))


(test "make-thread is not runnable until started; names; specific"
  (let* ([ran #f] [t (make-thread (lambda () (set! ran #t) 'r) 'worker)])
    (thread-sleep! 0.02)
    (check "not run" (not ran))
    (check-equal "name" 'worker (thread-name t))
    (check "thread?" (thread? t))
    (check-equal "specific initially #f" #f (thread-specific t))
    (thread-specific-set! t 'spec)
    (check-equal "specific" 'spec (thread-specific t))
    (check "start returns t" (eq? t (thread-start! t)))
    (check-equal "join value" 'r (thread-join! t))
    (check "ran" ran)
    (check-raises "start twice" assertion-violation? (lambda () (thread-start! t)))))

(test "thread-join! returns all values; a spindle thread without keep gives void"
  (check-equal "values" '(1 2 3) (call-with-values (lambda () (thread-join! (start (lambda () (values 1 2 3))))) list))
  (check-equal "void" (void) (thread-join! (thread (lambda () 5)))))

(test "thread-join! timeouts: relative, absolute, duration; value or join-timeout"
  (let ([t (start (lambda () (thread-sleep! 5)))])
    (check-equal "timeout value" 'tv (thread-join! t 0.01 'tv))
    (check-raises "join-timeout" join-timeout-exception? (lambda () (thread-join! t 0.01)))
    (check-equal "absolute time" 'abs (thread-join! t (seconds->time (+ (time->seconds (current-time)) 0.02)) 'abs))
    (check-equal "duration" 'dur (thread-join! t (make-time 'time-duration 10000000 0) 'dur))
    (check-equal "past absolute" 'past (thread-join! t (seconds->time 0) 'past))
    (thread-terminate! t)))

(test "joining oneself is an error; joining a new thread waits for its start"
  (check-raises "self" assertion-violation? (lambda () (thread-join! (current-thread))))
  (let ([t (make-thread (lambda () 'late))])
    (start (lambda () (thread-sleep! 0.02) (thread-start! t)))
    (check-equal "joined" 'late (thread-join! t))))

(test "uncaught exceptions and terminated threads"
  (let ([t (start (lambda () (raise 'oops)))])
    (check-raises "uncaught" (lambda (c) (and (uncaught-exception? c) (eq? 'oops (uncaught-exception-reason c))))
                  (lambda () (thread-join! t)))
    (check-raises "again" uncaught-exception? (lambda () (thread-join! t))))
  (let ([t (start (lambda () (let loop () (loop))))])
    (thread-terminate! t)
    (check-raises "terminated" terminated-thread-exception? (lambda () (thread-join! t)))))

(test "terminating a thread blocked on a mutex, a condition variable and a channel"
  (let* ([m (make-mutex)] [cv (make-condition-variable)] [ch (make-channel)])
    (mutex-lock! m)
    (let ([a (start (lambda () (mutex-lock! m)))]
          [b (start (lambda () (let ([m2 (make-mutex)]) (mutex-lock! m2) (mutex-unlock! m2 cv))))]
          [c (start (lambda () (channel-get ch)))])
      (thread-sleep! 0.02)
      (for-each thread-terminate! (list a b c))
      (for-each (lambda (t) (check-raises "terminated" terminated-thread-exception? (lambda () (thread-join! t))))
                (list a b c)))
    (mutex-unlock! m)
    (check-equal "mutex usable" #t (mutex-lock! m 0.1))
    (mutex-unlock! m)))

(test "thread-sleep!: required timeout, past times return at once"
  (check-raises "no timeout" assertion-violation? (lambda () (thread-sleep! #f)))
  (thread-sleep! (seconds->time 0))
  (thread-sleep! -1)
  (let ([t0 (time->seconds (current-time))])
    (thread-sleep! 0.03)
    (check "slept" (>= (- (time->seconds (current-time)) t0) 0.025))))

(test "mutex states: not-abandoned, owner, not-owned, abandoned"
  (let ([m (make-mutex 'm)])
    (check "mutex?" (mutex? m))
    (check-equal "name" 'm (mutex-name m))
    (check-equal "new" 'not-abandoned (mutex-state m))
    (mutex-lock! m)
    (check "owner is me" (eq? (current-thread) (mutex-state m)))
    (mutex-unlock! m)
    (mutex-lock! m #f #f)
    (check-equal "not-owned" 'not-owned (mutex-state m))
    (mutex-unlock! m)
    (let ([t (make-thread (lambda () 1))])
      (mutex-lock! m #f t)
      (check "owned by a new thread" (eq? t (mutex-state m)))
      (thread-start! t)
      (thread-join! t)
      (check-equal "abandoned when its owner ends" 'abandoned (mutex-state m)))
    (check-raises "locking an abandoned mutex raises" abandoned-mutex-exception? (lambda () (mutex-lock! m)))
    (check "the lock stands" (eq? (current-thread) (mutex-state m)))
    (mutex-unlock! m)
    (check-equal "unlocked" 'not-abandoned (mutex-state m))
    (mutex-specific-set! m 'x)
    (check-equal "specific" 'x (mutex-specific m))))

(test "abandoned by exception and by termination"
  (let ([m1 (make-mutex)] [m2 (make-mutex)])
    (let ([t (start (lambda () (mutex-lock! m1) (raise 'bye)))]) (guard (c [#t #t]) (thread-join! t)))
    (check-equal "exception" 'abandoned (mutex-state m1))
    (let ([t (start (lambda () (mutex-lock! m2) (thread-sleep! 10)))])
      (thread-sleep! 0.02)
      (thread-terminate! t))
    (check-equal "terminate" 'abandoned (mutex-state m2))))

(test "mutex-lock! is not recursive and times out; a dead owner leaves it abandoned"
  (let ([m (make-mutex)])
    (mutex-lock! m)
    (check-equal "timeout" #f (mutex-lock! m 0.01))
    (check-equal "zero timeout" #f (mutex-lock! m 0))
    (mutex-unlock! m)
    (let ([t (start (lambda () 1))])
      (thread-join! t)
      (check-equal "dead owner" #t (mutex-lock! m #f t))
      (check-equal "left abandoned" 'abandoned (mutex-state m)))))

(test "anyone may unlock; unlocking twice keeps one unit"
  (let ([m (make-mutex)])
    (mutex-lock! m)
    (thread-join! (start (lambda () (mutex-unlock! m))))
    (check-equal "unlocked by another" 'not-abandoned (mutex-state m))
    (mutex-unlock! m)
    (mutex-lock! m)
    (check-equal "second lock fails" #f (mutex-lock! m 0.01))
    (mutex-unlock! m)))

(test "condition variables: signal, broadcast, timeout"
  (let* ([m (make-mutex)] [cv (make-condition-variable 'cv)] [n 0] [go #f])
    (check-equal "cv name" 'cv (condition-variable-name cv))
    (check "cv?" (condition-variable? cv))
    (condition-variable-specific-set! cv 3)
    (check-equal "cv specific" 3 (condition-variable-specific cv))
    (let ([ts (map (lambda (i)
                     (start (lambda ()
                              (mutex-lock! m)
                              (let loop () (unless go (mutex-unlock! m cv) (mutex-lock! m) (loop)))
                              (set! n (+ n 1))
                              (mutex-unlock! m))))
                   (iota 5))])
      (thread-sleep! 0.05)
      (mutex-lock! m) (set! go #t) (condition-variable-broadcast! cv) (mutex-unlock! m)
      (for-each thread-join! ts)
      (check-equal "all woke" 5 n))
    (mutex-lock! m)
    (check-equal "wait times out" #f (mutex-unlock! m cv 0.02))
    (check-equal "m not re-locked" 'not-abandoned (mutex-state m))
    (let ([t (start (lambda () (mutex-lock! m) (mutex-unlock! m cv)))])
      (thread-sleep! 0.03)
      (condition-variable-signal! cv)
      (check-equal "signalled" #t (thread-join! t 1 'stuck)))))

(test "time objects and current-exception-handler"
  (check "time?" (time? (current-time)))
  (check-equal "round trip" 12.5 (time->seconds (seconds->time 12.5)))
  (check-equal "handler calls the current handler" 'handled
    (call/cc (lambda (k) (with-exception-handler (lambda (c) (k 'handled))
                           (lambda () ((current-exception-handler) 'x)))))))

(test "srfi-18-thread-pool chooses the pool"
  (let ([p (make-parallel-thread-pool 2)])
    (parameterize ([srfi-18-thread-pool p])
      (check-equal "pool" 7 (thread-join! (start (lambda () 7)))))
    (parameterize ([srfi-18-thread-pool #f])
      (check-equal "coroutine" 8 (thread-join! (start (lambda () 8)))))))

(test "bad input"
  (check-raises "make-thread" assertion-violation? (lambda () (make-thread 5)))
  (check-raises "join non-thread" assertion-violation? (lambda () (thread-join! 'x)))
  (check-raises "lock non-mutex" assertion-violation? (lambda () (mutex-lock! 'x)))
  (check-raises "bad timeout" assertion-violation? (lambda () (mutex-lock! (make-mutex) 'soon)))
  (check-raises "unlock with non-cv" assertion-violation? (lambda () (mutex-unlock! (make-mutex) 'cv))))

(test "stress: a mutex-protected counter and a cv queue across pools"
  (let* ([m (make-mutex)] [cv (make-condition-variable)] [q '()] [counter 0] [got '()]
         [pools (list #f 'own (make-parallel-thread-pool 2))]
         [producers
          (apply append
            (map (lambda (pool pk)
                   (parameterize ([srfi-18-thread-pool pool])
                     (map (lambda (k0)
                            (define k (+ k0 (* 3 pk)))
                            (start (lambda ()
                                     (do ([i 0 (+ i 1)]) ((= i 200))
                                       (mutex-lock! m)
                                       (set! counter (+ counter 1))
                                       (set! q (cons (+ (* 1000 k) i) q))
                                       (condition-variable-signal! cv)
                                       (mutex-unlock! m)))))
                          (iota 3))))
                 pools (iota 3)))]
         [consumers
          (map (lambda (pool)
                 (parameterize ([srfi-18-thread-pool pool])
                   (start (lambda ()
                            (let loop ([mine '()])
                              (mutex-lock! m)
                              (let wait ()
                                (when (and (null? q) (< (length got) 1800))
                                  (mutex-unlock! m cv 0.05)
                                  (mutex-lock! m)
                                  (wait)))
                              (if (null? q)
                                  (begin (mutex-unlock! m) mine)
                                  (let ([x (car q)])
                                    (set! q (cdr q))
                                    (set! got (cons x got))
                                    (mutex-unlock! m)
                                    (loop (cons x mine)))))))))
               pools)])
    (for-each thread-join! producers)
    (let ([all (apply append (map thread-join! consumers))])
      (check-equal "counter" 1800 counter)
      (check-equal "each item once" (length all) (length (remove-duplicates all)))
      (check-equal "all items" 1800 (length all)))))


(test "thread-terminate! of a thread never started ends it without running its thunk"
  (let* ([ran #f] [t (make-thread (lambda () (set! ran #t)))])
    (thread-terminate! t)
    (check-raises "joined" terminated-thread-exception? (lambda () (thread-join! t)))
    (check "thunk never ran" (not ran))
    (parameterize ([srfi-18-thread-pool #f])
      (let ([t (make-thread (lambda () (set! ran #t)))])
        (thread-terminate! t)
        (check-raises "coroutine joined" terminated-thread-exception? (lambda () (thread-join! t)))
        (check "coroutine thunk never ran" (not ran))))))

(done)
