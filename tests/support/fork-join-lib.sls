#!chezscheme
;;; Fork-join groups for tests/test-fork-join.ss.  fork-join starts places
;;; from the library it is used in, so every group lives here; the library
;;; ends with lift-places.
(library (fork-join-lib)
  (export fj-ids fj-arg-order fj-member-0-args fj-shared-writes fj-for fj-for-in-range
          fj-for-default-step fj-for-in-range-end fj-for/stride fj-for-marks fj-barrier-phases
          fj-barrier-waits fj-barrier-many fj-barrier-then-fails fj-pipeline fj-pipeline-many fj-n0-only fj-accessors fj-big-results fj-nested
          fj-member-raises fj-member-raises-late fj-member-0-raises fj-member-0-catches
          fj-bad-result fj-member-exits fj-member-skips-barrier fj-member-0-skips-barrier
          fj-pipeline-bad-value fj-stuck-member fj-for-bad-step fj-arg-not-allowed
          set-escape! fj-member-0-escapes)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join))

  ;; ids, np and an argument, per member
  (define (fj-ids np x)
    (fork-join np cg ([x x]) (list (CG-id cg) (CG-np cg) x)))

  ;; args evaluated once each, in the caller, left to right
  (define (fj-arg-order np th1 th2)
    (fork-join np cg ([a (th1)] [b (th2)]) (list a b)))

  ;; member 0 gets the caller's own objects, the others copies
  (define (fj-member-0-args np b)
    (fork-join np cg ([b b])
      (if (= (CG-id cg) 0) (begin (set-box! b 'member-0) 'set) (unbox b))))

  ;; a shared fxvector travels by reference
  (define (fj-shared-writes np v)
    (fork-join np cg ([v v])
      (shared-fxvector-set! v (CG-id cg) (* 10 (+ 1 (CG-id cg))))
      (CG-id cg)))

  ;; each member's iterations, in order
  (define (fj-for np start end step)
    (fork-join np cg ([s start] [e end] [st step])
      (let ([acc '()]) (CGfor cg ([i s e st]) (set! acc (cons i acc))) (reverse acc))))

  (define (fj-for-in-range np start end step)
    (fork-join np cg ([s start] [e end] [st step])
      (let ([acc '()]) (CGfor cg ([i (in-range s e st)]) (set! acc (cons i acc))) (reverse acc))))

  (define (fj-for-default-step np start end)
    (fork-join np cg ([s start] [e end])
      (let ([a '()] [b '()])
        (CGfor cg ([i s e]) (set! a (cons i a)))
        (CGfor cg ([i (in-range s e)]) (set! b (cons i b)))
        (list (reverse a) (reverse b)))))

  (define (fj-for-in-range-end np end)
    (fork-join np cg ([e end])
      (let ([acc '()]) (CGfor cg ([i (in-range e)]) (set! acc (cons i acc))) (reverse acc))))

  (define (fj-for/stride np start end step)
    (fork-join np cg ([s start] [e end] [st step])
      (let ([a '()] [b '()])
        (CGfor/stride cg ([i s e st]) (set! a (cons i a)))
        (CGfor/stride cg ([i (in-range s e st)]) (set! b (cons i b)))
        (list (reverse a) (reverse b)))))

  ;; every member adds 1 to the slot of each index it runs, then reports
  ;; after a barrier, so all writes are visible
  (define (fj-for-marks np n)
    (let ([marks (make-shared-fxvector n 0)])
      (fork-join np cg ([marks marks] [n n])
        (CGfor cg ([i 0 n]) (shared-fxvector-set! marks i (+ 1 (shared-fxvector-ref marks i))))
        (CGBarrier cg)
        (let loop ([i 0] [acc '()])
          (if (= i n) (reverse acc) (loop (+ i 1) (cons (shared-fxvector-ref marks i) acc)))))))

  ;; phase p: write p in my slot, barrier, everyone's slot must be p; barrier.
  ;; Member (phase mod np) dawdles first, so the others really wait.
  ;; Result: the list of (phase member value) mismatches seen.
  (define (fj-barrier-phases np phases)
    (let ([slots (make-shared-fxvector np 0)])
      (fork-join np cg ([slots slots] [phases phases])
        (let loop ([p 1] [bad '()])
          (if (> p phases)
              (reverse bad)
              (begin
                (when (= (CG-id cg) (mod p (CG-np cg))) (sleep 0.01))
                (shared-fxvector-set! slots (CG-id cg) p)
                (CGBarrier cg)
                (let ([bad (let check ([m 0] [bad bad])
                             (cond
                               [(= m (CG-np cg)) bad]
                               [(= (shared-fxvector-ref slots m) p) (check (+ m 1) bad)]
                               [else (check (+ m 1) (cons (list p m (shared-fxvector-ref slots m)) bad))]))])
                  (CG-B cg)
                  (loop (+ p 1) bad))))))))

  ;; n barriers; before barrier j each member writes j in its slot, after it
  ;; every slot must be j or j + 1 (a member may already be on to the next
  ;; barrier, never further).  Members (j mod np) and 0 dawdle now and then,
  ;; so waits that park mix with waits that spin.  Result: (mismatches
  ;; barriers-done).
  (define (fj-barrier-many np n)
    (let ([slots (make-shared-fxvector np 0)])
      (fork-join np cg ([slots slots] [n n])
        (let ([me (CG-id cg)] [np (CG-np cg)])
          (let loop ([j 1] [bad 0])
            (if (> j n)
                (list bad (- j 1))
                (begin
                  (when (and (= (mod j 97) 0) (= me (mod j np))) (sleep 0.001))
                  (shared-fxvector-set! slots me j)
                  (CGBarrier cg)
                  (loop (+ j 1)
                        (let check ([m 0] [bad bad])
                          (if (= m np)
                              bad
                              (let ([v (shared-fxvector-ref slots m)])
                                (check (+ m 1) (if (or (= v j) (= v (+ j 1))) bad (+ bad 1))))))))))))))

  ;; member `who` passes k barriers with the others, then fails: 'raise,
  ;; 'exit (ends without a result) or 'die (killed by a signal); the others
  ;; go on to more barriers
  (define kill-self
    (let ([getpid (foreign-procedure "getpid" () int)] [kill (foreign-procedure "kill" (int int) int)])
      (lambda () (kill (getpid) 9))))
  (define (fj-barrier-then-fails np who k how)
    (fork-join np cg ([who who] [k k] [how how])
      (do ([j 0 (+ j 1)]) ((= j k)) (CGBarrier cg))
      (when (= (CG-id cg) who)
        (case how
          [(raise) (error 'fj-test "member fails between barriers" who)]
          [(exit) (exit 0)]
          [else (kill-self) (sleep 10)]))
      (do ([j 0 (+ j 1)]) ((= j 1000)) (CGBarrier cg))
      'never))

  ;; member 0 sleeps 0.2 s before the barrier: the others' waits last that
  ;; long.  A first barrier keeps a place's slow start (a loaded machine)
  ;; out of the wait.
  (define (fj-barrier-waits np)
    (fork-join np cg ()
      (CGBarrier cg)
      (when (= (CG-id cg) 0) (sleep 0.2))
      (let ([t0 (current-inexact-monotonic-milliseconds)])
        (CGBarrier cg)
        (- (current-inexact-monotonic-milliseconds) t0))))

  ;; each member appends its id to its predecessor's list; twice, to check
  ;; that a second pipeline pairs with the second values
  (define (fj-pipeline np)
    (fork-join np cg ()
      (let* ([a (CGpipeline cg prev '(start) (append prev (list (CG-id cg))))]
             [b (CGpipeline cg prev 0 (+ prev (CG-id cg)))])
        (list a b))))

  ;; n values through the pipeline: more than a socket buffer holds, so a
  ;; member that ends early must not drop what it queued for its successor
  (define (fj-pipeline-many np n)
    (fork-join np cg ([n n])
      (let loop ([i 0] [ok 0])
        (if (= i n)
            ok
            (let ([v (CGpipeline cg v (make-bytevector 1000 (mod i 256)) v)])
              (loop (+ i 1) (if (= (bytevector-u8-ref v 999) (mod i 256)) (+ ok 1) ok)))))))
  (define (fj-n0-only np)
    (let ([cell (make-shared-fxvector 1 0)])
      (fork-join np cg ([cell cell])
        (let ([v (CG-n0-only cg (shared-fxvector-set! cell 0 42) 'from-0)])
          (list v (shared-fxvector-ref cell 0))))))

  (define (fj-accessors np)
    (fork-join np cg ()
      (list (CG? cg) (CG? 5) (= (CG-id cg) (CGid cg)) (= (CG-np cg) (CGnp cg)) (eq? CG-B CGBarrier))))

  ;; results bigger than a socket buffer
  (define (fj-big-results np n)
    (fork-join np cg ([n n])
      (make-vector n (CG-id cg))))

  ;; member 1 runs a group of its own.  The inner fork-join is in its own
  ;; top-level procedure: a place form nested inside another place body is
  ;; lifted with a wrong ordinal by (spindle place) (see the commit message).
  (define (inner-group)
    (fork-join 2 inner () (* 100 (+ 1 (CG-id inner)))))

  (define (fj-nested)
    (fork-join 2 cg ()
      (if (= (CG-id cg) 1) (inner-group) 'outer-0)))

  ;; ---------------------------------------------------------------- failures
  ;; member `who` raises at once, the others wait in a barrier
  (define (fj-member-raises np who)
    (fork-join np cg ([who who])
      (when (= (CG-id cg) who) (error 'fj-test "member fails on purpose" who))
      (CGBarrier cg)
      'never))

  ;; member `who` raises after a while; member 0 is not in a CG operation
  (define (fj-member-raises-late np who)
    (fork-join np cg ([who who])
      (when (= (CG-id cg) who) (sleep 0.05) (car (CG-id cg)))
      'fine))

  ;; member 0 raises obj while the others wait in a barrier
  (define (fj-member-0-raises np obj)
    (fork-join np cg ([obj obj])
      (when (= (CG-id cg) 0) (raise obj))
      (CGBarrier cg)))

  ;; member 0 catches "group aborted" and returns normally; the group still fails.
  ;; The caught condition's parts are stored in the box.
  (define (fj-member-0-catches np result-box)
    (fork-join np cg ([b result-box])
      (when (= (CG-id cg) (- (CG-np cg) 1)) (error 'fj-test "last member fails"))
      (let ([c (guard (c [#t c]) (CGBarrier cg) 'no-exception)])
        (when (= (CG-id cg) 0)
          (set-box! b (list (error? c) (condition-who c) (condition-message c)
                            (condition-irritants c)
                            (guard (c2 [#t (condition-message c2)]) (CGBarrier cg) 'no-exception)))))
      'returned))

  (define (fj-bad-result np)
    (fork-join np cg ()
      (if (= (CG-id cg) 1) (lambda () 'not-a-message) 'ok)))

  (define (fj-member-exits np)
    (fork-join np cg ()
      (when (= (CG-id cg) 1) (exit 0))
      'ok))

  ;; member 1 returns without the barrier the others call
  (define (fj-member-skips-barrier np)
    (fork-join np cg ()
      (unless (= (CG-id cg) 1) (CGBarrier cg))
      'ok))

  ;; member 0 returns without the barrier the others call
  (define (fj-member-0-skips-barrier np)
    (fork-join np cg ()
      (unless (= (CG-id cg) 0) (CGBarrier cg))
      'ok))

  (define (fj-pipeline-bad-value np)
    (fork-join np cg ()
      (CGpipeline cg v 0 (if (= (CG-id cg) 0) (lambda () v) v))))

  ;; member 2 fails while member 1 sleeps for a long time outside any CG
  ;; operation: the group is aborted without waiting for member 1
  (define (fj-stuck-member np)
    (fork-join np cg ()
      (case (CG-id cg)
        [(1) (sleep 60) 'late]
        [(2) (error 'fj-test "member 2 fails")]
        [else (CGBarrier cg)])))

  ;; member 0 leaves its body through a continuation while the others wait
  ;; in a barrier: the places are killed on the way out
  (define escape #f)
  (define (set-escape! k) (set! escape k))
  (define (fj-member-0-escapes np)
    (fork-join np cg ()
      (when (= (CG-id cg) 0) (escape 'escaped))
      (CGBarrier cg)))

  (define (fj-for-bad-step np)
    (fork-join np cg ()
      (CGfor cg ([i 0 10 0]) i)))

  (define (fj-arg-not-allowed np v)
    (fork-join np cg ([v v]) 'ran))

  (lift-places (fork-join-lib)))
