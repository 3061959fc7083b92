#!chezscheme
;;; Fork-join and communication groups.  The groups are in
;;; tests/support/fork-join-lib.sls (fork-join needs a library ending with
;;; lift-places); this file checks what they return and that no place
;;; process outlives its group.
(import (except (chezscheme) thread? sleep make-parameter parameterize)
        (spindle) (spindle fork-join) (harness) (fork-join-lib))

;; ---------------------------------------------------------------- processes
;; Places are children of the template process, which is a child of this
;; one: after a group, no descendant but the template may remain.
(define getpid (begin (load-shared-object "libc.so.6") (foreign-procedure "getpid" () int)))

(define (read-file f)
  (guard (c [#t #f]) (call-with-input-file f get-string-all)))

;; -> list of (pid ppid cmdline) of all processes
(define (processes)
  (filter values
    (map (lambda (name)
           (let ([pid (string->number name)])
             (and pid
                  (let ([stat (read-file (format "/proc/~a/stat" pid))])
                    (and (string? stat)
                         ;; pid (comm) state ppid ...
                         (let* ([close (let loop ([i (- (string-length stat) 1)])
                                         (if (char=? (string-ref stat i) #\)) i (loop (- i 1))))]
                                [fields (let split ([s (substring stat (+ close 2) (string-length stat))])
                                          (let ([sp (let find ([i 0]) (cond [(= i (string-length s)) #f]
                                                                            [(char=? (string-ref s i) #\space) i]
                                                                            [else (find (+ i 1))]))])
                                            (if sp (cons (substring s 0 sp) (split (substring s (+ sp 1) (string-length s))))
                                                (list s))))])
                           (list pid (string->number (cadr fields))
                                 (or (read-file (format "/proc/~a/cmdline" pid)) ""))))))))
         (directory-list "/proc"))))

(define (contains? s part)
  (let ([n (string-length s)] [k (string-length part)])
    (let loop ([i 0]) (and (<= (+ i k) n) (or (string=? (substring s i (+ i k)) part) (loop (+ i 1)))))))

;; pids of this process's descendants, except the template processes it
;; started (its children running place-zygote.ss; places are forks of a
;; template, so they have the same command line, one level further down)
(define (place-processes)
  (let ([ps (processes)] [me (getpid)])
    (let walk ([parents (list me)] [acc '()])
      (let ([kids (filter (lambda (p) (memv (cadr p) parents)) ps)])
        (if (null? kids)
            acc
            (walk (map car kids)
                  (append acc (map car (filter (lambda (p) (not (and (eqv? (cadr p) me)
                                                                      (contains? (caddr p) "place-zygote"))))
                                               kids)))))))))

;; A place reports its value as soon as it has one and exits once its
;; queued messages have left, a moment later: allow it a few seconds.
(define (check-no-places what)
  (let loop ([tries 0])
    (let ([left (place-processes)])
      (if (and (pair? left) (< tries 300))
          (begin (sleep 0.01) (loop (+ tries 1)))
          (check-equal (string-append what ": no place process left") '() left)))))

;; ---------------------------------------------------------------- expected partitions
(define (iterations start end step)
  (let loop ([i start] [acc '()])
    (if (if (> step 0) (< i end) (> i end)) (loop (+ i step) (cons i acc)) (reverse acc))))

;; block rule: q = k div np, r = k mod np; member m runs q+1 (m < r) or q, in id order
(define (expected-blocks np lst)
  (let* ([k (length lst)] [q (quotient k np)] [r (remainder k np)])
    (let loop ([m 0] [lst lst] [acc '()])
      (if (= m np)
          (list->vector (reverse acc))
          (let ([n (if (< m r) (+ q 1) q)])
            (loop (+ m 1) (list-tail lst n) (cons (list-head lst n) acc)))))))

(define (expected-stride np lst)
  (list->vector
    (map (lambda (m)
           (let loop ([j m] [acc '()])
             (if (>= j (length lst)) (reverse acc) (loop (+ j np) (cons (list-ref lst j) acc)))))
         (iota np))))

(define (group-error-with? ids)
  (lambda (c)
    (and (error? c) (who-condition? c) (eq? (condition-who c) 'fork-join)
         (equal? (condition-irritants c) ids))))

;; ---------------------------------------------------------------- results
(test "result vector for np = 1, 2, 4"
  (check-equal "np 1" '#((0 1 x)) (fj-ids 1 'x))
  (check-equal "np 2" '#((0 2 "s") (1 2 "s")) (fj-ids 2 "s"))
  (check-equal "np 4" '#((0 4 (a 1)) (1 4 (a 1)) (2 4 (a 1)) (3 4 (a 1))) (fj-ids 4 '(a 1)))
  (check-no-places "np 1 2 4"))

(test "np #f and 0: one member, the caller, no place"
  (check-equal "#f" '#((0 1 7)) (fj-ids #f 7))
  (check-equal "0" '#((0 1 7)) (fj-ids 0 7))
  (check-no-places "np #f 0"))

(test "args evaluated once each, in the caller, left to right"
  (let* ([log '()]
         [th1 (lambda () (set! log (cons 'first log)) 1)]
         [th2 (lambda () (set! log (cons 'second log)) 2)])
    (check-equal "np 3" '#((1 2) (1 2) (1 2)) (fj-arg-order 3 th1 th2))
    (check-equal "once, in order" '(first second) (reverse log))))

(test "member 0 is the caller: it gets the caller's own argument objects"
  (let ([b (box 'caller)])
    (check-equal "np 3" '#(set caller caller) (fj-member-0-args 3 b))
    (check-equal "member 0 set the caller's box" 'member-0 (unbox b)))
  (let ([b (box 'caller)])
    (check-equal "np 1" '#(set) (fj-member-0-args 1 b))
    (check-equal "np 1 set the caller's box" 'member-0 (unbox b))))

(test "shared fxvector arguments are shared"
  (let ([v (make-shared-fxvector 4 0)])
    (check-equal "ids" '#(0 1 2 3) (fj-shared-writes 4 v))
    (check-equal "writes of every member" '(10 20 30 40) (map (lambda (i) (shared-fxvector-ref v i)) (iota 4)))))

(test "results bigger than a socket buffer"
  (let ([r (fj-big-results 3 300000)])
    (check-equal "length" 3 (vector-length r))
    (check "member 2's vector" (and (= (vector-length (vector-ref r 2)) 300000)
                                    (eqv? 2 (vector-ref (vector-ref r 2) 299999))))))

;; ---------------------------------------------------------------- CGfor
(test "CGfor: block partition, uneven splits"
  (for-each
    (lambda (c)
      (let ([np (car c)] [start (cadr c)] [end (caddr c)] [step (cadddr c)])
        (let ([want (expected-blocks np (iterations start end step))])
          (check-equal (format "CGfor ~s" c) want (fj-for np start end step))
          (check-equal (format "CGfor in-range ~s" c) want (fj-for-in-range np start end step)))))
    '((1 0 5 1) (2 0 7 1) (3 0 10 1) (4 0 10 1) (4 0 2 1) (3 5 5 1) (4 9 3 1)
      (3 1 20 3) (4 10 0 -3) (2 -6 7 2) (4 0 13 1) (3 0 2 1/2)))
  (check-no-places "CGfor"))

(test "CGfor: default step, (in-range end)"
  (let ([r (fj-for-default-step 3 2 9)] [want (expected-blocks 3 (iterations 2 9 1))])
    (check-equal "[i s e]" want (vector-map car r))
    (check-equal "(in-range s e)" want (vector-map cadr r)))
  (check-equal "(in-range e)" (expected-blocks 4 (iota 11)) (fj-for-in-range-end 4 11)))

(test "CGfor: every index exactly once"
  (check-equal "np 3, 100" '#(#t #t #t)
               (vector-map (lambda (l) (for-all (lambda (x) (= x 1)) l)) (fj-for-marks 3 100)))
  (check-equal "np 4, 3 (fewer than members)" '#((1 1 1) (1 1 1) (1 1 1) (1 1 1)) (fj-for-marks 4 3)))

(test "CGfor/stride: member m runs iterations m, m+np, ..."
  (for-each
    (lambda (c)
      (let* ([np (car c)] [want (expected-stride np (iterations (cadr c) (caddr c) (cadddr c)))]
             [r (apply fj-for/stride c)])
        (check-equal (format "stride ~s" c) want (vector-map car r))
        (check-equal (format "stride in-range ~s" c) want (vector-map cadr r))))
    '((1 0 5 1) (3 0 10 1) (4 0 2 1) (3 1 20 3) (4 10 0 -3) (2 0 0 1))))

;; ---------------------------------------------------------------- barriers, pipeline
(test "CGBarrier: no member passes phase p before all reached it"
  (check-equal "np 4, 6 phases" '#(() () () ()) (fj-barrier-phases 4 6))
  (check-equal "np 2, 3 phases" '#(() ()) (fj-barrier-phases 2 3))
  (check-equal "np 1" '#(()) (fj-barrier-phases 1 3)))

(test "CGBarrier waits for the slowest member"
  (let ([r (fj-barrier-waits 3)])
    (check "members 1, 2 waited about 0.2 s" (and (>= (vector-ref r 1) 100) (>= (vector-ref r 2) 100)))))

(test "CGBarrier: 2000 barriers at np 2, 3 and 5, every member on the same one"
  (for-each
    (lambda (np)
      (check-equal (format "np ~a" np) (make-vector np '(0 2000)) (fj-barrier-many np 2000)))
    '(2 3 5))
  (check-no-places "many barriers"))

(test "CGBarrier: a member failing between barriers aborts the group (10 rounds)"
  (do ([round 0 (+ round 1)]) ((= round 10))
    (for-each
      (lambda (c)
        (let ([np (car c)] [who (cadr c)] [k (caddr c)] [how (cadddr c)])
          (check-raises (format "~s, round ~a" c round) (group-error-with? (list who))
                        (lambda () (fj-barrier-then-fails np who k how)))))
      '((2 1 0 raise) (3 2 5 raise) (5 3 40 raise) (2 1 3 exit) (5 4 7 exit) (3 1 2 die) (5 2 30 die))))
  (check-no-places "failing between barriers"))

(test "CGpipeline: each member gets its predecessor's value"
  (check-equal "np 5" '#(((start 0) 0) ((start 0 1) 1) ((start 0 1 2) 3) ((start 0 1 2 3) 6) ((start 0 1 2 3 4) 10))
               (fj-pipeline 5))
  (check-equal "np 1" '#(((start 0) 0)) (fj-pipeline 1)))

(test "CGpipeline: 2000 values of 1 KB reach the last member"
  (check-equal "np 4" '#(2000 2000 2000 2000) (fj-pipeline-many 4 2000)))

(test "CG-n0-only: body in member 0 only, between barriers"
  (check-equal "np 3" (vector (list 'from-0 42) (list (void) 42) (list (void) 42)) (fj-n0-only 3))
  (check-equal "np 1" '#((from-0 42)) (fj-n0-only 1)))

(test "CG?, CG-id, CG-np and the aliases"
  (check-equal "np 2" '#((#t #f #t #t #t) (#t #f #t #t #t)) (fj-accessors 2))
  (check "CG? of a non-group" (not (CG? 'x))))

(test "a member runs a group of its own"
  (check-equal "nested" '#(outer-0 #(100 200)) (fj-nested))
  (check-no-places "nested"))

(test "many groups in a row"
  (do ([k 0 (+ k 1)]) ((= k 15))
    (check-equal "ids" '#((0 4 k) (1 4 k) (2 4 k) (3 4 k)) (fj-ids 4 'k)))
  (check-no-places "many groups"))

;; ---------------------------------------------------------------- failures
(test "a member raises while the others wait in a barrier"
  (check-raises "member 2 of 4" (group-error-with? '(2)) (lambda () (fj-member-raises 4 2)))
  (check-no-places "member 2 of 4")
  (check-raises "member 1 of 2" (group-error-with? '(1)) (lambda () (fj-member-raises 2 1)))
  (check-no-places "member 1 of 2"))

(test "a member raises while member 0 waits for the results"
  (check-raises "member 3 of 4" (group-error-with? '(3)) (lambda () (fj-member-raises-late 4 3)))
  (check-no-places "late failure"))

(test "member 0 raises: fork-join raises its condition, places killed"
  (let ([obj (list 'boom)])
    (check-raises "same object" (lambda (c) (eq? c obj)) (lambda () (fj-member-0-raises 3 obj))))
  (check-raises "np 1" (lambda (c) (equal? c '(boom))) (lambda () (fj-member-0-raises 1 '(boom))))
  (check-no-places "member 0 raises"))

(test "member 0 blocked in CGBarrier gets \"group aborted\""
  (let ([b (box #f)])
    (check-raises "fork-join" (group-error-with? '(2)) (lambda () (fj-member-0-catches 3 b)))
    (check-equal "condition in member 0" '(#t CGBarrier "group aborted" (2) "group aborted") (unbox b)))
  (check-no-places "group aborted"))

(test "member 0 escapes by a continuation: places killed"
  (check-equal "escaped" 'escaped (call/cc (lambda (k) (set-escape! k) (fj-member-0-escapes 3))))
  (check-no-places "escape"))

(test "a failing member does not wait for a busy one"
  (let ([t0 (current-inexact-monotonic-milliseconds)])
    (check-raises "member 2" (group-error-with? '(2)) (lambda () (fj-stuck-member 3)))
    (check "well before member 1's 60 s sleep" (< (- (current-inexact-monotonic-milliseconds) t0) 20000)))
  (check-no-places "busy member killed"))

(test "a member's result must be an allowed message"
  (check-raises "procedure result" (group-error-with? '(1)) (lambda () (fj-bad-result 3)))
  (check-no-places "bad result"))

(test "a member that exits without a result fails"
  (check-raises "exit 0" (group-error-with? '(1)) (lambda () (fj-member-exits 3)))
  (check-no-places "exit"))

(test "mismatched barriers abort instead of hanging"
  (check-raises "member 1 skips" (group-error-with? '(1)) (lambda () (fj-member-skips-barrier 3)))
  ;; the first waiting member seen aborts the group: (1), (2) or (1 2)
  (check-raises "member 0 skips"
                (lambda (c) (exists (lambda (ids) ((group-error-with? ids) c)) '((1) (2) (1 2))))
                (lambda () (fj-member-0-skips-barrier 3)))
  (check-no-places "mismatched barriers"))

(test "CGpipeline values must be allowed messages"
  (check-raises "member 0 sends a procedure" (assertion-from? 'CGpipeline) (lambda () (fj-pipeline-bad-value 2)))
  (check-equal "np 1 keeps it local" #t (procedure? (vector-ref (fj-pipeline-bad-value 1) 0)))
  (check-no-places "pipeline value"))

;; ---------------------------------------------------------------- bad input
(test "bad input"
  (check-raises "np -1" (both (assertion-from? 'fork-join) (irritant? -1)) (lambda () (fj-ids -1 'x)))
  (check-raises "np 1.5" (assertion-from? 'fork-join) (lambda () (fj-ids 1.5 'x)))
  (check-raises "np 2.0" (assertion-from? 'fork-join) (lambda () (fj-ids 2.0 'x)))
  (check-raises "np 'a" (assertion-from? 'fork-join) (lambda () (fj-ids 'a 'x)))
  (let ([p (lambda () 1)])
    (check-raises "arg not a message" (both (assertion-from? 'fork-join) (irritant? p))
                  (lambda () (fj-arg-not-allowed 3 p)))
    (check-raises "np 1 too" (assertion-from? 'fork-join) (lambda () (fj-arg-not-allowed 1 p))))
  (check-no-places "bad args start nothing")
  (check-raises "CGfor step 0" (assertion-from? 'CGfor) (lambda () (fj-for-bad-step 1)))
  (check-raises "CGfor step 0, np 2" (assertion-from? 'CGfor) (lambda () (fj-for-bad-step 2)))
  (check-raises "CGfor 'a" (assertion-from? 'CGfor) (lambda () (fj-for 1 'a 3 1)))
  (check-raises "CG-id" (assertion-from? 'CG-id) (lambda () (CG-id 5)))
  (check-raises "CG-np" (assertion-from? 'CG-np) (lambda () (CG-np 5)))
  (check-raises "CGBarrier" (assertion-from? 'CGBarrier) (lambda () (CGBarrier 5)))
  (check-raises "CG-B" (assertion-from? 'CGBarrier) (lambda () (CG-B 'x)))
  (check-raises "CGpipeline" (assertion-from? 'CGpipeline) (lambda () (CGpipeline 5 v 0 v)))
  (check-raises "CG-n0-only" (assertion-from? 'CG-n0-only) (lambda () (CG-n0-only 5 1)))
  (check-raises "CGfor on a non-group" (assertion-from? 'CGfor) (lambda () (CGfor 5 ([i 0 3]) i)))
  (check-raises "CGfor/stride on a non-group" (assertion-from? 'CGfor/stride) (lambda () (CGfor/stride 5 ([i 0 3]) i)))
  (let ([env (environment '(chezscheme) '(spindle fork-join))])
    (check-raises "fork-join cg not an identifier" syntax-violation? (lambda () (eval '(fork-join 2 5 () 1) env)))
    (check-raises "fork-join no body" syntax-violation? (lambda () (eval '(fork-join 2 cg ()) env)))
    (check-raises "fork-join bad binding" syntax-violation? (lambda () (eval '(fork-join 2 cg ([1 2]) 1) env)))
    (check-raises "CGfor bad clause" syntax-violation? (lambda () (eval '(lambda (c) (CGfor c ([i]) i)) env)))
    (check-raises "CGfor two clauses" syntax-violation?
                  (lambda () (eval '(lambda (c) (CGfor c ([i 0 1] [j 0 1]) i)) env)))
    (check-raises "CGpipeline prev not an identifier" syntax-violation?
                  (lambda () (eval '(lambda (c) (CGpipeline c 5 0 1)) env)))))

(test "no place process is left"
  (check-no-places "at the end"))

(done)
