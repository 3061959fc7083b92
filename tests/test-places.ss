#!chezscheme
;;; Places: creation, messages, channel passing,
;;; shared vectors, ends (crash, exit, kill, break), dynamic-place, errors,
;;; non-blocking puts, a many-place stress test and process clean-up.
;;; Place bodies live in tests/support/places/kinds.sls (place forms need a library).
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness) (wait-until)
        (only (spindle private os processes) shell-command)
        (spindle private places buffer-pool)
        (places records)
        ;; the place constructors are wrapped below, so that every place is tracked
        (except (places kinds) echo-place agent-place crash-place crash-after-get-place raise-place
                return-place blocked-place get-once-place silent-place stress-place busy-place)
        (prefix (only (places kinds) echo-place agent-place crash-place crash-after-get-place raise-place
                      return-place blocked-place get-once-place silent-place stress-place busy-place)
                k:)
        (prefix (places nested) k:))

(test-limit 30)

;; Every place made here is tracked, so that the last test can end them all
;; (a failing check skips its test's own clean-up).
(define created '())
(define created-lock (make-semaphore 1))
(define (track p)
  (semaphore-wait created-lock)
  (set! created (cons p created))
  (semaphore-post created-lock)
  p)
(define (echo-place) (track (k:echo-place)))
(define (agent-place) (track (k:agent-place)))
(define (crash-place) (track (k:crash-place)))
(define (crash-after-get-place) (track (k:crash-after-get-place)))
(define (raise-place) (track (k:raise-place)))
(define (return-place) (track (k:return-place)))
(define (blocked-place) (track (k:blocked-place)))
(define (get-once-place) (track (k:get-once-place)))
(define (silent-place) (track (k:silent-place)))
(define (stress-place) (track (k:stress-place)))
(define (busy-place) (track (k:busy-place)))
(define (nested-place) (track (k:nested-place)))

;; ---------------------------------------------------------------- helpers
(define (now-ms) (current-inexact-monotonic-milliseconds))
(define (elapsed-ms thunk) (let ([t0 (now-ms)]) (thunk) (- (now-ms) t0)))

;; Chez's map applies f in no particular order; gets must happen in order.
(define (map-in-order f l)
  (let loop ([l l] [acc '()]) (if (null? l) (reverse acc) (loop (cdr l) (cons (f (car l)) acc)))))

;; The condition thunk raises, or #f.
(define (raised thunk)
  (call/cc (lambda (k) (with-exception-handler (lambda (c) (k c)) (lambda () (thunk) #f)))))

(define (peer-ended? c)
  (and (error? c) (not (assertion-violation? c))
       (message-condition? c) (string=? (condition-message c) "peer place ended")
       (who-condition? c) (eq? (condition-who c) 'place-channel-get)))

;; Waits for p to end within secs: its code, or 'still-running.
(define (wait/timeout p secs)
  (if (sync/timeout secs (place-dead-evt p)) (place-wait p) 'still-running))

;; Ends p whatever it is doing.
(define (finish! p) (place-kill p) (place-wait p))

(define (echo p v) (place-channel-put/get p (list 'echo v)))

(define spindle-env
  (environment '(except (chezscheme) thread? sleep make-parameter parameterize) '(spindle)))

;; ---- processes, from /proc
(define (read-file path)
  (guard (c [#t #f])
    (call-with-port (open-file-input-port path (file-options) (buffer-mode block) (native-transcoder))
      get-string-all)))

;; (pid ppid state) of every process, skipping ones that vanish meanwhile.
(define (all-processes)
  (let loop ([names (guard (c [#t '()]) (directory-list "/proc"))] [acc '()])
    (if (null? names)
        acc
        (let ([pid (string->number (car names))])
          (loop (cdr names)
                (let ([s (and pid (read-file (format "/proc/~a/stat" pid)))])
                  (if (and s (not (eof-object? s)))
                      ;; "pid (comm) state ppid ...": comm may hold spaces and parens
                      (let* ([close (let find ([i (- (string-length s) 1)])
                                      (if (char=? (string-ref s i) #\)) i (find (- i 1))))]
                             [fields (let split ([cs (string->list (substring s (+ close 2) (string-length s)))]
                                                 [cur '()] [out '()])
                                       (cond
                                         [(null? cs) (reverse (if (null? cur) out (cons (list->string (reverse cur)) out)))]
                                         [(char=? (car cs) #\space)
                                          (split (cdr cs) '() (if (null? cur) out (cons (list->string (reverse cur)) out)))]
                                         [else (split (cdr cs) (cons (car cs) cur) out)]))])
                        (cons (list pid (string->number (cadr fields)) (car fields)) acc))
                      acc)))))))

(define (children-of pid procs) (filter (lambda (p) (= (cadr p) pid)) procs))

(define (process-alive? pid)
  (let ([s (read-file (format "/proc/~a/stat" pid))])
    (and s (not (eof-object? s))
         ;; a zombie has ended
         (not (string-contains? s ") Z ")))))

(define (cmdline pid)
  (let ([s (read-file (format "/proc/~a/cmdline" pid))])
    (if (and s (not (eof-object? s))) s "")))

;; ---- sub-programs
(define scheme-exe "scheme")
(define libdirs-arg
  (let ([ds (map (lambda (d) (if (string=? (car d) (cdr d)) (car d) (string-append (car d) "::" (cdr d))))
                 (library-directories))])
    (fold-left (lambda (acc d) (string-append acc ":" d)) (car ds) (cdr ds))))

(define (temp-file tag) (format "/tmp/spindle-test-places-~a-~a" (my-pid) tag))

;; Runs a shell command; returns (exit-status . output lines).
(define (shell cmd tag)
  (let* ([out (temp-file tag)]
         [rc (shell-command (format "~a > ~a 2>&1" cmd out))]
         [text (read-file out)])
    (delete-file out)
    (cons rc (if (and text (not (eof-object? text)))
                 (let split ([cs (string->list text)] [cur '()] [out '()])
                   (cond
                     [(null? cs) (reverse (if (null? cur) out (cons (list->string (reverse cur)) out)))]
                     [(char=? (car cs) #\newline) (split (cdr cs) '() (cons (list->string (reverse cur)) out))]
                     [else (split (cdr cs) (cons (car cs) cur) out)]))
                 '()))))

(define (line-starting prefix lines)
  (find (lambda (l) (and (>= (string-length l) (string-length prefix))
                         (string=? (substring l 0 (string-length prefix)) prefix)))
        lines))

;; A nongenerative record type that the places never define themselves.
(define-record-type program-rec (fields a b) (nongenerative places-test-program-rec-v1))

;; ================================================================ creation
(test "place-enabled? and processor-count"
  (check "enabled" (eq? #t (place-enabled?)))
  (check "processor-count" (and (fixnum? (processor-count)) (> (processor-count) 0))))

(test "places created at once from several OS threads (the first places of the program)"
  ;; the first place also starts the template process; racing starts must
  ;; leave one working template
  (let* ([pool (make-parallel-thread-pool 4)]
         [ts (map (lambda (i)
                    (thread (lambda () (let ([p (echo-place)]) (list p (place-channel-put/get p i))))
                            pool 'results))
                  (iota 4))]
         [rs (map thread-wait ts)])
    (check-equal "echoes" (iota 4) (map cadr rs))
    (for-each (lambda (r) (place-channel-put (car r) 'stop)) rs)
    (check-equal "codes" '(0 0 0 0) (map (lambda (r) (wait/timeout (car r) 10)) rs))))

(test "a place is a place, a place channel and an evt"
  (let ([p (echo-place)])
    (check "place?" (place? p))
    (check "place-channel?" (place-channel? p))
    (check "evt?" (evt? p))
    (check "allowed as a message" (place-message-allowed? p))
    (let-values ([(a b) (place-channel)])
      (check "endpoint not a place" (not (place? a)))
      (check "endpoint is a place channel" (and (place-channel? a) (place-channel? b)))
      (check "endpoint evt" (evt? a))
      (check "distinct" (not (eq? a b))))
    (check "others" (not (or (place? 42) (place? (make-channel)) (place-channel? 42)
                             (place-channel? (make-channel)) (place-channel? (make-async-channel)))))
    (place-channel-put p 'stop)
    (check-equal "exit 0" 0 (place-wait p))))

(test "echo: FIFO, early messages buffered, put/get"
  (let ([p (echo-place)])
    ;; put before the place has had time to start
    (for-each (lambda (i) (place-channel-put p i)) (iota 100))
    (check-equal "in order" (iota 100) (map-in-order (lambda (i) (place-channel-get p)) (iota 100)))
    (check-equal "put/get" 'x (place-channel-put/get p 'x))
    (check-equal "sync" 'y (begin (place-channel-put p 'y) (sync p)))
    (place-channel-put p 'stop)
    (check-equal "exit 0" 0 (place-wait p))))

(test "many places in a row start and end"
  (let ([ps (map (lambda (i) (return-place)) (iota 20))])
    (check-equal "all 0" (make-list 20 0) (map (lambda (p) (wait/timeout p 10)) ps))))

(test "30 places alive at once all answer"
  (let ([ps (map (lambda (i) (echo-place)) (iota 30))])
    (for-each (lambda (p i) (place-channel-put p i)) ps (iota 30))
    (check-equal "answers" (iota 30) (map-in-order (lambda (p) (sync/timeout 20 p)) ps))
    (for-each (lambda (p) (place-channel-put p 'stop)) ps)
    (check-equal "codes" (make-list 30 0) (map-in-order (lambda (p) (wait/timeout p 20)) ps))))

(test "a place can start places of its own; they end with it"
  (let ([p (agent-place)])
    (check-equal "sub-place echo" '(deep 1) (place-channel-put/get p '(sub-echo (deep 1))))
    (let ([sub-pid (place-channel-put/get p '(sub-agent))])
      (check "sub-place alive" (process-alive? sub-pid))
      (place-kill p)
      (check (list 'sub-place-gone sub-pid) (wait-until (lambda () (not (process-alive? sub-pid))) 5 0.02)))
    (check-equal "code" 1 (place-wait p))))

(test "each place has a fresh instance of its library"
  (bump!) (bump!) (bump!)
  (let ([p (agent-place)])
    (check-equal "fresh counter" 1 (place-channel-put/get p '(bump)))
    (check-equal "its own" 2 (place-channel-put/get p '(bump)))
    (check-equal "parent's untouched" 4 (bump!))
    (place-channel-put p '(stop))
    (check-equal "exit 0" 0 (place-wait p))))

(test "a place gets the parent's directory, library path, optimize level, stdout/stderr; empty stdin"
  (let* ([p (agent-place)] [env (place-channel-put/get p '(env))])
    (check-equal "current-directory" (current-directory) (list-ref env 0))
    (check-equal "library-directories" (library-directories) (list-ref env 1))
    (check-equal "library-extensions" (library-extensions) (list-ref env 2))
    (check-equal "optimize-level" (optimize-level) (list-ref env 3))
    (check-equal "stdin at end of file" 'eof (list-ref env 4))
    (check-equal "stdout is ours" (fd-link 1) (list-ref env 5))
    (check-equal "stderr is ours" (fd-link 2) (list-ref env 6))
    (place-channel-put p '(stop))
    (place-wait p)))

(test "a place started after a change of directory gets the new directory"
  (let ([old (current-directory)])
    (dynamic-wind
      (lambda () (current-directory "/tmp"))
      (lambda ()
        (let* ([p (agent-place)] [env (place-channel-put/get p '(env))])
          (check-equal "current-directory" (current-directory) (car env))
          (place-channel-put p '(stop))
          (check-equal "exit 0" 0 (place-wait p))))
      (lambda () (current-directory old)))))

;; ================================================================ messages
(define allowed-values
  (list 0 -1 42 (most-positive-fixnum) (most-negative-fixnum) (expt 2 100) (- (expt 3 90))
        1/3 -22/7 (/ (expt 2 80) 3) 1.5 -0.0 0.0 +inf.0 -inf.0 +nan.0 1e300 5e-324
        3+4i 1.5-2.5i 1/2+3/4i
        #\a #\x0 #\x3bb #\x10FFFF #t #f '() (void)
        'sym '|with space| (string->symbol "")
        "" "hello" "λ unicode ✓" (make-string 1000 #\z)
        (bytevector) (bytevector 0 255 1) (make-bytevector 70000 9)
        '(1 2 3) '(1 . 2) '((a . 1) (b . 2)) (list 1 "two" #\3 '(4.0) (void))
        (vector) (vector 1 'a "s") (vector (vector (vector 1)))
        (box 1) (box (box "x"))))

(test "every allowed kind of value round-trips equal"
  (let ([p (echo-place)])
    (for-each
      (lambda (v)
        (check (list 'allowed? v) (place-message-allowed? v))
        (let ([r (place-channel-put/get p v)])
          (check-equal (list 'round-trip v) v r)
          (when (number? v) (check (list 'eqv v) (eqv? v r)))))
      allowed-values)
    ;; all at once, in one message
    (check-equal "one message" allowed-values (place-channel-put/get p allowed-values))
    (place-channel-put p 'stop)
    (place-wait p)))

(test "exactness and flonum details survive"
  (let ([p (echo-place)])
    (let ([r (place-channel-put/get p (list 1 1.0 -0.0 +nan.0 (expt 2 64) 1/3))])
      (check "exact 1" (and (exact? (car r)) (eqv? 1 (car r))))
      (check "inexact 1.0" (and (flonum? (cadr r)) (eqv? 1.0 (cadr r))))
      (check "-0.0" (eqv? -0.0 (caddr r)))
      (check "nan" (nan? (cadddr r)))
      (check "bignum" (eqv? (expt 2 64) (list-ref r 4)))
      (check "ratnum" (eqv? 1/3 (list-ref r 5))))
    (place-channel-put p 'stop)
    (place-wait p)))

(test "strings, bytevectors, vectors and boxes arrive immutable (in the place and back)"
  (let* ([p (agent-place)]
         [vals (list (string-copy "mutable") (bytevector 1 2 3) (vector 1 2) (box 7)
                     (make-string 0) (make-vector 0) (make-bytevector 0))])
    (check-equal "seen in the place"
                 '((string #t) (bytevector #t) (vector #t) (box #t) (string #t) (vector #t) (bytevector #t))
                 (place-channel-put/get p (list 'describe-all vals)))
    (let ([r (echo p vals)])
      (check-equal "contents" vals r)
      (check "string" (immutable-string? (list-ref r 0)))
      (check "bytevector" (immutable-bytevector? (list-ref r 1)))
      (check "vector" (immutable-vector? (list-ref r 2)))
      (check "box" (immutable-box? (list-ref r 3)))
      (check "string-set! refused" (raised (lambda () (string-set! (list-ref r 0) 0 #\x))))
      (check "bytevector-u8-set! refused" (raised (lambda () (bytevector-u8-set! (list-ref r 1) 0 9))))
      (check "vector-set! refused" (raised (lambda () (vector-set! (list-ref r 2) 0 9))))
      (check "set-box! refused" (raised (lambda () (set-box! (list-ref r 3) 9)))))
    ;; pairs stay pairs (mutable, like Racket's)
    (let ([r (echo p (list 1 2))])
      (check-equal "list" '(1 2) r))
    (place-channel-put p '(stop))
    (place-wait p)))

(test "the sender's objects are copied, not shared or frozen"
  (let* ([p (echo-place)] [s (string-copy "abc")] [v (vector 1 2)] [b (box 1)])
    (place-channel-put p (list s v b))
    (string-set! s 0 #\X) (vector-set! v 0 'changed) (set-box! b 'changed)
    (check-equal "copy made at put" (list "abc" (vector 1 2) (box 1)) (place-channel-get p))
    (check "sender's still mutable" (not (or (immutable-string? s) (immutable-vector? v) (immutable-box? b))))
    (place-channel-put p 'stop)
    (place-wait p)))

(test "gensyms keep their identity across round trips"
  (let* ([p (agent-place)] [g (gensym "pretty")] [g2 (gensym)])
    (check "eq after a round trip" (eq? g (echo p g)))
    (check "eq in a structure" (let ([r (echo p (list g (vector g2) g))])
                                 (and (eq? g (car r)) (eq? g (caddr r)) (eq? g2 (vector-ref (cadr r) 0)))))
    (check "eq across messages" (eq? (echo p g) (echo p g)))
    (check-equal "still a gensym in the place" '(gensym "pretty") (place-channel-put/get p (list 'describe g)))
    (check "interned symbols" (eq? 'plain (echo p 'plain)))
    (place-channel-put p '(stop))
    (place-wait p)))

(define (hashtable-contents h)
  (let-values ([(ks vs) (hashtable-entries h)])
    (list-sort (lambda (a b) (string<? (format "~s" a) (format "~s" b)))
               (map cons (vector->list ks) (vector->list vs)))))

(define (make-filled make entries)
  (let ([h (make)])
    (for-each (lambda (e) (hashtable-set! h (car e) (cdr e))) entries)
    h))

(test "gensyms made in different places are different"
  (let ([p (agent-place)] [q (agent-place)])
    (let ([g1 (place-channel-put/get p '(make-gensym "same"))]
          [g2 (place-channel-put/get q '(make-gensym "same"))]
          [g3 (place-channel-put/get p '(make-gensym "same"))])
      (check "gensyms" (and (gensym? g1) (gensym? g2) (gensym? g3)))
      (check "distinct" (not (or (eq? g1 g2) (eq? g1 g3) (eq? g2 g3))))
      (check "distinct from ours" (not (eq? g1 (gensym "same")))))
    (place-channel-put p '(stop))
    (place-channel-put q '(stop))
    (check-equal "codes" '(0 0) (list (place-wait p) (place-wait q)))))

(test "hashtables of each allowed kind arrive immutable, same kind and contents"
  (let ([p (agent-place)]
        [kinds
         (list
           (list 'eq (lambda () (make-eq-hashtable)) eq? #f '((a . 1) (b . "two") (3 . #\c)))
           (list 'eqv (lambda () (make-eqv-hashtable)) eqv? #f
                 (list (cons (expt 2 70) 'big) (cons 1.5 'flo) (cons #\x 'char) (cons 1/3 'rat)))
           (list 'equal (lambda () (make-hashtable equal-hash equal?)) equal? equal-hash
                 (list (cons '(1 2) 'list) (cons "str" 'string) (cons (vector 1) 'vec)))
           (list 'string (lambda () (make-hashtable string-hash string=?)) string=? string-hash
                 '(("k1" . 1) ("k2" . (2 2))))
           (list 'symbol (lambda () (make-hashtable symbol-hash eq?)) eq? symbol-hash
                 '((x . 1) (y . #(2)))))])
    (for-each
      (lambda (k)
        (let* ([name (car k)] [h (make-filled (cadr k) (list-ref k 4))])
          (check (list name 'allowed) (place-message-allowed? h))
          (check-equal (list name 'in-place) '(hashtable #f) (place-channel-put/get p (list 'describe h)))
          (let ([r (echo p h)])
            (check (list name 'hashtable?) (hashtable? r))
            (check (list name 'immutable) (not (hashtable-mutable? r)))
            (check (list name 'equivalence) (eq? (caddr k) (hashtable-equivalence-function r)))
            (check (list name 'hash) (eq? (cadddr k) (hashtable-hash-function r)))
            (check-equal (list name 'contents) (hashtable-contents h) (hashtable-contents r))
            (for-each (lambda (e) (check-equal (list name 'ref (car e)) (cdr e) (hashtable-ref r (car e) 'missing)))
                      (list-ref k 4))
            (check (list name 'set!-refused) (raised (lambda () (hashtable-set! r 'new 1)))))))
      kinds)
    ;; also an immutable source table
    (let ([r (echo p (hashtable-copy (make-filled make-eq-hashtable '((a . 1)))))])
      (check-equal "immutable source" 1 (hashtable-ref r 'a #f)))
    (place-channel-put p '(stop))
    (place-wait p)))

(test "an eq hashtable keyed by objects of the same message keeps the keys' identity"
  (let* ([p (echo-place)] [key (list 'k)] [skey (string-copy "s")] [h (make-eq-hashtable)])
    (hashtable-set! h key 'pair-key)
    (hashtable-set! h skey 'string-key)
    (let ([r (place-channel-put/get p (list key skey h))])
      (check-equal "pair key" 'pair-key (hashtable-ref (caddr r) (car r) #f))
      (check-equal "string key" 'string-key (hashtable-ref (caddr r) (cadr r) #f)))
    (place-channel-put p 'stop)
    (place-wait p)))

(test "nongenerative records with immutable fields round-trip with their type"
  (let* ([p (agent-place)] [pt (make-point 1 "one")] [cp (make-cpoint 2 3 'red)]
         [pr (make-program-rec 'a (list 1 2))])
    (check "allowed" (and (place-message-allowed? pt) (place-message-allowed? cp) (place-message-allowed? pr)))
    (let ([r (echo p pt)])
      (check "point?" (point? r))
      (check "same type" (eq? (record-rtd pt) (record-rtd r)))
      (check-equal "fields" '(1 "one") (list (point-x r) (point-y r)))
      (check "string field immutable" (immutable-string? (point-y r))))
    (let ([r (echo p cp)])
      (check "cpoint? and point?" (and (cpoint? r) (point? r)))
      (check-equal "parent and own fields" '(2 3 red) (list (point-x r) (point-y r) (cpoint-color r))))
    (check-equal "the place's own type recognises it" '(1 "one") (place-channel-put/get p (list 'point? pt)))
    (check-equal "subtype seen by the place" '(point #t) (place-channel-put/get p (list 'describe cp)))
    ;; a type the place never defined
    (let ([r (echo p pr)])
      (check "program-rec?" (program-rec? r))
      (check-equal "fields" '(a (1 2)) (list (program-rec-a r) (program-rec-b r))))
    ;; a record holding values that need conversion
    (let* ([h (make-filled make-eq-hashtable '((z . 26)))]
           [r (echo p (make-point (box 5) h))])
      (check "box field" (and (box? (point-x r)) (= 5 (unbox (point-x r)))))
      (check "hashtable field" (= 26 (hashtable-ref (point-y r) 'z #f))))
    (place-channel-put p '(stop))
    (place-wait p)))

(test "sharing within a message is kept"
  (let* ([p (echo-place)] [x (list 1 2)] [s (string-copy "ab")] [b (box 1)] [v (vector 1)]
         [pt (make-point 1 2)] [h (make-eq-hashtable)])
    (let ([r (place-channel-put/get p (list x x))]) (check "pair" (eq? (car r) (cadr r))))
    (let ([r (place-channel-put/get p (vector s s))]) (check "string" (eq? (vector-ref r 0) (vector-ref r 1))))
    (let ([r (place-channel-put/get p (list v v))]) (check "vector" (eq? (car r) (cadr r))))
    (let ([r (place-channel-put/get p (list b b))]) (check "box" (eq? (car r) (cadr r))))
    (let ([r (place-channel-put/get p (list pt pt))]) (check "record" (eq? (car r) (cadr r))))
    (let ([r (place-channel-put/get p (list h h))]) (check "hashtable" (eq? (car r) (cadr r))))
    (let ([r (place-channel-put/get p (list x (box x)))]) (check "pair shared with a box's content" (eq? (car r) (unbox (cadr r)))))
    (let ([r (place-channel-put/get p (list pt (box pt)))]) (check "record inside and outside a box" (eq? (car r) (unbox (cadr r)))))
    (place-channel-put p 'stop)
    (place-wait p)))

(test "sharing of place channels and shared vectors within a message is kept"
  (let ([p (echo-place)])
    (let-values ([(a b) (place-channel)])
      (let* ([sb (make-shared-bytes 1)] [h (make-eq-hashtable)])
        (hashtable-set! h a 'chan-key)
        (let ([r (place-channel-put/get p (list a a sb sb h (make-point a sb)))])
          (check "channel twice" (eq? (car r) (cadr r)))
          (check "shared vector twice" (eq? (caddr r) (cadddr r)))
          (check "channel as an eq key" (eq? 'chan-key (hashtable-ref (list-ref r 4) (car r) #f)))
          (check "record fields" (and (eq? (car r) (point-x (list-ref r 5))) (eq? (caddr r) (point-y (list-ref r 5)))))
          (place-channel-put (point-x (list-ref r 5)) 'via-record)
          (check-equal "channel from a record works" 'via-record (sync/timeout 5 b)))))
    (place-channel-put p 'stop)
    (place-wait p)))

(test "cycles through pairs and vectors are kept"
  (let ([p (echo-place)])
    (let* ([l (list 1 2 3)])
      (set-cdr! (cddr l) l)
      (let ([r (place-channel-put/get p l)])
        (check "circular list" (and (eqv? 1 (car r)) (eqv? 3 (caddr r)) (eq? r (cdddr r))))))
    (let ([v (vector 'self #f)])
      (vector-set! v 1 v)
      (let ([r (place-channel-put/get p v)])
        (check "self-containing vector" (eq? r (vector-ref r 1)))))
    ;; the same, in a message that also holds a box (the converted path)
    (let ([v (vector 'self #f (box 1))])
      (vector-set! v 1 v)
      (let ([r (place-channel-put/get p v)])
        (check "self-containing vector with a box" (eq? r (vector-ref r 1)))))
    (place-channel-put p 'stop)
    (place-wait p)))

(test "a cycle through a box is kept"
  (let ([p (echo-place)] [b (box #f)])
    (set-box! b (list 'in b))
    (let ([r (place-channel-put/get p b)])
      (check "box" (box? r))
      (check "cycle" (eq? r (cadr (unbox r)))))
    ;; a box that holds itself, a box pair holding each other, and one
    ;; that arrives in a message with a record (the converted path)
    (let ([b (box #f)])
      (set-box! b b)
      (let ([r (place-channel-put/get p b)])
        (check "self-containing box" (and (box? r) (immutable-box? r) (eq? (unbox r) r)))))
    (let ([a (box #f)] [c (box #f)])
      (set-box! a c) (set-box! c a)
      (let ([r (place-channel-put/get p a)])
        (check "two boxes holding each other" (and (eq? (unbox (unbox r)) r) (not (eq? (unbox r) r))))))
    (let ([b (box #f)])
      (set-box! b b)
      (let ([r (place-channel-put/get p (list b (make-hashtable equal-hash equal?)))])
        (check "self-containing box, converted" (eq? (unbox (car r)) (car r)))))
    (place-channel-put p 'stop)
    (place-wait p)))

(define (check-boxed-values r mine where)
  (check (list where 'record) (point? (unbox (list-ref r 0))))
  (check (list where 'hashtable) (and (hashtable? (unbox (list-ref r 1))) (eq? 'v (hashtable-ref (unbox (list-ref r 1)) 'k #f))))
  (check (list where 'shared-bytes) (and (shared-bytes? (unbox (list-ref r 2))) (= 5 (shared-bytes-ref (unbox (list-ref r 2)) 1))))
  (let ([ep (unbox (list-ref r 3))])
    (check (list where 'place-channel) (place-channel? ep))
    (place-channel-put ep 'through-box)
    (check-equal (list where 'usable) 'through-box (sync/timeout 5 mine)))
  (check (list where 'string-immutable) (immutable-string? (unbox (list-ref r 4))))
  (check (list where 'vector-immutable) (immutable-vector? (unbox (list-ref r 5)))))

(define (boxed-values theirs)
  (list (box (make-point 1 2)) (box (make-filled make-eq-hashtable '((k . v)))) (box (make-shared-bytes 2 5))
        (box theirs) (box (string-copy "s")) (box (vector 1))))

(test "values inside a box arrive decoded: records, hashtables, shared vectors, channels; strings frozen"
  ;; through a local channel
  (let-values ([(mine theirs) (place-channel)] [(a b) (place-channel)])
    (place-channel-put a (boxed-values theirs))
    (check-boxed-values (place-channel-get b) mine 'local))
  ;; through a place and back
  (let ([p (echo-place)])
    (let-values ([(mine theirs) (place-channel)])
      (check-boxed-values (place-channel-put/get p (boxed-values theirs)) mine 'echoed))
    (place-channel-put p 'stop)
    (check-equal "code" 0 (wait/timeout p 10))
    (place-kill p)))

(test "a cycle through a hashtable is kept"
  (let ([p (echo-place)] [h (make-eq-hashtable)])
    (hashtable-set! h 'me (vector h))
    (let ([r (place-channel-put/get p h)])
      (check "hashtable" (hashtable? r))
      (check "cycle" (eq? r (vector-ref (hashtable-ref r 'me #f) 0))))
    (place-channel-put p 'stop)
    (place-wait p)))

(test "a cycle through a record is kept"
  (let ([p (echo-place)])
    ;; plain data only
    (let* ([v (vector #f)] [r (make-point v 'plain)])
      (vector-set! v 0 r)
      (let ([x (place-channel-put/get p r)])
        (check "plain record cycle" (eq? x (vector-ref (point-x x) 0)))))
    ;; with a box in the message too
    (let* ([v (vector #f (box 1))] [r (make-point v 'boxed)])
      (vector-set! v 0 r)
      (let ([x (place-channel-put/get p r)])
        (check "record cycle with a box" (eq? x (vector-ref (point-x x) 0)))))
    (place-channel-put p 'stop)
    (place-wait p)))

(test "large messages: 16 MB bytevector, 200000-element list, deep nesting"
  (let ([p (echo-place)])
    (let* ([bv (make-bytevector (* 16 1024 1024) 0)])
      (do ([i 0 (+ i 4096)]) ((>= i (bytevector-length bv))) (bytevector-u8-set! bv i (mod (quotient i 4096) 256)))
      (check "bytevector" (bytevector=? bv (place-channel-put/get p bv))))
    (let ([l (iota 200000)])
      (check-equal "long list" l (place-channel-put/get p l)))
    (let ([deep (let loop ([i 0] [acc '()]) (if (= i 20000) acc (loop (+ i 1) (list acc i))))])
      (check-equal "deep" deep (place-channel-put/get p deep)))
    (place-channel-put p 'stop)
    (place-wait p)))

(test "a message nested deeper than the limit is refused at the put, in both directions"
  (let ([deep (let loop ([i 0] [acc '()]) (if (= i 100000) acc (loop (+ i 1) (list acc))))]
        [too-deep? (lambda (c) (and (assertion-violation? c) (message-condition? c)
                                    (string-contains? (condition-message c) "nests deeper than")))])
    (check "not allowed" (not (place-message-allowed? deep)))
    (check "a vector nest too" (not (place-message-allowed? (let loop ([i 0] [acc 1]) (if (= i 100000) acc (loop (+ i 1) (vector acc)))))))
    (check "a long list is one level" (place-message-allowed? (iota 300000)))
    (let ([p (echo-place)])
      (check-raises "put raises, naming place-channel-put" (both (assertion-from? 'place-channel-put) too-deep?)
        (lambda () (place-channel-put p (list 'echo deep))))
      (check-equal "the place lives on" '(echo ok) (place-channel-put/get p (list 'echo 'ok)))
      (place-channel-put p 'stop)
      (check-equal "and ends normally" 0 (place-wait p))))
  ;; from a place: its put raises there (the parent never sees the message)
  (let ([p (track (dynamic-place '(places hygiene) 'start-deep))])
    (place-channel-put p 100000)
    (let ([r (place-channel-get p)])
      (check "the place's put was refused" (and (pair? r) (eq? (car r) 'refused) (string-contains? (cadr r) "nests deeper than"))))
    (check-equal "place ends" 0 (place-wait p)))
  (let ([p (track (dynamic-place '(places hygiene) 'start-deep))])
    (place-channel-put p 20000)
    (check-equal "20000 deep arrives" 20000
      (let count ([v (place-channel-get p)] [n 0]) (if (null? v) n (count (car v) (+ n 1)))))
    (check-equal "then 'sent" 'sent (place-channel-get p))
    (check-equal "place ends" 0 (place-wait p))))

(define-record-type gen-rec (fields a))   ; generative

(define-ftype cint int)
(define (disallowed-values)
  (let ([ht-proc (make-eq-hashtable)] [ht-weak (make-weak-eq-hashtable)]
        [ht-custom (make-hashtable string-length =)])
    (hashtable-set! ht-proc 'f car)
    (hashtable-set! ht-weak 'a 1)
    (list
      (cons 'procedure car)
      (cons 'lambda (lambda () 1))
      (cons 'mutable-record (make-mpoint 1))
      (cons 'generative-record (make-gpoint 1))
      (cons 'program-generative-record (make-gen-rec 1))
      (cons 'record-with-mutable-parent (make-mchild 1 2))
      (cons 'record-holding-a-procedure (make-point car 1))
      (cons 'port (current-output-port))
      (cons 'string-port (open-string-input-port "x"))
      (cons 'fxvector (fxvector 1 2 3))
      (cons 'spindle-channel (make-channel))
      (cons 'async-channel (make-async-channel))
      (cons 'semaphore (make-semaphore 0))
      (cons 'thread (current-thread))
      (cons 'thread-pool (make-parallel-thread-pool 1))
      (cons 'chez-mutex (make-mutex))
      (cons 'eof (eof-object))
      (cons 'bwp #!bwp)
      (cons 'always-evt always-evt)
      (cons 'never-evt never-evt)
      (cons 'empty-choice-evt (choice-evt))
      (cons 'alarm-evt (alarm-evt 0))
      (cons 'ftype-pointer (make-ftype-pointer cint 0))
      (cons 'weak-hashtable ht-weak)
      (cons 'ephemeron-hashtable (make-ephemeron-eq-hashtable))
      (cons 'custom-hashtable ht-custom)
      (cons 'hashtable-holding-a-procedure ht-proc)
      (cons 'nested-in-list (list 1 2 (list car)))
      (cons 'nested-in-vector (vector 1 (vector (eof-object))))
      (cons 'nested-in-box (box (make-channel)))
      (cons 'parameter (make-parameter 1))
      (cons 'condition-variable (make-condition)))))

(test "disallowed messages: place-message-allowed? is #f, put raises naming place-channel-put, nothing sent"
  ;; every value is tried; the names failing each part are listed at the end
  (let ([p (echo-place)] [wrongly-allowed '()] [put-not-refused '()] [put/get-not-refused '()] [sent '()])
    (for-each
      (lambda (entry i)
        (let ([name (car entry)] [v (cdr entry)])
          (when (place-message-allowed? v) (set! wrongly-allowed (cons name wrongly-allowed)))
          (unless ((assertion-from? 'place-channel-put) (raised (lambda () (place-channel-put p v))))
            (set! put-not-refused (cons name put-not-refused)))
          (unless (assertion-violation? (raised (lambda () (place-channel-put/get p v))))
            (set! put/get-not-refused (cons name put/get-not-refused)))
          ;; the next message the place sees is the following allowed one
          (place-channel-put p (list 'marker i))
          (let loop ([k 0])
            (let ([r (guard (c [#t (list 'raised (condition-message c))]) (sync/timeout 5 p))])
              (cond
                [(equal? r (list 'marker i)) (void)]
                [(or (not r) (and (pair? r) (eq? (car r) 'raised)) (= k 3))
                 (set! sent (cons (list name 'then r) sent))]
                [else (set! sent (cons (list name 'extra-message) sent)) (loop (+ k 1))])))))
      (disallowed-values) (iota (length (disallowed-values))))
    (check-equal "place-message-allowed? says #f" '() (reverse wrongly-allowed))
    (check-equal "place-channel-put raises &assertion naming place-channel-put" '() (reverse put-not-refused))
    (check-equal "place-channel-put/get raises &assertion" '() (reverse put/get-not-refused))
    (check-equal "nothing sent" '() (reverse sent))
    (place-channel-put p 'stop)
    (check-equal "exit 0" 0 (wait/timeout p 10))
    (place-kill p)))

(test "the error for a disallowed message says what was expected"
  (let-values ([(a b) (place-channel)])
    (let ([c (raised (lambda () (place-channel-put a car)))])
      (check "assertion" (assertion-violation? c))
      (check "message" (and (message-condition? c) (string-contains? (condition-message c) "place-message-allowed?"))))))

(test "place-message-allowed? accepts place channels, places and shared vectors, deeply"
  (let-values ([(a b) (place-channel)])
    (let ([p (return-place)])
      (check "endpoint" (place-message-allowed? a))
      (check "place" (place-message-allowed? p))
      (check "shared vectors" (for-all place-message-allowed?
                                       (list (make-shared-bytes 1) (make-shared-fxvector 1) (make-shared-flvector 1))))
      (check "nested" (place-message-allowed? (list (vector a (box p)) (make-shared-bytes 2))))
      (check "all allowed values" (for-all place-message-allowed? allowed-values))
      (place-wait p))))

;; ================================================================ channels
(test "place-channel: two connected endpoints within one place, both directions, FIFO"
  (let-values ([(a b) (place-channel)])
    (for-each (lambda (i) (place-channel-put a i)) (iota 50))
    (check-equal "a->b" (iota 50) (map-in-order (lambda (i) (place-channel-get b)) (iota 50)))
    (place-channel-put b 'back)
    (check-equal "b->a" 'back (place-channel-get a))
    (check-equal "put/get gets from the same endpoint" 'reply
                 (begin (place-channel-put b 'reply) (place-channel-put/get a 'ignored-by-nobody)))
    (check-equal "the other end got it" 'ignored-by-nobody (place-channel-get b))))

(test "place channels as evts"
  (let-values ([(a b) (place-channel)] [(c d) (place-channel)])
    (check "empty polls #f" (not (sync/timeout 0 b)))
    (check "empty times out" (not (sync/timeout 0.05 b)))
    (place-channel-put a 'm1)
    (check-equal "sync gives the message" 'm1 (sync b))
    (place-channel-put c 'from-c)
    (check-equal "choice" 'from-c (sync (choice-evt b d)))
    (place-channel-put a 5)
    (check-equal "wrap" 50 (sync (wrap-evt b (lambda (m) (* m 10)))))
    (place-channel-put a 'h)
    (check-equal "handle" '(h) (sync (handle-evt b list)))
    ;; a message that comes after a timed-out sync is not lost
    (check "timed out" (not (sync/timeout 0.02 b)))
    (place-channel-put a 'late)
    (check-equal "late" 'late (place-channel-get b))))

(test "several threads getting from one endpoint: each message exactly once"
  (let-values ([(a b) (place-channel)])
    (let* ([pool (make-parallel-thread-pool 2)]
           [ts (map (lambda (i) (thread (lambda () (map (lambda (j) (place-channel-get b)) (iota 250)))
                                        (if (even? i) #f pool) 'results))
                    (iota 4))])
      (for-each (lambda (i) (place-channel-put a i)) (iota 1000))
      (let ([got (apply append (map thread-wait ts))])
        (check-equal "all, once" (iota 1000) (list-sort < got))))))

(test "a thread blocked in place-channel-get can be broken or killed; no message is lost"
  (let-values ([(a b) (place-channel)])
    (let* ([res (box #f)]
           [t (thread (lambda ()
                        (guard (c [(break-condition? c) (set-box! res 'broken)])
                          (place-channel-get b)
                          (set-box! res 'got))))])
      (sleep 0.05)
      (break-thread t)
      (thread-wait t)
      (check-equal "broken" 'broken (unbox res))
      (let ([t2 (thread (lambda () (place-channel-get b)))])
        (sleep 0.05)
        (kill-thread t2)
        (thread-wait t2))
      (place-channel-put a 'after)
      (check-equal "next get has it" 'after (sync/timeout 2 b)))))

(test "parked getters still get messages while other threads' gets succeed"
  ;; gets that succeed while spinning may turn the poller's interest off,
  ;; but not while another getter is parked: every getter must end
  (let-values ([(a b) (place-channel)])
    (let ([pool (make-parallel-thread-pool 2)])
      (do ([round 0 (+ round 1)]) ((= round 20))
        (let* ([getters (map (lambda (i)
                               (when (odd? i) (sleep 0.0005))
                               (thread (lambda () (place-channel-get b)) (if (even? i) pool #f) 'results))
                             (iota 6))])
          (do ([i 0 (+ i 1)]) ((= i 6))
            (place-channel-put a (+ (* 10 round) i))
            (if (even? (+ i round)) (yield) (sleep 0.0003)))
          (check (list 'every-getter-ended round)
                 (for-all (lambda (g) (sync/timeout 5 (thread-dead-evt g))) getters))
          (check-equal "each once" (map (lambda (i) (+ (* 10 round) i)) (iota 6))
                       (list-sort < (map thread-wait getters))))))))

(test "getters killed while they spin do not leave later getters deaf"
  (let-values ([(a b) (place-channel)])
    (do ([i 0 (+ i 1)]) ((= i 30))
      (let ([t (thread (lambda () (place-channel-get b)))])
        (do ([k 0 (+ k 1)]) ((= k (mod i 5))) (yield))
        (kill-thread t)))
    (let ([t (thread (lambda () (place-channel-get b)) #f 'results)])
      (sleep 0.1)
      (place-channel-put a 'after)
      (check "a parked getter wakes" (sync/timeout 5 (thread-dead-evt t)))
      (check-equal "and has it" 'after (thread-wait t)))
    (place-channel-put a 'evt)
    (check-equal "a sync has the next" 'evt (sync/timeout 5 b))))

(test "messages around the 4 KB read area, empty ones and fasl ones, back to back: whole and in order"
  (let* ([sizes '(0 1 15 16 17 100 4064 4079 4080 4081 4095 4096 4097 8192 100000 0 3)]
         [msgs (apply append
                      (map (lambda (n)
                             (let ([bv (make-bytevector n)])
                               (do ([i 0 (+ i 1)]) ((= i n)) (bytevector-u8-set! bv i (mod (+ i n) 251)))
                               (list bv (list n (make-string (mod n 300) #\s)) n)))
                           sizes))])
    (let-values ([(a b) (place-channel)])
      (for-each (lambda (m) (place-channel-put a m)) msgs)
      (check-equal "local" msgs (map-in-order (lambda (m) (place-channel-get b)) msgs)))
    (let ([p (echo-place)])
      (for-each (lambda (m) (place-channel-put p m)) msgs)
      (check-equal "through a place and back" msgs (map-in-order (lambda (m) (place-channel-get p)) msgs))
      (place-kill p))))

(test "frame buffers: a large one freed is the next one given in its size class"
  ;; (the pool is LIFO; other traffic may have filled it, so only that holds)
  (let* ([a (buffer-alloc 100000)] [_ (buffer-free a 100000)] [b (buffer-alloc 131072)])
    (check "same class (128 KB), same buffer" (= a b))
    (foreign-set! 'unsigned-8 b 131071 7)            ; the whole class is usable
    (buffer-free b 131072))
  (let ([bs (map (lambda (i) (buffer-alloc (* 4 1048576))) (iota 8))])
    (for-each (lambda (b) (foreign-set! 'unsigned-8 b (- (* 4 1048576) 1) 1)) bs)
    (for-each (lambda (b) (buffer-free b (* 4 1048576))) bs))
  (let ([small (buffer-alloc 1000)])
    (foreign-set! 'unsigned-8 small 999 1)
    (buffer-free small 1000)))

(test "stress: plain getters and sync getters on two pools share one endpoint; each message once"
  (let-values ([(a b) (place-channel)])
    (let* ([pool (make-parallel-thread-pool 2)]
           [n 4000]
           [getter (lambda (use-sync?)
                     (lambda ()
                       (let loop ([acc '()])
                         (let ([m (if use-sync? (sync b) (place-channel-get b))])
                           (if (eq? m 'stop) acc (loop (cons m acc)))))))]
           [getters (map (lambda (i) (thread (getter (odd? i)) (if (< i 2) #f pool) 'results)) (iota 4))]
           [producers (map (lambda (k)
                             (thread (lambda ()
                                       (do ([i k (+ i 2)]) ((>= i n))
                                         (place-channel-put a i)
                                         (when (zero? (mod i 97)) (sleep 0.001))))
                                     (if (even? k) #f pool)))
                           '(0 1))])
      (for-each thread-wait producers)
      (for-each (lambda (g) (place-channel-put a 'stop)) getters)
      (let ([got (apply append (map thread-wait getters))])
        (check-equal "all, once" (iota n) (list-sort < got))))))

(test "puts never block: 10 MB into a local channel nobody reads yet"
  (let-values ([(a b) (place-channel)])
    (let ([ms (elapsed-ms (lambda () (do ([i 0 (+ i 1)]) ((= i 10)) (place-channel-put a (make-bytevector 1000000 i)))))])
      (check (list 'quick ms) (< ms 5000)))
    (check-equal "all there, in order" (iota 10)
                 (map-in-order (lambda (i) (let ([bv (place-channel-get b)]) (and (= (bytevector-length bv) 1000000) (bytevector-u8-ref bv 999999))))
                      (iota 10)))))

(test "a place channel sent to a place: the place answers on it"
  (let ([p (agent-place)])
    (let-values ([(mine theirs) (place-channel)])
      (check-equal "put-on" 'put (place-channel-put/get p (list 'put-on theirs 'via-sent-channel)))
      (check-equal "arrived" 'via-sent-channel (place-channel-get mine))
      (check-equal "seen as a place channel" 'place-channel (place-channel-put/get p (list 'describe theirs))))
    ;; the place makes a channel and sends one end back
    (let ([sub (place-channel-put/get p '(new-channel))])
      (check "got an endpoint" (and (place-channel? sub) (not (place? sub))))
      (check-equal "talks" '(sub hi) (place-channel-put/get sub 'hi))
      (check-equal "again" '(sub 2) (place-channel-put/get sub 2)))
    (place-channel-put p '(stop))
    (check-equal "exit 0" 0 (place-wait p))))

(test "channel passing: two places talk directly over a channel made by the parent"
  (let ([a (agent-place)] [b (agent-place)])
    (let-values ([(end-a end-b) (place-channel)])
      (place-channel-put b (list 'sum end-b 100))
      (place-channel-put a (list 'pump end-a 100))
      (check-equal "B summed" (list 'sum 5050 #t) (place-channel-get b))
      (check-equal "A got B's reply" (list 'pump-done (list 5050 #t)) (place-channel-get a)))
    (place-channel-put a '(stop))
    (place-channel-put b '(stop))
    (check-equal "codes" '(0 0) (list (place-wait a) (place-wait b)))))

(test "channel passing: a place sent to another place travels as its channel"
  (let ([a (agent-place)] [b (agent-place)])
    ;; the parent never reads from a, so b can talk to a through it
    (check-equal "b holds a" 'place-channel (place-channel-put/get b (list 'describe a)))
    (check-equal "b puts a command to a" 'put (place-channel-put/get b (list 'put-on a '(echo from-b))))
    (check-equal "b gets a's reply" 'from-b (place-channel-put/get b (list 'get-from a 5)))
    (place-channel-put b '(stop))
    (check-equal "b" 0 (place-wait b))
    (place-channel-put a '(stop))
    (check-equal "a" 0 (place-wait a))))

(test "an endpoint read here and then sent away delivers to the place that reads it"
  (let ([p (agent-place)])
    (let-values ([(a b) (place-channel)])
      ;; use a locally first
      (place-channel-put b 'local)
      (check-equal "local" 'local (place-channel-get a))
      ;; hand a to the place; from now on only the place reads it
      (check-equal "held" 'held (place-channel-put/get p (list 'hold a)))
      (place-channel-put b 'for-the-place)
      (check-equal "the place got it" 'for-the-place (place-channel-put/get p (list 'get-from a 3))))
    (place-channel-put p '(stop))
    (place-wait p)))

(test "both ends of a channel sent in one message, and back"
  (let ([p (echo-place)])
    (let-values ([(a b) (place-channel)])
      (let ([r (place-channel-put/get p (list a b))])
        (place-channel-put (car r) 'one)
        (check-equal "a' -> b'" 'one (sync/timeout 5 (cadr r)))
        (place-channel-put (cadr r) 'two)
        (check-equal "b' -> a'" 'two (sync/timeout 5 (car r)))))
    (place-channel-put p 'stop)
    (check-equal "code" 0 (wait/timeout p 10))))

(test "an endpoint sent away after a message reached this place: the receiving place still gets it"
  (let ([p (agent-place)])
    (let-values ([(a b) (place-channel)])
      (place-channel-put b 'local)
      (check-equal "local" 'local (place-channel-get a))
      ;; nobody here gets this one, but it may already have been read in
      (place-channel-put b 'early)
      (sleep 0.2)
      (check-equal "held" 'held (place-channel-put/get p (list 'hold a)))
      (check-equal "the place got it" 'early (place-channel-put/get p (list 'get-from a 3))))
    (place-channel-put p '(stop))
    (place-wait p)))

(test "an endpoint sent away while large messages are arriving: the receiving place gets them whole, in order"
  (let ([x (agent-place)] [y (agent-place)] [n 40] [size 500000])
    (let-values ([(a b) (place-channel)])
      (place-channel-put x (list 'flood-on b n size))
      (let ([first (place-channel-get a)])
        (check "first" (and (bytevector? first) (= (bytevector-length first) size)))
        ;; hand a to y in the middle of the stream
        (let ([r (place-channel-put/get y (list 'collect-from a (- n 1) size 5))])
          (check-equal "y got the rest, whole and in order" (list (- n 1) 1 #t #t) r))))
    (place-channel-put x '(stop))
    (place-channel-put y '(stop))
    (check-equal "codes" '(0 0) (list (wait/timeout x 10) (wait/timeout y 10)))))

(test "an endpoint sent through a local channel still reaches its peer"
  (let-values ([(a b) (place-channel)] [(x y) (place-channel)])
    (place-channel-put x a)
    (let ([a2 (place-channel-get y)])
      (check "endpoint" (place-channel? a2))
      (place-channel-put a2 'through-copy)
      (check-equal "peer" 'through-copy (place-channel-get b)))))

(test "a message with many place channels"
  (let ([p (echo-place)])
    (let* ([pairs (map (lambda (i) (call-with-values place-channel cons)) (iota 300))]
           [r (place-channel-put/get p (map cdr pairs))])
      (check-equal "count" 300 (length r))
      (place-channel-put (list-ref r 299) 'last)
      (check-equal "usable" 'last (place-channel-get (car (list-ref pairs 299)))))
    (place-channel-put p 'stop)
    (place-wait p)))

;; ================================================================ shared vectors
(test "shared bytes: constructors, accessors, copy out"
  (let ([sb (make-shared-bytes 10)] [sb7 (make-shared-bytes 4 7)] [sl (shared-bytes 1 2 255)])
    (check "predicate" (and (shared-bytes? sb) (not (shared-bytes? (bytevector 1))) (not (bytevector? sb))
                            (not (shared-fxvector? sb)) (not (shared-flvector? sb))))
    (check-equal "length" 10 (shared-bytes-length sb))
    (check-equal "zero filled" (make-bytevector 10 0) (shared-bytes->bytevector sb))
    (check-equal "filled" (bytevector 7 7 7 7) (shared-bytes->bytevector sb7))
    (check-equal "literal" (bytevector 1 2 255) (shared-bytes->bytevector sl))
    (shared-bytes-set! sb 3 200)
    (check-equal "ref" 200 (shared-bytes-ref sb 3))
    (check-equal "range" (bytevector 0 200 0) (shared-bytes->bytevector sb 2 5))
    (check-equal "empty range" (bytevector) (shared-bytes->bytevector sb 3 3))
    (check-equal "start only" 7 (bytevector-length (shared-bytes->bytevector sb 3)))
    (let ([copy (shared-bytes->bytevector sb)])
      (bytevector-u8-set! copy 3 1)
      (check-equal "a fresh mutable copy" 200 (shared-bytes-ref sb 3)))
    (check-equal "empty" 0 (shared-bytes-length (make-shared-bytes 0)))
    (check-equal "empty literal" 0 (shared-bytes-length (shared-bytes)))))

(test "shared fxvectors and flvectors: constructors and accessors"
  (let ([fx (make-shared-fxvector 5)] [fx3 (make-shared-fxvector 2 -3)]
        [fxl (shared-fxvector (most-positive-fixnum) (most-negative-fixnum) 0)]
        [fl (make-shared-flvector 4)] [fl1 (make-shared-flvector 2 1.5)] [fll (shared-flvector -0.0 +inf.0 +nan.0)])
    (check "predicates" (and (shared-fxvector? fx) (not (fxvector? fx)) (shared-flvector? fl)
                             (not (shared-fxvector? fl)) (not (shared-flvector? fx)) (not (shared-bytes? fx))))
    (check-equal "fx length" 5 (shared-fxvector-length fx))
    (check-equal "fx zeros" '(0 0 0 0 0) (map (lambda (i) (shared-fxvector-ref fx i)) (iota 5)))
    (check-equal "fx fill" '(-3 -3) (map (lambda (i) (shared-fxvector-ref fx3 i)) (iota 2)))
    (check-equal "fx extremes" (list (most-positive-fixnum) (most-negative-fixnum) 0)
                 (map (lambda (i) (shared-fxvector-ref fxl i)) (iota 3)))
    (shared-fxvector-set! fx 4 -12345)
    (check-equal "fx set" -12345 (shared-fxvector-ref fx 4))
    (check-equal "fl length" 4 (shared-flvector-length fl))
    (check "fl zeros" (for-all (lambda (i) (eqv? 0.0 (shared-flvector-ref fl i))) (iota 4)))
    (check "fl fill" (for-all (lambda (i) (eqv? 1.5 (shared-flvector-ref fl1 i))) (iota 2)))
    (check "fl specials" (and (eqv? -0.0 (shared-flvector-ref fll 0)) (eqv? +inf.0 (shared-flvector-ref fll 1))
                              (nan? (shared-flvector-ref fll 2))))
    (shared-flvector-set! fl 0 -2.25)
    (check-equal "fl set" -2.25 (shared-flvector-ref fl 0))
    (check-equal "empty" '(0 0) (list (shared-fxvector-length (shared-fxvector)) (shared-flvector-length (make-shared-flvector 0))))))

;; Calls each thunk; returns (index who (assertion? who-raised)) for every
;; one that did not raise an &assertion naming its who.
(define (wrong-raisers whos thunks indexes)
  (let loop ([whos whos] [thunks thunks] [is indexes] [wrong '()])
    (if (null? whos)
        (reverse wrong)
        (let* ([who (car whos)] [c (raised (car thunks))])
          (loop (cdr whos) (cdr thunks) (cdr is)
                (if ((assertion-from? who) c)
                    wrong
                    (cons (list (car is) who (if (condition? c)
                                                 (list (assertion-violation? c) (and (who-condition? c) (condition-who c)))
                                                 c))
                          wrong)))))))

(test "shared vectors: bad index or element raises &assertion naming the procedure, changes nothing"
  (let ([sb (make-shared-bytes 4 1)] [fx (make-shared-fxvector 4 1)] [fl (make-shared-flvector 4 1.0)])
    (define wrong
      (wrong-raisers
      '(make-shared-bytes make-shared-bytes make-shared-bytes make-shared-bytes make-shared-bytes
        shared-bytes shared-bytes
        shared-bytes-ref shared-bytes-ref shared-bytes-ref shared-bytes-ref
        shared-bytes-set! shared-bytes-set! shared-bytes-set! shared-bytes-set!
        shared-bytes-length shared-bytes-length
        shared-bytes->bytevector shared-bytes->bytevector shared-bytes->bytevector shared-bytes->bytevector
        make-shared-fxvector make-shared-fxvector make-shared-fxvector shared-fxvector
        shared-fxvector-ref shared-fxvector-ref shared-fxvector-set! shared-fxvector-set! shared-fxvector-set!
        shared-fxvector-length
        make-shared-flvector make-shared-flvector make-shared-flvector shared-flvector
        shared-flvector-ref shared-flvector-ref shared-flvector-set! shared-flvector-set! shared-flvector-length)
      (list
        (lambda () (make-shared-bytes -1))
        (lambda () (make-shared-bytes 1.5))
        (lambda () (make-shared-bytes 'x))
        (lambda () (make-shared-bytes 2 256))
        (lambda () (make-shared-bytes 2 -1))
        (lambda () (shared-bytes 1 256))
        (lambda () (shared-bytes 'a))
        (lambda () (shared-bytes-ref sb 4))
        (lambda () (shared-bytes-ref sb -1))
        (lambda () (shared-bytes-ref sb 1.0))
        (lambda () (shared-bytes-ref (bytevector 1) 0))
        (lambda () (shared-bytes-set! sb 0 256))
        (lambda () (shared-bytes-set! sb 0 -1))
        (lambda () (shared-bytes-set! sb 0 #\a))
        (lambda () (shared-bytes-set! sb 4 0))
        (lambda () (shared-bytes-length (bytevector)))
        (lambda () (shared-bytes-length fx))
        (lambda () (shared-bytes->bytevector sb 3 2))
        (lambda () (shared-bytes->bytevector sb 0 5))
        (lambda () (shared-bytes->bytevector sb -1))
        (lambda () (shared-bytes->bytevector (bytevector 1)))
        (lambda () (make-shared-fxvector -2))
        (lambda () (make-shared-fxvector 2 1.0))
        (lambda () (make-shared-fxvector 2 (+ (most-positive-fixnum) 1)))
        (lambda () (shared-fxvector 1 'a))
        (lambda () (shared-fxvector-ref fx 4))
        (lambda () (shared-fxvector-ref fl 0))
        (lambda () (shared-fxvector-set! fx 0 (expt 2 80)))
        (lambda () (shared-fxvector-set! fx 0 0.5))
        (lambda () (shared-fxvector-set! fx -1 0))
        (lambda () (shared-fxvector-length sb))
        (lambda () (make-shared-flvector 'n))
        (lambda () (make-shared-flvector 2 1))
        (lambda () (make-shared-flvector 2 'x))
        (lambda () (shared-flvector 1.0 2))
        (lambda () (shared-flvector-ref fl 4))
        (lambda () (shared-flvector-ref fl 'i))
        (lambda () (shared-flvector-set! fl 0 1))
        (lambda () (shared-flvector-set! fl 0 1/2))
        (lambda () (shared-flvector-length fx)))
      (iota 40)))
    (check-equal "every call raised &assertion naming its procedure (index who (assertion? who-raised))" '() wrong)
    (check-equal "bytes unchanged" (bytevector 1 1 1 1) (shared-bytes->bytevector sb))
    (check-equal "fx unchanged" '(1 1 1 1) (map (lambda (i) (shared-fxvector-ref fx i)) (iota 4)))
    (check-equal "fl unchanged" '(1.0 1.0 1.0 1.0) (map (lambda (i) (shared-flvector-ref fl i)) (iota 4)))))

(test "shared vectors of all three kinds written by several places, read by the parent"
  (let* ([n 4000] [np 4]
         [sb (make-shared-bytes n)] [fx (make-shared-fxvector n)] [fl (make-shared-flvector n)]
         [ps (map (lambda (i) (agent-place)) (iota np))]
         [chunk (quotient n np)])
    (for-each
      (lambda (p i)
        (for-each (lambda (kind sv) (place-channel-put p (list 'fill kind sv (* i chunk) (* (+ i 1) chunk))))
                  '(bytes fx fl) (list sb fx fl)))
      ps (iota np))
    (for-each
      (lambda (p i)
        (check-equal "filled" (make-list 3 (list 'filled (* (+ i 1) chunk)))
                     (list (place-channel-get p) (place-channel-get p) (place-channel-get p))))
      ps (iota np))
    (check "bytes" (for-all (lambda (i) (= (shared-bytes-ref sb i) (mod (* i 7) 256))) (iota n)))
    (check "fx" (for-all (lambda (i) (= (shared-fxvector-ref fx i) (- (* i 1000003)))) (iota n)))
    (check "fl" (for-all (lambda (i) (= (shared-flvector-ref fl i) (/ (inexact i) 4.0))) (iota n)))
    ;; and the other way: the parent writes, a place reads
    (shared-fxvector-set! fx 7 777)
    (check-equal "place sees parent's write" 777 (place-channel-put/get (car ps) (list 'shared-ref fx 7)))
    (for-each (lambda (p) (place-channel-put p '(stop))) ps)
    (check-equal "codes" (make-list np 0) (map place-wait ps))
    ;; still usable after every place that mapped them ended
    (shared-bytes-set! sb 0 99)
    (check-equal "after" 99 (shared-bytes-ref sb 0))))

(test "a shared vector made by a place is shared with the parent, also after the place ends"
  (let ([p (agent-place)])
    (for-each
      (lambda (kind pred ref x)
        (let ([sv (place-channel-put/get p (list 'make-shared kind 100))])
          (check (list kind 'type) (pred sv))
          (check (list kind 'place's values) (= (ref sv 10) (case kind [(bytes) 70] [(fx) -10000030] [else 2.5])))
          (check-equal (list kind 'set-by-place) 'set (place-channel-put/get p (list 'shared-set sv 5 x)))
          (check (list kind 'seen) (= x (ref sv 5)))))
      '(bytes fx fl) (list shared-bytes? shared-fxvector? shared-flvector?)
      (list shared-bytes-ref shared-fxvector-ref shared-flvector-ref) '(17 -99 0.125))
    (let ([sb (place-channel-put/get p (list 'make-shared 'bytes 8))])
      (place-channel-put p '(stop))
      (place-wait p)
      (check-equal "readable after the place ended" 7 (shared-bytes-ref sb 1))
      (shared-bytes-set! sb 1 8)
      (check-equal "writable" 8 (shared-bytes-ref sb 1)))))

(test "a shared vector sent and sent back is the same memory"
  (let* ([p (echo-place)] [sb (make-shared-bytes 3)] [r (place-channel-put/get p (list sb sb))])
    (check "type" (shared-bytes? (car r)))
    (shared-bytes-set! (car r) 0 42)
    (check-equal "same memory" 42 (shared-bytes-ref sb 0))
    (shared-bytes-set! sb 1 43)
    (check-equal "both copies" 43 (shared-bytes-ref (cadr r) 1))
    (place-channel-put p 'stop)
    (place-wait p)))

(test "a large shared flvector written by a place"
  (let* ([n 1000000] [fl (make-shared-flvector n)] [p (agent-place)])
    (check-equal "filled" (list 'filled n) (place-channel-put/get p (list 'fill 'fl fl 0 n)))
    (check "values" (let loop ([i 0]) (or (= i n) (and (= (shared-flvector-ref fl i) (/ (inexact i) 4.0)) (loop (+ i 1))))))
    (place-channel-put p '(stop))
    (place-wait p)))

;; ================================================================ how places end
(test "a start procedure that returns: code 0"
  (check-equal "code" 0 (wait/timeout (return-place) 10)))

(test "a crashing place: code 1, and its peer's get raises instead of hanging"
  (let ([p (crash-place)])
    (check-equal "code" 1 (wait/timeout p 10))
    (let ([c (raised (lambda () (place-channel-get p)))])
      (check "peer place ended" (peer-ended? c)))
    (check "again" (peer-ended? (raised (lambda () (place-channel-get p)))))
    (check "sync raises too" (peer-ended? (raised (lambda () (sync p)))))
    (check "a poll raises too (it is ready)" (peer-ended? (raised (lambda () (sync/timeout 0 p)))))))

(test "a getter blocked when its peer place crashes raises"
  (let* ([p (crash-after-get-place)]
         [t (thread (lambda () (raised (lambda () (place-channel-get p)))) #f 'results)])
    (sleep 0.1)
    (place-channel-put p 'go)
    (check "raised" (peer-ended? (thread-wait t)))
    (check-equal "code" 1 (place-wait p))))

(test "a place that raises a non-condition: code 1"
  (check-equal "code" 1 (wait/timeout (raise-place) 10)))

(test "exit codes"
  (for-each
    (lambda (args expected)
      (let ([p (agent-place)])
        (place-channel-put p (cons 'exit args))
        (check-equal (cons 'exit args) expected (wait/timeout p 10))))
    '((7) (0) (1) (255) () (256) (-1) (x) (2.0) (#f))
    '(7 0 1 255 0 0 0 0 0 0)))

(test "exit from a coroutine thread of the place ends the place"
  (let ([p (agent-place)])
    (place-channel-put p '(exit-thread 9 #f))
    (check-equal "code" 9 (wait/timeout p 10))
    (place-kill p)))

(test "exit from a parallel thread of the place ends the place"
  (let ([p (agent-place)])
    (place-channel-put p '(exit-thread 5 own))
    (check-equal "code" 5 (wait/timeout p 10))
    (place-kill p)))

(test "a start procedure that calls (exit 7) at once, via dynamic-place"
  (check-equal "code" 7 (wait/timeout (track (dynamic-place (quote (places worker)) (quote start-exit-7))) 10)))

(test "messages put just before a place returns are all delivered"
  (let ([p (agent-place)])
    (place-channel-put p '(flood-and-return 20 1000000))
    (check-equal "code" 0 (wait/timeout p 20))
    (let loop ([i 0])
      (if (= i 20)
          (check "then the end" (peer-ended? (raised (lambda () (place-channel-get p)))))
          (let ([m (guard (c [#t c]) (place-channel-get p))])
            (check (list 'message i) (and (bytevector? m) (= (bytevector-length m) 1000000)
                                          (= (bytevector-u8-ref m 999999) i)))
            (loop (+ i 1)))))))

(test "place-kill ends a place whose value is known but whose messages wait for a reader"
  ;; the messages go to a channel end that nothing here reads
  (let-values ([(mine theirs) (place-channel)])
   (let* ([p (agent-place)] [pid (car (place-channel-put/get p '(pid)))])
    (check-equal "flooded" 'flooded (place-channel-put/get p (list 'flood-on theirs 20 1000000)))
    (place-channel-put p '(stop))
    (check-equal "code" 0 (wait/timeout p 20))
    (check "the process stays for its reader" (process-alive? pid))
    (let ([ms (elapsed-ms (lambda () (place-kill p)))])
      (check (list 'kill-returns-promptly ms) (< ms 5000)))
    (check (list 'reaped pid) (not (file-exists? (format "/proc/~a" pid))))
    (check-equal "the value stays" 0 (place-wait p)))))

(define (open-fd-count) (length (directory-list "/proc/self/fd")))

(test "a finished place keeps no descriptor here"
  ;; places that return, that are killed after a ring carried their
  ;; messages, and that end while nothing here reads them: after each is
  ;; waited for, its channel's descriptors are closed (no collection runs
  ;; here: a program under ulimit -n 128 died after ~117 places)
  (place-wait (return-place))
  (let ([before (open-fd-count)])
    (do ([i 0 (+ i 1)]) ((= i 30))
      (place-wait (return-place))
      (let ([p (echo-place)])
        (do ([k 0 (+ k 1)]) ((= k 20)) (place-channel-put p k))
        (check-equal "echoed" (iota 20) (map-in-order (lambda (k) (place-channel-get p)) (iota 20)))
        (finish! p))
      (let ([p (get-once-place)]) (place-channel-put p 1) (place-wait p)))
    (check "descriptors let go"
      (let loop ([tries 0])
        (or (<= (open-fd-count) (+ before 3))
            (and (< tries 100) (begin (sleep 0.02) (loop (+ tries 1)))))))
    (printf "  descriptors: ~a before, ~a after 90 places\n" before (open-fd-count)))
  ;; what a place put before it ended is still got, then the end
  (let ([p (return-place)])
    (place-wait p)
    (check-raises "ended" (lambda (c) (and (error? c) (string-contains? (condition-message c) "peer place ended")))
      (lambda () (place-channel-get p)))
    (check "put to it is dropped" (begin (place-channel-put p 1) #t))
    ;; a channel whose stream ended can still be sent: it arrives ended
    (let ([q (agent-place)])
      (check-equal "sent ended channel" '(error "peer place ended") (place-channel-put/get q (list 'get-from p 5)))
      (finish! q))))

(test "puts to a killed place are dropped at once"
  ;; 20,000 small puts cost about 10 ms to a place that reads nothing; to
  ;; a dead one each was a failed sendmsg and every 8th a ring made and
  ;; torn down (~0.6 s)
  (let ([p (silent-place)])
    (place-channel-put p 'hello)
    (place-kill p)
    (let ([ms (elapsed-ms (lambda () (do ([i 0 (+ i 1)]) ((= i 20000)) (place-channel-put p i))))])
      (check (format "20000 puts took ~a ms" (round ms)) (< ms 250)))))

(test "messages put just before a place calls exit are all delivered"
  (let ([p (agent-place)])
    (place-channel-put p '(flood-and-exit 10 1000000 4))
    (check-equal "code" 4 (wait/timeout p 20))
    (check-equal "all" (iota 10)
                 (map-in-order (lambda (i) (let ([m (place-channel-get p)]) (bytevector-u8-ref m 0))) (iota 10)))))

(test "place-kill: code 1, returns promptly, also while the place computes"
  (let ([p (blocked-place)])
    (check-equal "ready" 'ready (place-channel-get p))
    (let ([ms (elapsed-ms (lambda () (check "void" (eq? (void) (place-kill p)))))])
      (check (list 'prompt ms) (< ms 2000)))
    (check "dead at once" (sync/timeout 0 (place-dead-evt p)))
    (check-equal "code" 1 (place-wait p)))
  (let ([p (busy-place)])
    (sleep 0.1)
    (place-kill p)
    (check-equal "busy code" 1 (place-wait p)))
  ;; right after creation
  (let ([p (echo-place)])
    (place-kill p)
    (check-equal "fresh code" 1 (place-wait p)))
  ;; the process is gone (reaped) when place-kill returns
  (let* ([p (agent-place)] [pid (car (place-channel-put/get p '(pid)))])
    (check "alive before" (process-alive? pid))
    (place-kill p)
    (check (list 'reaped pid) (not (file-exists? (format "/proc/~a" pid))))))

(test "a place ended by a signal from outside: code 1"
  (for-each
    (lambda (sig)
      (let* ([p (agent-place)] [pid (car (place-channel-put/get p '(pid)))])
        (shell-command (format "kill -~a ~a" sig pid))
        (check-equal (list 'signal sig) 1 (wait/timeout p 10))
        (place-kill p)))
    '("USR1" "TERM" "KILL" "SEGV")))

(test "place-kill of an ended place changes nothing; place-wait repeats"
  (let ([p (return-place)])
    (check-equal "code" 0 (place-wait p))
    (check "void" (eq? (void) (place-kill p)))
    (check-equal "still 0" 0 (place-wait p))
    (check-equal "again" 0 (place-wait p))))

(test "a getter blocked on a killed place raises"
  (let* ([p (blocked-place)]
         [_ (place-channel-get p)]
         [t (thread (lambda () (raised (lambda () (place-channel-get p)))) #f 'results)])
    (sleep 0.05)
    (place-kill p)
    (check "raised" (peer-ended? (thread-wait t)))))

(test "place-wait from several threads at once"
  (let* ([p (blocked-place)] [pool (make-parallel-thread-pool 2)]
         [ts (map (lambda (i) (thread (lambda () (place-wait p)) (if (even? i) #f pool) 'results)) (iota 4))])
    (place-channel-get p)
    (sleep 0.05)
    (place-channel-put p 'done)
    (check-equal "all" '(0 0 0 0) (map thread-wait ts))))

(test "place-dead-evt: not ready while running, ready (result: itself) after the end"
  (let* ([p (blocked-place)] [e (place-dead-evt p)])
    (check "evt" (evt? e))
    (place-channel-get p)
    (check "not ready" (not (sync/timeout 0 e)))
    (check "not ready in a while" (not (sync/timeout 0.1 e)))
    (place-channel-put p 'go)
    (check "result is the evt" (eq? e (sync/timeout 10 e)))
    (check "stays ready" (eq? e (sync/timeout 0 e)))
    (check "a fresh one is ready too" (sync/timeout 0 (place-dead-evt p)))
    (check-equal "code" 0 (place-wait p))))

(test "place-break on a place blocked in place-channel-get ends it with 1"
  (for-each
    (lambda (kind)
      (let ([p (blocked-place)])
        (check-equal "ready" 'ready (place-channel-get p))
        (sleep 0.05)
        (check "void" (eq? (void) (if kind (place-break p kind) (place-break p))))
        (check-equal (list 'code kind) 1 (wait/timeout p 10))
        (place-kill p)))
    '(#f hang-up terminate)))

(test "place-break kinds arrive as the matching break in the place"
  (let ([p (agent-place)])
    (for-each
      (lambda (kind expected)
        (place-channel-put p '(catch-break))
        (check-equal "ready" 'ready (place-channel-get p))
        (sleep 0.05)
        (place-break p kind)
        (check-equal (list 'kind kind) expected (sync/timeout 10 p)))
      '(#f hang-up terminate)
      '((break #f #f) (break #t #f) (break #f #t)))
    (place-channel-put p '(stop))
    (check-equal "exit 0 after catching" 0 (wait/timeout p 10))
    (place-kill p)))

(test "place-break while breaks are disabled in the place stays pending"
  (let ([p (agent-place)])
    (place-channel-put p '(no-break 1.5))
    (check-equal "ready" 'ready (place-channel-get p))
    (place-break p)
    (check "not ended while disabled" (not (sync/timeout 0.7 (place-dead-evt p))))
    (check-equal "ended once enabled" 1 (wait/timeout p 10))
    (place-kill p)))

(test "a thread blocked in place-wait can be broken"
  (let* ([p (blocked-place)] [res (box #f)]
         [t (thread (lambda ()
                      (guard (c [(break-condition? c) (set-box! res 'broken)])
                        (place-wait p)
                        (set-box! res 'returned))))])
    (check-equal "ready" 'ready (place-channel-get p))
    (sleep 0.05)
    (break-thread t)
    (thread-wait t)
    (check-equal "broken" 'broken (unbox res))
    (check "place still running" (not (sync/timeout 0 (place-dead-evt p))))
    (place-channel-put p 'done)
    (check-equal "code" 0 (wait/timeout p 10))))

(test "place-break of a place that computes ends it"
  (let ([p (agent-place)])
    (check-equal "alive" 1 (place-channel-put/get p '(bump)))
    (place-channel-put p '(spin))
    (sleep 0.05)
    (place-break p)
    (check-equal "code" 1 (wait/timeout p 10))
    (place-kill p)))

(test "place-break right after creation is not lost"
  (do ([i 0 (+ i 1)]) ((= i 5))
    (let ([p (get-once-place)])
      (place-break p)
      (check-equal (list 'try i) 1 (wait/timeout p 5))
      (place-kill p))))

(test "place-break of an ended place does nothing"
  (let ([p (return-place)])
    (place-wait p)
    (check "void" (eq? (void) (place-break p)))
    (check-equal "code" 0 (place-wait p))))

(test "a put to an ended place is dropped without error (no SIGPIPE)"
  (let ([p (echo-place)])
    (place-kill p)
    (do ([i 0 (+ i 1)]) ((= i 5)) (place-channel-put p (make-bytevector 1000000 1)))
    (place-channel-put p 'small)
    (check "still here" #t)))

;; ================================================================ dynamic-place
(test "dynamic-place with a library name"
  (let ([p (track (dynamic-place '(places worker) 'start))])
    (check "place?" (place? p))
    (check-equal "echo" '(worker . 1) (place-channel-put/get p 1))
    (check-equal "echo 2" '(worker a b) (place-channel-put/get p '(a b)))
    (place-channel-put p 'stop)
    (check-equal "code" 0 (place-wait p))))

;; a fresh place's young generation starts small (fewer first-touch page
;; faults) and goes back to the inherited size once its live data grows
(test "a place starts with a small young generation and grows it with its live data"
  (let* ([p (track (dynamic-place '(places worker) 'start-young-generation))]
         [r (place-channel-get p)])
    (check "small at start" (< (car r) (collect-trip-bytes)))
    (check-equal "inherited size once 16 MB are live" (collect-trip-bytes) (cdr r))
    (check-equal "code" 0 (wait/timeout p 10))))

(test "a place's own collect-trip-bytes stays once its live data grows"
  (let ([p (track (dynamic-place '(places worker) 'start-own-trip))])
    (check-equal "the place's 1 MB" (* 1024 1024) (place-channel-get p))
    (check-equal "code" 0 (wait/timeout p 10))))

(test "dynamic-place keyword and procedure forms"
  (let ([ps (map track (list (dynamic-place '(places worker) 'start #:at #f #:named #f)
                  (dynamic-place #:named #f '(places worker) 'start)
                  (dynamic-place '(places worker) 'start #f #f)
                  (apply dynamic-place (list '(places worker) 'start))
                  (car (map dynamic-place (list '(places worker)) (list 'start)))))])
    (check-equal "all work" (make-list 5 '(worker . k)) (map (lambda (p) (place-channel-put/get p 'k)) ps))
    (for-each (lambda (p) (place-channel-put p 'stop)) ps)
    (check-equal "codes" (make-list 5 0) (map place-wait ps))))

(test "dynamic-place with a file path holding a library (relative and absolute)"
  (for-each
    (lambda (path)
      (let ([p (track (dynamic-place path 'start))])
        (check-equal (list 'reply path) '(file-worker 5) (place-channel-put/get p 5))
        (check-equal "code" 0 (place-wait p))))
    (list "tests/support/places/file-worker.ss" (string-append (current-directory) "/tests/support/places/file-worker.ss"))))

(test "dynamic-place with a file path holding top-level definitions"
  (let ([p (track (dynamic-place "tests/support/places/toplevel-worker.ss" 'start))])
    (check-equal "reply" '(toplevel-worker 6) (place-channel-put/get p 6))
    (check-equal "code" 0 (place-wait p))))

(test "dynamic-place: a failed load or bad start-name makes the place exit 1"
  (check-equal "no such library" 1 (wait/timeout (track (dynamic-place '(places no-such-library) 'start)) 10))
  (check-equal "not exported" 1 (wait/timeout (track (dynamic-place '(places worker) 'hidden)) 10))
  (check-equal "not a procedure" 1 (wait/timeout (track (dynamic-place '(places worker) 'not-a-procedure)) 10))
  (check-equal "start raises" 1 (wait/timeout (track (dynamic-place '(places worker) 'start-crash)) 10))
  (check-equal "no such definition in a file" 1 (wait/timeout (track (dynamic-place "tests/support/places/toplevel-worker.ss" 'nope)) 10)))

(test "dynamic-place argument errors"
  (check-raises "unreadable file" (lambda (c) (and (who-condition? c) (eq? (condition-who c) 'dynamic-place)
                                                   (or (error? c) (assertion-violation? c))))
                (lambda () (dynamic-place "tests/support/places/no-such-file.ss" 'start)))
  (check-raises "module not a name" (assertion-from? 'dynamic-place) (lambda () (dynamic-place 42 'start)))
  (check-raises "start-name not a symbol" (assertion-from? 'dynamic-place) (lambda () (dynamic-place '(places worker) "start")))
  (check-raises "#:at" (assertion-from? 'dynamic-place) (lambda () (dynamic-place '(places worker) 'start #:at "host")))
  (check-raises "#:named" (assertion-from? 'dynamic-place) (lambda () (dynamic-place '(places worker) 'start #:named 'n)))
  (check-raises "positional at" (assertion-from? 'dynamic-place) (lambda () (dynamic-place '(places worker) 'start 'somewhere)))
  (check-raises "positional named" (assertion-from? 'dynamic-place) (lambda () (dynamic-place '(places worker) 'start #f 'n)))
  (check-raises "unknown keyword" syntax-violation?
                (lambda () (eval '(dynamic-place '(places worker) 'start #:bogus 1) spindle-env)))
  (check-raises "keyword without value" syntax-violation?
                (lambda () (eval '(dynamic-place '(places worker) 'start #:at) spindle-env)))
  (check-raises "repeated keyword" syntax-violation?
                (lambda () (eval '(dynamic-place '(places worker) 'start #:at #f #:at #f) spindle-env))))

;; ================================================================ the place form
(test "a place form inside a place body"
  (let ([p (nested-place)])
    (place-channel-put p 'go)
    (check-equal "inner place ran its own body" 'from-inner (sync/timeout 10 p))
    (finish! p)))

(test "a place form in a library without lift-places: &assertion naming place at the call"
  (let ([c (raised
             (lambda ()
               (eval '(library (places-test no-lift)
                        (export go)
                        (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
                        (define (go) (place ch (place-channel-put ch 1)))))
               (eval '(go) (environment '(places-test no-lift)))))])
    (check (list 'assertion-from-place c) ((assertion-from? 'place) c))))

(test "a place's library in a directory whose name holds ':' (which --libdirs cannot carry)"
  (let ([r (shell (format "~a --libdirs ~a --program tests/support/places/colon-libdir-main.ss" scheme-exe libdirs-arg) "colon")])
    (check-equal "it starts and answers" "colon: (hello-from-colon 0)" (line-starting "colon:" (cdr r)))))

(test "a misplaced lift-places in one library does not disturb a correct library"
  (let* ([r (shell (format "~a --libdirs ~a --program tests/support/places/misplaced-main.ss" scheme-exe libdirs-arg) "misplaced")]
         [lines (cdr r)])
    (check-equal "after" "after: (after hello)" (line-starting "after:" lines))
    (check-equal "after code" "after-code: 0" (line-starting "after-code:" lines))
    (check-equal "misplaced raises" "misplaced: (assertion place)" (line-starting "misplaced:" lines))))

;; ================================================================ bad input
(test "bad arguments raise &assertion naming the procedure"
  (let ([p (echo-place)])
    (define wrong
      (wrong-raisers
      '(place-wait place-kill place-break place-break place-break place-dead-evt
        place-channel-put place-channel-get place-channel-put/get)
      (list (lambda () (place-wait 42))
            (lambda () (place-kill "p"))
            (lambda () (place-break 'p))
            (lambda () (place-break p 'bogus))
            (lambda () (place-break p 'kill))
            (lambda () (place-dead-evt (make-channel)))
            (lambda () (place-channel-put 42 'x))
            (lambda () (place-channel-get (make-channel)))
            (lambda () (place-channel-put/get 42 'x)))
      (iota 9)))
    (check-equal "every call raised &assertion naming its procedure (index who (assertion? who-raised))" '() wrong)
    ;; an endpoint is a place channel but not a place
    (let-values ([(a b) (place-channel)])
      (check-raises "place-wait of an endpoint" (assertion-from? 'place-wait) (lambda () (place-wait a)))
      (check-raises "place-kill of an endpoint" (assertion-from? 'place-kill) (lambda () (place-kill a))))
    (check-equal "the place was not disturbed" 'fine (place-channel-put/get p 'fine))
    (place-channel-put p 'stop)
    (check-equal "code" 0 (place-wait p))))

;; ================================================================ volume
(test "a place that never reads: 100 puts of 1 MB all return quickly; then kill it"
  (let ([p (silent-place)] [worst 0])
    (let ([total (elapsed-ms
                   (lambda ()
                     (do ([i 0 (+ i 1)]) ((= i 100))
                       (let ([ms (elapsed-ms (lambda () (place-channel-put p (make-bytevector 1000000 (mod i 256)))))])
                         (set! worst (max worst ms))))))])
      (check (list 'total-ms total) (< total 15000))
      (check (list 'worst-put-ms worst) (< worst 2000)))
    (check "still running" (not (sync/timeout 0 (place-dead-evt p))))
    (let ([ms (elapsed-ms (lambda () (place-kill p)))])
      (check (list 'kill-ms ms) (< ms 3000)))
    (check-equal "code" 1 (place-wait p))
    (place-channel-put p 'after-kill)))

(test "a place floods the parent, which reads later: everything arrives in order"
  (let ([p (agent-place)])
    (place-channel-put p '(flood 30 1000000))
    (sleep 0.3)
    (check-equal "all" (iota 30)
                 (map-in-order (lambda (i) (let ([m (place-channel-get p)])
                                    (and (= (bytevector-length m) 1000000) (bytevector-u8-ref m 500000))))
                      (iota 30)))
    (check-equal "still answering" 1 (place-channel-put/get p '(bump)))
    (place-channel-put p '(stop))
    (check-equal "code" 0 (place-wait p))))

(test-limit 120)
(test "stress: 6 places, 3 channels each, several threads per side, nothing lost, duplicated or reordered"
  (let* ([np 6] [T 3] [N 200]
         [pool (make-parallel-thread-pool 4)]
         [ps (map (lambda (i) (stress-place)) (iota np))]
         [chans (map (lambda (p)
                       (let-values ([(m1 t1) (place-channel)] [(m2 t2) (place-channel)])
                         (place-channel-put p (list 'setup T N t1 t2))
                         (list p m1 m2)))
                     ps)]
         [sides (apply append
                       (map (lambda (eps)
                              (map (lambda (ep idx)
                                     (thread
                                       (lambda ()
                                         (let* ([senders (map (lambda (s)
                                                                (thread (lambda ()
                                                                          (do ([i 0 (+ i 1)]) ((= i N))
                                                                            (place-channel-put ep (stress-message idx s i))))
                                                                        (if (even? s) pool #f)))
                                                              (iota T))]
                                                [mine (stress-check-stream ep idx T N)])
                                           (for-each thread-wait senders)
                                           (place-channel-put ep 'end)
                                           (list mine (place-channel-get ep))))
                                       #f 'results))
                                   eps (iota (length eps))))
                            chans))]
         [results (map thread-wait sides)])
    (for-each
      (lambda (r i)
        (check-equal (list 'parent-received i) (list #t (* T N) '()) (car r))
        (check-equal (list 'place-received i) (list 'verdict (list #t (* T N) '())) (cadr r)))
      results (iota (length results)))
    (for-each (lambda (p) (place-channel-put p 'go)) ps)
    (check-equal "codes" (make-list np 0) (map (lambda (p) (wait/timeout p 20)) ps))))
(test-limit 30)

;; ================================================================ processes
(define (words s)
  (let split ([cs (string->list s)] [cur '()] [out '()])
    (cond
      [(null? cs) (reverse (if (null? cur) out (cons (list->string (reverse cur)) out)))]
      [(char=? (car cs) #\space) (split (cdr cs) '() (if (null? cur) out (cons (list->string (reverse cur)) out)))]
      [else (split (cdr cs) (cons (car cs) cur) out)])))

(define (file-lines path)
  (let ([t (read-file path)])
    (if (and t (not (eof-object? t)))
        (let split ([cs (string->list t)] [cur '()] [out '()])
          (cond
            [(null? cs) (reverse (if (null? cur) out (cons (list->string (reverse cur)) out)))]
            [(char=? (car cs) #\newline) (split (cdr cs) '() (cons (list->string (reverse cur)) out))]
            [else (split (cdr cs) (cons (car cs) cur) out)]))
        '())))

;; "pids P1 P2 P3 TEMPLATE" -> the four numbers
(define (pids-of line) (map string->number (cdr (words line))))

(test "places die when the program that made them exits"
  (let* ([r (shell (format "~a --libdirs ~a --program tests/support/places/orphan-main.ss exit" scheme-exe libdirs-arg) "orphan-exit")]
         [line (line-starting "pids " (cdr r))])
    (check (list 'output r) line)
    (when line
      (let ([pids (pids-of line)])
        (check-equal "four pids" 4 (length pids))
        (check (list 'all-gone pids) (wait-until (lambda () (not (exists process-alive? pids))) 5 0.02))))))

(test "places die when the program that made them is killed with SIGKILL"
  (let ([out (temp-file "orphan-hold")])
    (shell-command (format "~a --libdirs ~a --program tests/support/places/orphan-main.ss hold > ~a 2>&1 & echo $! > ~a.pid"
                    scheme-exe libdirs-arg out out))
    (let ([line (wait-until (lambda () (line-starting "pids " (file-lines out))) 20 0.02)]
          [prog (let ([ls (file-lines (string-append out ".pid"))]) (and (pair? ls) (string->number (car ls))))])
      (check (list 'started line prog) (and line prog))
      (when prog
        (let ([rc (shell-command (format "kill -9 ~a" prog))])
          (check (list 'program-killed prog 'kill-status rc (read-file (format "/proc/~a/stat" prog)))
                 (wait-until (lambda () (not (process-alive? prog))) 5 0.02))))
      (when line
        (let ([pids (pids-of line)])
          (check-equal "four pids" 4 (length pids))
          (check (list 'all-gone pids) (wait-until (lambda () (not (exists process-alive? pids))) 5 0.02))))
      (delete-file out)
      (delete-file (string-append out ".pid")))))

(test "after every place has ended, no place process is left (only the idle template)"
  (for-each place-kill created)
  (check "every place ended" (for-all (lambda (p) (sync/timeout 0 (place-dead-evt p))) created))
  ;; places that made places: their own templates and places go with them
  (wait-until (lambda ()
                (let ([procs (all-processes)])
                  (null? (apply append (map (lambda (k) (children-of (car k) procs)) (children-of (my-pid) procs))))))
              5 0.02)
  (let* ([me (my-pid)] [procs (all-processes)]
         [kids (filter (lambda (p) (not (string=? (caddr p) "Z"))) (children-of me procs))]
         [grandkids (apply append (map (lambda (k) (children-of (car k) procs)) kids))])
    (check (list 'children kids (map (lambda (k) (cmdline (car k))) kids)) (<= (length kids) 1))
    (check (list 'templates-only (map (lambda (k) (cmdline (car k))) kids))
           (for-all (lambda (k) (string-contains? (cmdline (car k)) "place-zygote")) kids))
    (check (list 'no-grandchildren grandkids) (null? grandkids))
    (check (list 'no-zombie-children (children-of me procs)) (= (length kids) (length (children-of me procs))))))

(done)
