#!chezscheme
;;; Concurrent hashtables: safe from any mix of coroutine threads, parallel
;;; threads and futures.
;;;
;;; A table is a vector of stripes, each an ordinary Chez hashtable under its
;;; own spin lock, so that threads working on different keys rarely meet.
;;;
;;; Invariants:
;;; - A key's stripe never changes while the key is in the table: it comes
;;;   from a hash that does not depend on the key's address (the collector
;;;   moves objects).  eq/eqv tables stripe fixnums, characters, symbols and
;;;   other numbers by value; every other key (pairs, records, strings,
;;;   procedures ...) has only its address, and goes to one extra stripe,
;;;   the identity stripe: its Chez eq/eqv hashtable rehashes itself when
;;;   the collector moves keys.  Custom tables stripe by the user's hash.
;;; - A stripe lock is held only with interrupts disabled (so its holder is
;;;   never preempted, killed or moved to another worker while holding it,
;;;   and no collection starts meanwhile), for one Chez hashtable operation.
;;;   Waiters spin, then yield the CPU: a holder always finishes promptly.
;;; - User procedures: the hash of a custom table is called before any lock
;;;   is taken, so it may do anything.  Its equivalence is called under the
;;;   stripe lock, as Chez's hashtables call it: it must return promptly and
;;;   must not block or switch threads (an exception from it is fine: the
;;;   lock is released).  update!'s procedure runs with no lock held: the
;;;   update reads the value, calls the procedure, and stores the result only
;;;   if the value is still the one it read (eq?), else it tries again; so
;;;   the procedure may run more than once and should have no side effects.
;;; - Operations on the whole table (size, keys, entries, clear!, copy) take
;;;   every stripe lock in index order, so they see one consistent state;
;;;   single-key operations take one lock, so no cycle can form.
;;; - A stripe's Chez hashtable is made on the first insert into it; the
;;;   slot is written under the stripe's lock and read without it only to
;;;   learn that the stripe is still empty.
(library (spindle concurrent-hashtable)
  (export make-concurrent-eq-hashtable make-concurrent-eqv-hashtable make-concurrent-hashtable
          concurrent-hashtable? concurrent-hashtable-ref concurrent-hashtable-set!
          concurrent-hashtable-update! concurrent-hashtable-delete!
          concurrent-hashtable-contains? concurrent-hashtable-size
          concurrent-hashtable-keys concurrent-hashtable-entries
          concurrent-hashtable-clear! concurrent-hashtable-copy)
  (import (chezscheme)
          (only (spindle private scheduler) processor-count)
          (only (spindle private ffi) os-yield!))

  ;; kind: 'eq, 'eqv or 'custom.  slots: stripe i's lock flag at (* i 8) and
  ;; its Chez hashtable (or #f) at (+ (* i 8) 1); the spacing keeps each
  ;; lock on its own cache line.  The last stripe is the identity stripe
  ;; (unused by custom tables).
  (define-record-type (chashtable new-chashtable concurrent-hashtable?)
    (fields kind hash equiv slots mask)
    (nongenerative spindle-concurrent-hashtable-v1) (sealed #t))

  (define slot-spacing 8)

  ;; About four stripes per processor, 16 at least, 256 at most.
  (define stripe-count
    (let loop ([n 16])
      (if (or (fx>= n (fx* 4 (processor-count))) (fx= n 256)) n (loop (fx* n 2)))))

  (define (make-table who kind hash equiv k)
    (unless (and (integer? k) (exact? k) (>= k 0))
      (assertion-violation who "expected an exact non-negative integer size" k))
    (let* ([t (new-chashtable kind hash equiv
                              (make-vector (fx* (fx+ stripe-count 1) slot-spacing) #f)
                              (fx- stripe-count 1))]
           [per-stripe (quotient k stripe-count)])
      (when (> per-stripe 0)
        (do ([i 0 (fx+ i 1)]) ((fx> i stripe-count))
          (vector-set! (chashtable-slots t) (fx+ (fx* i slot-spacing) 1) (new-stripe t per-stripe))))
      t))

  (define make-concurrent-eq-hashtable
    (case-lambda
      [() (make-concurrent-eq-hashtable 0)]
      [(k) (make-table 'make-concurrent-eq-hashtable 'eq #f #f k)]))

  (define make-concurrent-eqv-hashtable
    (case-lambda
      [() (make-concurrent-eqv-hashtable 0)]
      [(k) (make-table 'make-concurrent-eqv-hashtable 'eqv #f #f k)]))

  (define make-concurrent-hashtable
    (case-lambda
      [(hash equiv) (make-concurrent-hashtable hash equiv 0)]
      [(hash equiv k)
       (unless (procedure? hash) (assertion-violation 'make-concurrent-hashtable "expected a hash procedure" hash))
       (unless (procedure? equiv)
         (assertion-violation 'make-concurrent-hashtable "expected an equivalence procedure" equiv))
       (make-table 'make-concurrent-hashtable 'custom hash equiv k)]))

  ;; A custom stripe's keys are (hash . key) pairs, so that the Chez table
  ;; never calls the user's hash; its equivalence compares hashes first.
  (define (new-stripe t k)
    (case (chashtable-kind t)
      [(eq) (make-eq-hashtable k)]
      [(eqv) (make-eqv-hashtable k)]
      [else
       (let ([equiv (chashtable-equiv t)])
         (make-hashtable car
                         (lambda (a b) (and (fx= (car a) (car b)) (equiv (cdr a) (cdr b))))
                         k))]))

  ;; ---------------------------------------------------------------- stripes
  ;; Mixes a non-negative fixnum so that its low bits depend on all of it
  ;; (symbol hashes and small integers have little entropy in them), with
  ;; products that stay fixnums.
  (define (spread h)
    (let* ([x (fxlogand (fxxor h (fxsrl h 29) (fxsrl h 58)) #x1FFFFFFF)]
           [x (fxlogand (fx* x #x45D9F3B) #x1FFFFFFF)]
           [x (fxxor x (fxsrl x 15))]
           [x (fxlogand (fx* x #x45D9F3B) #x1FFFFFFF)])
      (fxxor x (fxsrl x 13))))

  ;; A hash that never changes while x lives, or #f when x has only its
  ;; address.  Numbers are immutable, so hashing eq? keys by value is sound.
  (define (stable-hash x)
    (cond
      [(fixnum? x) (fxlogand x (greatest-fixnum))]
      [(symbol? x) (symbol-hash x)]
      [(char? x) (char->integer x)]
      [(number? x) (equal-hash x)]
      [(or (boolean? x) (null? x) (eof-object? x)) 0]
      [else #f]))

  ;; Eight neighbouring hashes share a stripe: Chez's tables put them in
  ;; neighbouring buckets, so sequential keys keep their cache locality.
  (define (hash-stripe t h) (fxlogand (spread (fxsrl h 3)) (chashtable-mask t)))

  (define (key-stripe t key)
    (let ([h (stable-hash key)])
      (if h (hash-stripe t h) stripe-count)))

  ;; The user's hash, as a non-negative fixnum.  Called with no lock held.
  (define (user-hash who t key)
    (let ([h ((chashtable-hash t) key)])
      (cond
        [(fixnum? h) (fxlogand h (greatest-fixnum))]
        [(and (integer? h) (exact? h)) (bitwise-and h (greatest-fixnum))]
        [else (assertion-violation who "hash procedure returned a non-integer" h key)])))

  (define (lock-stripe! slots i)
    (let ([at (fx* i slot-spacing)])
      (unless (vector-cas! slots at #f #t)
        (let loop ([polls 0])
          (cond
            [(and (not (vector-ref slots at)) (vector-cas! slots at #f #t)) (void)]
            [(fx< polls 1000) (loop (fx+ polls 1))]
            [else (os-yield!) (loop 0)])))))

  (define (unlock-stripe! slots i) (vector-set! slots (fx* i slot-spacing) #f))

  (define-syntax stripe-table
    (syntax-rules () [(_ slots i) (vector-ref slots (fx+ (fx* i slot-spacing) 1))]))

  ;; Runs body with stripe i locked and tbl bound to its Chez table (made if
  ;; create?, else body does not run and the result is absent-value).
  ;; Custom tables call the user's equivalence in body: an exception
  ;; leaves through dynamic-wind, which unlocks.
  (define-syntax with-stripe
    (syntax-rules ()
      [(_ t i create? absent-value (tbl) body ...)
       (let ([slots (chashtable-slots t)] [idx i])
         (if (and (not create?) (not (stripe-table slots idx)))
             absent-value
             (begin
               (disable-interrupts)
               (lock-stripe! slots idx)
               (let ([tbl (or (stripe-table slots idx)
                              (if create?
                                  (let ([new (new-stripe t 32)])
                                    (vector-set! slots (fx+ (fx* idx slot-spacing) 1) new)
                                    new)
                                  #f))])
                 (define (run) (if tbl (begin body ...) absent-value))
                 (define (unlock) (unlock-stripe! slots idx) (enable-interrupts))
                 (if (eq? (chashtable-kind t) 'custom)
                     (dynamic-wind void run unlock)
                     (let ([v (run)]) (unlock) v))))))]))

  (define (check-table who t)
    (unless (concurrent-hashtable? t) (assertion-violation who "expected a concurrent hashtable" t)))

  ;; (values stripe key-for-the-chez-table) for a key.
  (define-syntax locate
    (syntax-rules ()
      [(_ who t key (i k) body ...)
       (if (eq? (chashtable-kind t) 'custom)
           (let* ([h (user-hash who t key)] [i (hash-stripe t h)] [k (cons h key)])
             body ...)
           (let ([i (key-stripe t key)] [k key])
             body ...))]))

  ;; ---------------------------------------------------------------- one key
  (define (concurrent-hashtable-ref t key default)
    (check-table 'concurrent-hashtable-ref t)
    (locate 'concurrent-hashtable-ref t key (i k)
      (with-stripe t i #f default (tbl) (hashtable-ref tbl k default))))

  (define (concurrent-hashtable-contains? t key)
    (check-table 'concurrent-hashtable-contains? t)
    (locate 'concurrent-hashtable-contains? t key (i k)
      (with-stripe t i #f #f (tbl) (hashtable-contains? tbl k))))

  (define (concurrent-hashtable-set! t key value)
    (check-table 'concurrent-hashtable-set! t)
    (locate 'concurrent-hashtable-set! t key (i k)
      (with-stripe t i #t (void) (tbl) (hashtable-set! tbl k value))))

  (define (concurrent-hashtable-delete! t key)
    (check-table 'concurrent-hashtable-delete! t)
    (locate 'concurrent-hashtable-delete! t key (i k)
      (with-stripe t i #f (void) (tbl) (hashtable-delete! tbl k))))

  ;; Marks "no entry" for update!.
  (define absent (gensym "absent"))

  (define (concurrent-hashtable-update! t key proc default)
    (check-table 'concurrent-hashtable-update! t)
    (unless (procedure? proc) (assertion-violation 'concurrent-hashtable-update! "expected a procedure" proc))
    (locate 'concurrent-hashtable-update! t key (i k)
      (let retry ()
        (let* ([old (with-stripe t i #f absent (tbl) (hashtable-ref tbl k absent))]
               [new (proc (if (eq? old absent) default old))])
          (unless (with-stripe t i #t #f (tbl)
                    (and (eq? (hashtable-ref tbl k absent) old)
                         (begin (hashtable-set! tbl k new) #t)))
            (retry))))))

  ;; ---------------------------------------------------------------- whole table
  ;; Runs (proc tbl) on every existing stripe table with all stripes locked;
  ;; returns the list of results (stripe order).
  (define (with-all-stripes t proc)
    (let ([slots (chashtable-slots t)] [n (fx+ stripe-count 1)])
      (disable-interrupts)
      (do ([i 0 (fx+ i 1)]) ((fx= i n)) (lock-stripe! slots i))
      (let ([rs (let loop ([i (fx- n 1)] [acc '()])
                  (if (fx< i 0)
                      acc
                      (loop (fx- i 1) (let ([tbl (stripe-table slots i)]) (if tbl (cons (proc tbl) acc) acc)))))])
        (do ([i 0 (fx+ i 1)]) ((fx= i n)) (unlock-stripe! slots i))
        (enable-interrupts)
        rs)))

  (define (concurrent-hashtable-size t)
    (check-table 'concurrent-hashtable-size t)
    (apply + (with-all-stripes t hashtable-size)))

  (define (concurrent-hashtable-clear! t)
    (check-table 'concurrent-hashtable-clear! t)
    (with-all-stripes t hashtable-clear!)
    (void))

  (define (unwrap-keys t keys)
    (when (eq? (chashtable-kind t) 'custom)
      (do ([i 0 (fx+ i 1)]) ((fx= i (vector-length keys))) (vector-set! keys i (cdr (vector-ref keys i)))))
    keys)

  ;; One snapshot: (values keys values), vectors in matching order.
  (define (snapshot t)
    (let ([parts (with-all-stripes t (lambda (tbl) (call-with-values (lambda () (hashtable-entries tbl)) cons)))])
      (values (unwrap-keys t (apply vector-append (map car parts)))
              (apply vector-append (map cdr parts)))))

  (define (vector-append . vs)
    (let ([out (make-vector (apply + (map vector-length vs)))])
      (let loop ([vs vs] [at 0])
        (if (null? vs)
            out
            (let ([v (car vs)])
              (do ([i 0 (fx+ i 1)]) ((fx= i (vector-length v))) (vector-set! out (fx+ at i) (vector-ref v i)))
              (loop (cdr vs) (fx+ at (vector-length v))))))))

  (define (concurrent-hashtable-keys t)
    (check-table 'concurrent-hashtable-keys t)
    (unwrap-keys t (apply vector-append (with-all-stripes t hashtable-keys))))

  (define (concurrent-hashtable-entries t)
    (check-table 'concurrent-hashtable-entries t)
    (snapshot t))

  ;; An ordinary mutable Chez hashtable with a snapshot of the contents.
  (define (concurrent-hashtable-copy t)
    (check-table 'concurrent-hashtable-copy t)
    (let-values ([(keys vals) (snapshot t)])
      (let ([h (case (chashtable-kind t)
                 [(eq) (make-eq-hashtable (vector-length keys))]
                 [(eqv) (make-eqv-hashtable (vector-length keys))]
                 [else (make-hashtable (chashtable-hash t) (chashtable-equiv t) (vector-length keys))])])
        (vector-for-each (lambda (k v) (hashtable-set! h k v)) keys vals)
        h)))

  (record-writer (record-type-descriptor chashtable)
    (lambda (t port wr)
      (display "#<concurrent-hashtable " port)
      (display (chashtable-kind t) port)
      (display ">" port))))
