#!chezscheme
;;; Sharing data between threads (issue 11): concurrent hashtables and
;;; synchronized ports, from coroutine threads, parallel pools and futures.
;;; Each stress test checks exact final contents; the harness watchdog
;;; turns a deadlock into a failure.
(import (except (chezscheme) thread? sleep make-parameter parameterize)
        (spindle) (harness)
        (only (spindle private os processes) shell-command))

;; ---------------------------------------------------------------- helpers
(define pool (make-parallel-thread-pool 2))

(define (failed) (error 'test-sharing "a worker failed"))

;; Runs (work j) for j = 0 .. n-1, placed by mode, and returns the results.
;; mixed: coroutine, pool, future, own thread, in turn.
(define (run-in mode n work)
  (define (start j)
    (let ([how (if (eq? mode 'mixed) (vector-ref '#(coroutine pool futures own) (mod j 4)) mode)]
          [thunk (lambda () (work j))])
      (case how
        [(coroutine) (thread thunk #:keep 'results)]
        [(pool) (thread thunk #:pool pool #:keep 'results)]
        [(own) (thread thunk #:pool 'own #:keep 'results)]
        [(futures) (future thunk)])))
  (map (lambda (x) (if (future? x) (touch x) (thread-wait x failed)))
       (map start (iota n))))

(define modes '(coroutine pool futures mixed))

(define (assertion-from-with-irritant? who v) (both (assertion-from? who) (irritant? v)))

;; ---------------------------------------------------------------- hashtables
(test "hashtable basics: ref, set!, update!, delete!, contains?, size, keys, entries, copy, clear!"
  (let ([t (make-concurrent-eq-hashtable)] [pair (list 1 2)] [str (string #\a)])
    (check "predicate" (and (concurrent-hashtable? t) (not (concurrent-hashtable? (make-eq-hashtable)))))
    (for-each (lambda (k v) (concurrent-hashtable-set! t k v))
              (list 'sym 7 #\c 2.5 (expt 10 30) pair str #t '())
              '(1 2 3 4 5 6 7 8 9))
    (check-equal "size" 9 (concurrent-hashtable-size t))
    (check-equal "refs" '(1 2 3 6 7 8 9)
                 (map (lambda (k) (concurrent-hashtable-ref t k #f)) (list 'sym 7 #\c pair str #t '())))
    (check-equal "eq: another equal pair is another key" 'none (concurrent-hashtable-ref t (list 1 2) 'none))
    (concurrent-hashtable-update! t 'sym (lambda (v) (* v 10)) 0)
    (concurrent-hashtable-update! t 'new (lambda (v) (+ v 1)) 41)
    (check-equal "update!" '(10 42) (list (concurrent-hashtable-ref t 'sym #f) (concurrent-hashtable-ref t 'new #f)))
    (concurrent-hashtable-delete! t pair)
    (concurrent-hashtable-delete! t 'absent)
    (check "contains?" (and (concurrent-hashtable-contains? t 'sym) (not (concurrent-hashtable-contains? t pair))))
    (let-values ([(ks vs) (concurrent-hashtable-entries t)])
      (check-equal "entries lengths" '(9 9) (list (vector-length ks) (vector-length vs)))
      (check-equal "keys = entries' keys" (vector->list ks) (vector->list (concurrent-hashtable-keys t)))
      (vector-for-each (lambda (k v) (check "entry value" (eqv? v (concurrent-hashtable-ref t k #f)))) ks vs))
    (let ([h (concurrent-hashtable-copy t)])
      (check "copy is a mutable Chez eq table" (and (hashtable? h) (hashtable-mutable? h)
                                                    (eq? (hashtable-equivalence-function h) eq?)))
      (check-equal "copy contents" 9 (hashtable-size h))
      (check-equal "copy ref" 8 (hashtable-ref h #t #f)))
    (concurrent-hashtable-clear! t)
    (check-equal "cleared" '(0 #f) (list (concurrent-hashtable-size t) (concurrent-hashtable-ref t 'sym #f)))
    (let ([e (make-concurrent-eqv-hashtable 1000)])
      (concurrent-hashtable-set! e (expt 2 70) 'big)
      (concurrent-hashtable-set! e 1.5 'flo)
      (check-equal "eqv by value" '(big flo) (list (concurrent-hashtable-ref e (expt 2 70) #f)
                                                  (concurrent-hashtable-ref e (/ 3. 2) #f)))
      (check "eqv copy" (eq? (hashtable-equivalence-function (concurrent-hashtable-copy e)) eqv?)))
    (let ([c (make-concurrent-hashtable string-hash string=?)])
      (concurrent-hashtable-set! c "abc" 1)
      (check-equal "custom" 1 (concurrent-hashtable-ref c (string #\a #\b #\c) #f))
      (check-equal "custom copy" 1 (hashtable-ref (concurrent-hashtable-copy c) "abc" #f)))))

(test "bad arguments name the procedure"
  (let ([t (make-concurrent-eq-hashtable)])
    (check-raises "ref" (assertion-from-with-irritant? 'concurrent-hashtable-ref 'x)
                  (lambda () (concurrent-hashtable-ref 'x 1 2)))
    (check-raises "set!" (assertion-from? 'concurrent-hashtable-set!) (lambda () (concurrent-hashtable-set! 5 1 2)))
    (check-raises "update! proc" (assertion-from-with-irritant? 'concurrent-hashtable-update! 7)
                  (lambda () (concurrent-hashtable-update! t 1 7 0)))
    (check-raises "size" (assertion-from? 'concurrent-hashtable-size) (lambda () (concurrent-hashtable-size (make-eq-hashtable))))
    (check-raises "entries" (assertion-from? 'concurrent-hashtable-entries) (lambda () (concurrent-hashtable-entries #f)))
    (check-raises "hash" (assertion-from-with-irritant? 'make-concurrent-hashtable 'nope)
                  (lambda () (make-concurrent-hashtable 'nope equal?)))
    (check-raises "equiv" (assertion-from? 'make-concurrent-hashtable) (lambda () (make-concurrent-hashtable equal-hash 3)))
    (check-raises "size hint" (assertion-from-with-irritant? 'make-concurrent-eq-hashtable -1)
                  (lambda () (make-concurrent-eq-hashtable -1)))
    (let ([odd-hash (make-concurrent-hashtable (lambda (k) "not a number") equal?)])
      (check-raises "hash result" (assertion-from-with-irritant? 'concurrent-hashtable-set! "not a number")
                    (lambda () (concurrent-hashtable-set! odd-hash 'k 1))))
    (check-raises "port" (assertion-from-with-irritant? 'make-synchronized-port 12) (lambda () (make-synchronized-port 12)))
    (check-raises "mode" (assertion-from-with-irritant? 'make-synchronized-port 'fast)
                  (lambda () (make-synchronized-port (open-output-string) 'fast)))
    (check-raises "with-port-lock" (assertion-from-with-irritant? 'with-port-lock "x")
                  (lambda () (with-port-lock "x" 1)))))

(test "an equivalence that raises leaves the table usable"
  (let* ([fussy (make-concurrent-hashtable (lambda (k) 1)
                                           (lambda (a b) (if (or (eq? a 'bad) (eq? b 'bad)) (error 'equiv "refused" a b) (equal? a b))))])
    (concurrent-hashtable-set! fussy 'good 1)
    (check-raises "raised" (lambda (c) (and (message-condition? c) (equal? (condition-message c) "refused")))
                  (lambda () (concurrent-hashtable-ref fussy 'bad #f)))
    ;; same stripe and bucket (the hash is constant)
    (concurrent-hashtable-set! fussy 'other 2)
    (check-equal "still usable" '(1 2) (list (concurrent-hashtable-ref fussy 'good #f) (concurrent-hashtable-ref fussy 'other #f)))))

;; Probes 1 and 2 of issue 11: 4 threads each set n keys of their own,
;; delete the even ones and read the odd ones back (2n operations each).
(define (set-delete-probe make key-of n mode)
  (let ([t (make)])
    (run-in mode 4
      (lambda (j)
        (do ([i 0 (+ i 1)]) ((= i n))
          (concurrent-hashtable-set! t (key-of j i) (* 3 i))
          (when (odd? i) (concurrent-hashtable-delete! t (key-of j (- i 1)))))
        (do ([i 1 (+ i 2)]) ((>= i n))
          (unless (eqv? (* 3 i) (concurrent-hashtable-ref t (key-of j i) #f))
            (error 'probe "wrong value read back" j i)))))
    (check-equal "size" (* 4 (quotient n 2)) (concurrent-hashtable-size t))
    (do ([j 0 (+ j 1)]) ((= j 4))
      (do ([i 0 (+ i 1)]) ((= i n))
        (let ([v (concurrent-hashtable-ref t (key-of j i) 'missing)])
          (unless (equal? v (if (odd? i) (* 3 i) 'missing))
            (error 'probe "wrong final contents" j i v)))))))

(for-each
  (lambda (mode)
    (test (format "probe 1: equal? table, 4 threads x 200000 set/delete/ref, ~a" mode)
      (set-delete-probe (lambda () (make-concurrent-hashtable equal-hash equal?)) (lambda (j i) (list j i)) 100000 mode)))
  modes)

(for-each
  (lambda (mode)
    (test (format "probe 2: eqv? table (fixnum and bignum keys), 4 threads x 200000, ~a" mode)
      (set-delete-probe make-concurrent-eqv-hashtable
                        (lambda (j i) (if (even? j) (+ (* j 1000000) i) (+ (expt 2 64) (* j 1000000) i)))
                        100000 mode)))
  '(pool mixed))

(test "update!: a counter incremented 10^6 times from 4 threads reads 10^6"
  (for-each
    (lambda (mode)
      (let ([t (make-concurrent-eqv-hashtable)] [t0 (current-inexact-monotonic-milliseconds)])
        (run-in mode 4
          (lambda (j)
            (do ([i 0 (+ i 1)]) ((= i 250000))
              (concurrent-hashtable-update! t 'count (lambda (v) (+ v 1)) 0))))
        (check-equal (format "count, ~a" mode) 1000000 (concurrent-hashtable-ref t 'count #f))
        (printf "  update! x 10^6, ~a: ~a ms\n" mode (round (- (current-inexact-monotonic-milliseconds) t0)))))
    '(pool mixed)))

;; While writers run, every snapshot must be a state the table was in:
;; writer j either appends keys (j . 0), (j . 1) ... (a prefix is seen), or
;; moves one token from (j . k) to (j . k+1), adding before deleting (one or
;; two neighbouring tokens are seen, never none).
(test "entries: a snapshot during concurrent writes is a valid past state"
  (let* ([t (make-concurrent-hashtable equal-hash equal?)] [m 50000] [appends 5000] [finished (box 0)]
         [during (box 0)])
    (concurrent-hashtable-set! t (cons 'token-1 0) 0)
    (concurrent-hashtable-set! t (cons 'token-3 0) 0)
    (let ([check-snapshot
           (lambda ()
             (let-values ([(ks vs) (concurrent-hashtable-entries t)])
               (let ([by-writer (make-eqv-hashtable)] [distinct (make-hashtable equal-hash equal?)])
                 (vector-for-each
                   (lambda (k v)
                     (unless (eqv? v (* 2 (cdr k))) (error 'snapshot "half entry" k v))
                     (hashtable-set! distinct k #t)
                     (hashtable-update! by-writer (car k) (lambda (l) (cons (cdr k) l)) '()))
                   ks vs)
                 (unless (= (vector-length ks) (hashtable-size distinct)) (error 'snapshot "duplicate keys"))
                 (for-each
                   (lambda (w)
                     (let ([is (sort < (hashtable-ref by-writer w '()))])
                       (if (memq w '(token-1 token-3))
                           (unless (or (= (length is) 1) (and (= (length is) 2) (= (cadr is) (+ 1 (car is)))))
                             (error 'snapshot "token seen as" w is))
                           (unless (equal? is (iota (length is)))
                             (error 'snapshot "not a prefix" w (length is))))))
                   '(append-0 token-1 append-2 token-3)))))])
      (run-in 'mixed 5
        (lambda (j)
          (if (= j 4)
              (let loop ()
                (when (< (unbox finished) 4)
                  (check-snapshot)
                  (box-cas! during (unbox during) (+ (unbox during) 1))
                  (loop)))
              (let ([w (vector-ref '#(append-0 token-1 append-2 token-3) j)])
                (do ([i 0 (+ i 1)]) ((= i (if (even? j) appends m)))
                  (if (even? j)
                      (concurrent-hashtable-set! t (cons w i) (* 2 i))
                      (begin
                        (concurrent-hashtable-set! t (cons w (+ i 1)) (* 2 (+ i 1)))
                        (concurrent-hashtable-delete! t (cons w i)))))
                (let loop () (let ([f (unbox finished)]) (unless (box-cas! finished f (+ f 1)) (loop))))))))
      (check-snapshot)
      (check "snapshots taken while writing" (> (unbox during) 0))
      (printf "  ~a snapshots while writing\n" (unbox during))
      (check-equal "final size" (+ appends appends 1 1) (concurrent-hashtable-size t)))))

(define-record-type thing (fields n))

;; eq/eqv keys that only have an address move when collected: they must
;; still be found, during and after collections.
(test "eq and eqv tables: keys moved by collections stay findable"
  (let* ([eq-t (make-concurrent-eq-hashtable)] [eqv-t (make-concurrent-eqv-hashtable)]
         [stop (box #f)] [n 20000] [c0 (collections)]
         [collector (thread (lambda ()
                              (let loop ([k 0])
                                (if (unbox stop) k (begin (collect-rendezvous) (sleep 0.001) (loop (+ k 1))))))
                            #:pool 'own #:keep 'results)]
         [make-key (lambda (j i)
                     (case (mod i 6)
                       [0 (make-thing i)] [1 (list j i)] [2 (vector i)] [3 (string #\k)]
                       [4 (lambda () i)] [else (+ (* 1000000 j) i)]))]
         [keys (run-in 'mixed 4
                 (lambda (j)
                   (let ([ks (let loop ([i 0] [acc '()])
                               (if (= i n)
                                   (reverse acc)
                                   (let ([k (make-key j i)])
                                     (concurrent-hashtable-set! eq-t k (cons j i))
                                     (concurrent-hashtable-set! eqv-t k (cons j i))
                                     ;; some garbage, so that collections come often
                                     (make-vector 20 i)
                                     (loop (+ i 1) (cons k acc)))))])
                     ;; read back while collections continue
                     (for-each (lambda (k i)
                                 (unless (equal? (cons j i) (concurrent-hashtable-ref eq-t k #f))
                                   (error 'moved "lost during writes" j i)))
                               ks (iota n))
                     ks)))])
    (set-box! stop #t)
    (let ([rounds (thread-wait collector failed)])
      (collect-rendezvous)
      (check "collections happened" (> (- (collections) c0) 5))
      (check-equal "eq size" (* 4 n) (concurrent-hashtable-size eq-t))
      (check-equal "eqv size" (* 4 n) (concurrent-hashtable-size eqv-t))
      (for-each
        (lambda (ks j)
          (for-each (lambda (k i)
                      (unless (and (equal? (cons j i) (concurrent-hashtable-ref eq-t k #f))
                                   (equal? (cons j i) (concurrent-hashtable-ref eqv-t k #f)))
                        (error 'moved "lost after collections" j i)))
                    ks (iota n)))
        keys (iota 4))
      (check "an equal but fresh key is another key" (not (concurrent-hashtable-contains? eq-t (list 0 1))))
      (printf "  ~a collections during the test (~a rendezvous rounds)\n" (- (collections) c0) rounds))))

;; ---------------------------------------------------------------- ports
;; A textual output port that collects what it is given into a string
;; port that is never closed (so the contents survive a close).
(define (collector)
  (let-values ([(sink get) (open-string-output-port)])
    (values (make-custom-textual-output-port "collector"
              (lambda (s start n) (put-string sink s start n) n) #f #f #f)
            get)))

;; Each chunk is w (one letter) + 9 digits; returns the list of (w . i)
;; or raises on a torn chunk.
(define (chunks s)
  (unless (= 0 (mod (string-length s) 10)) (error 'chunks "length not a multiple of 10" (string-length s)))
  (let loop ([at (- (string-length s) 10)] [acc '()])
    (if (< at 0)
        acc
        (let ([w (string-ref s at)] [i (string->number (substring s (+ at 1) (+ at 10)))])
          (unless (and (char-alphabetic? w) i) (error 'chunks "torn chunk" (substring s at (+ at 10))))
          (loop (- at 10) (cons (cons w i) acc))))))

(define (chunk w i)
  (let ([d (number->string i)])
    (string-append (string w) (make-string (- 9 (string-length d)) #\0) d)))

(define (check-chunks what s writers m)
  (let ([seen (make-hashtable equal-hash equal?)])
    (for-each (lambda (c)
                (when (hashtable-contains? seen c) (error 'chunks "duplicated" c))
                (hashtable-set! seen c #t))
              (chunks s))
    (check-equal (string-append what ": chunk count") (* writers m) (hashtable-size seen))))

(for-each
  (lambda (mode)
    (test (format "probe 3: 4 threads x 100000 ten-character strings on one synchronized port (~a mode)" mode)
      (let-values ([(inner get) (collector)])
        (let ([sp (make-synchronized-port inner mode)] [m 100000])
          (run-in 'mixed 4
            (lambda (j)
              (let ([w (string-ref "ABCD" j)])
                (do ([i 0 (+ i 1)]) ((= i m)) (put-string sp (chunk w i))))))
          (flush-output-port sp)
          (check-chunks "probe 3" (get) 4 m)))))
  '(atomic parking))

(test "synchronized binary port: put-bytevector is atomic"
  (let-values ([(inner get) (open-bytevector-output-port)])
    (let ([sp (make-synchronized-port inner)] [m 20000])
      (check "binary" (and (binary-port? sp) (output-port? sp) (synchronized-port? sp)))
      (run-in 'mixed 4
        (lambda (j) (do ([i 0 (+ i 1)]) ((= i m)) (put-bytevector sp (make-bytevector 8 j)))))
      (let ([bv (get)])
        (check-equal "length" (* 4 m 8) (bytevector-length bv))
        (do ([at 0 (+ at 8)]) ((= at (bytevector-length bv)))
          (let ([b (bytevector-u8-ref bv at)])
            (do ([k 1 (+ k 1)]) ((= k 8))
              (unless (= b (bytevector-u8-ref bv (+ at k))) (error 'binary "torn" at)))))))))

(test "synchronized input port: get-string-n is atomic, every character read once"
  (let* ([m 5000] [text (apply string-append (map (lambda (i) (chunk #\x i)) (iota m)))]
         [sp (make-synchronized-port (open-string-input-port text))]
         [got (run-in 'mixed 4
                (lambda (j)
                  (let loop ([acc '()])
                    (let ([s (get-string-n sp 10)])
                      (if (eof-object? s) acc (loop (cons s acc)))))))])
    (check-chunks "input" (apply string-append (apply append got)) 1 m)
    (check "eof" (eof-object? (get-char sp)))))

(test "with-port-lock: a sequence stays contiguous across preemption, and is re-entrant"
  (let-values ([(inner get) (collector)])
    (let* ([sp (make-synchronized-port inner)] [stop (box #f)] [going (make-semaphore 0)]
           [writers (map (lambda (where)
                           (thread (lambda ()
                                     (let loop ([k 0])
                                       (when (= k 100) (semaphore-post going))
                                       (if (and (unbox stop) (> k 100)) k (begin (put-string sp "x") (loop (+ k 1))))))
                                   #:pool where #:keep 'results))
                         (list #f pool 'own))]
           [holder (begin
                     (for-each (lambda (w) (semaphore-wait going)) writers)
                     (thread
                       (lambda ()
                         (do ([r 0 (+ r 1)]) ((= r 5))
                           (with-port-lock sp
                             (put-string sp "<")
                             (with-port-lock sp (put-string sp "("))   ; re-entrant
                             ;; long enough to be preempted several times
                             (let ([t0 (current-inexact-monotonic-milliseconds)])
                               (let spin () (when (< (- (current-inexact-monotonic-milliseconds) t0) 30) (spin))))
                             (put-string sp ")")
                             (put-string sp ">")))
                         (set-box! stop #t))))])
      (thread-wait holder)
      (let* ([counts (map (lambda (t) (thread-wait t failed)) writers)] [s (begin (flush-output-port sp) (get))])
        (check-equal "x count" (apply + counts) (length (filter (lambda (c) (char=? c #\x)) (string->list s))))
        (let loop ([i 0] [n 0])
          (cond
            [(= i (string-length s)) (check-equal "sequences" 5 n)]
            [(char=? (string-ref s i) #\<)
             (check-equal "contiguous" "<()>" (substring s i (+ i 4)))
             (loop (+ i 4) (+ n 1))]
            [else (loop (+ i 1) n)]))))))

(test "with-port-lock: a thread killed while holding it does not block the port"
  (let-values ([(inner get) (collector)])
    (let* ([sp (make-synchronized-port inner)] [never (make-semaphore 0)] [held (make-semaphore 0)]
           [holder (thread (lambda () (with-port-lock sp (put-string sp "a") (semaphore-post held) (semaphore-wait never)))
                           #:pool pool)])
      (semaphore-wait held)
      (let ([writer (thread (lambda () (put-string sp "b") 'wrote) #:keep 'results)])
        (check "waits for the holder" (not (sync/timeout 0.1 (thread-dead-evt writer))))
        (kill-thread holder)
        (check-equal "proceeds once the holder is dead" 'wrote (thread-wait writer failed))
        (with-port-lock sp (put-string sp "c"))
        (flush-output-port sp)
        (check-equal "contents" "abc" (get))))))

(test "a synchronized port closed while another thread writes: a clear error, no crash"
  (for-each
    (lambda (mode)
      (let-values ([(inner get) (collector)])
        (let* ([sp (make-synchronized-port inner mode)] [started (make-semaphore 0)]
               [writers (map (lambda (j)
                               (thread (lambda ()
                                         (semaphore-post started)
                                         (guard (c [#t c])
                                           (let loop ([i 0]) (put-string sp (chunk #\w i)) (loop (+ i 1)))))
                                       #:pool (if (even? j) pool #f) #:keep 'results))
                             (iota 3))])
          (do ([i 0 (+ i 1)]) ((= i 3)) (semaphore-wait started))
          (sleep 0.02)
          (close-port sp)
          (check "closed" (port-closed? sp))
          (close-port sp)                       ; closing twice is fine
          (for-each
            (lambda (t)
              (let ([c (thread-wait t failed)])
                (check (format "i/o port error, ~a" mode)
                       (and (i/o-port-error? c) (eq? (i/o-error-port c) sp)
                            (who-condition? c) (eq? (condition-who c) 'put-string)
                            (message-condition? c)))))
            writers)
          (chunks (get))                        ; nothing torn before the close
          (check-raises "flush after close" i/o-port-error? (lambda () (flush-output-port sp))))))
    '(atomic parking)))

(test "console ports are synchronized once spindle is loaded"
  (check "current output" (synchronized-port? (current-output-port)))
  (check "current error" (synchronized-port? (current-error-port)))
  (check "console output" (synchronized-port? (console-output-port)))
  (check "console error" (synchronized-port? (console-error-port)))
  (check "current input" (synchronized-port? (current-input-port))))

;; A child program prints from two parallel threads: with with-port-lock
;; (a line in 4 pieces) and without (one put-string per line).
(define (check-console-writer args)
  (let ([out (format "/tmp/spindle-test-sharing-~a.out" (random 1000000000))])
    (check-equal "child exit" 0 (shell-command (format "bin/spindle run tests/support/sharing-console-writer.ss~a > ~a 2>&1" args out)))
    (let ([lines (call-with-input-file out (lambda (p) (let loop ([acc '()]) (let ([l (get-line p)]) (if (eof-object? l) (reverse acc) (loop (cons l acc)))))))])
      (delete-file out)
      (check-equal "line count" 40001 (length lines))
      (check-equal "last line" "done" (list-ref lines 40000))
      (let ([seen (make-hashtable equal-hash equal?)])
        (for-each (lambda (l)
                    (unless (or (string=? l "done") (and (= (string-length l) 12) (memv (string-ref l 0) '(#\L #\P))))
                      (error 'console "torn line" l))
                    (hashtable-set! seen l #t))
                  lines)
        (check-equal "distinct lines" 40001 (hashtable-size seen))))))

(test "console: two parallel threads print whole lines, none lost"
  (check-console-writer ""))

(test "installed parking console ports: two parallel threads print whole lines, none lost"
  (check-console-writer " installed"))

(test "examples/shared-table.ss counts every word once"
  (let ([out (format "/tmp/spindle-test-sharing-example-~a.out" (random 1000000000))])
    (check-equal "exit" 0 (shell-command (format "bin/spindle run examples/shared-table.ss > ~a 2>&1" out)))
    (let ([text (call-with-input-file out get-string-all)])
      (delete-file out)
      (check "total" (let ([k (string-length "total 100000")])
                       (let loop ([i 0]) (and (<= (+ i k) (string-length text))
                                              (or (string=? (substring text i (+ i k)) "total 100000") (loop (+ i 1))))))))))

(done)
