#!chezscheme
;;; Concurrent hashtables: safe from any mix of coroutine threads, parallel
;;; threads and futures, with reads that take no lock.
;;;
;;; A table is split into stripes by hash; a stripe is a vector of buckets,
;;; each a chain of nodes (hash, key, value, next), and a spin lock that
;;; writers take.
;;;
;;; Invariants:
;;; - A node's hash, key and next never change once the node is in a chain,
;;;   so a chain read without the lock is always a chain the bucket held:
;;;   an insert publishes a new head node with one store, a delete stores a
;;;   copy of the nodes before the deleted one, a resize builds a whole new
;;;   bucket vector (new nodes) and publishes it with one store.  A value is
;;;   changed in place, one store.  (x86-64 keeps stores in order, so a
;;;   reader that sees a published node sees it initialized; the scheduler
;;;   relies on the same for its spin locks.)
;;; - Readers take no lock and disable nothing: a read is ordinary code on
;;;   objects that stay valid, so it may be preempted or see a collection.
;;; - Writers find the key's node without the lock too, then take the
;;;   stripe lock and act only if the bucket (and its stripe's vector) is
;;;   still the one they searched, else search again.  So no user code ever
;;;   runs under a lock: a custom table's hash and equivalence run with no
;;;   lock held, may block or raise; update!'s procedure likewise (the
;;;   update stores its result only if the value is still the one it read,
;;;   eq?, else calls it again: it may run more than once).
;;; - A stripe lock is held only with interrupts disabled, for a few dozen
;;;   instructions (no collection can start meanwhile); waiters spin, then
;;;   yield the CPU.  Locks sit on their own cache lines, away from the
;;;   bucket vectors that readers load.
;;; - A key's hash never depends on its address (the collector moves
;;;   objects): eq/eqv tables hash fixnums, characters, symbols and other
;;;   numbers by value; every other key (pairs, records, strings,
;;;   procedures ...) has only its address and goes to the identity stripe,
;;;   a Chez eq/eqv hashtable (which rehashes itself after collections)
;;;   under its own lock, reads included.
;;; - size, keys, entries, clear! and copy take every stripe lock in index
;;;   order, so they see one state that the table was in; single-key
;;;   operations take at most one lock, so no cycle can form.
(library (spindle concurrent-hashtable)
  (export make-concurrent-eq-hashtable make-concurrent-eqv-hashtable make-concurrent-hashtable
          concurrent-hashtable? concurrent-hashtable-ref concurrent-hashtable-set!
          concurrent-hashtable-update! concurrent-hashtable-delete!
          concurrent-hashtable-contains? concurrent-hashtable-size
          concurrent-hashtable-keys concurrent-hashtable-entries
          concurrent-hashtable-clear! concurrent-hashtable-copy)
  (import (chezscheme)
          (only (spindle private core processors) processor-count)
          (only (spindle private os threads) os-yield!))

  ;; kind: 'eq, 'eqv or 'custom (hash and equiv are the user's).
  ;; buckets: stripe i's bucket vector (#f while empty) at i; at
  ;; stripe-count, the identity stripe's Chez hashtable (#f while empty).
  ;; locks: stripe i's lock at (* i lock-spacing), its entry count next to it.
  (define-record-type (chashtable new-chashtable concurrent-hashtable?)
    (fields kind hash equiv buckets locks)
    (nongenerative spindle-concurrent-hashtable-v2) (sealed #t))

  (define-record-type node
    (fields hash key (mutable value) next)
    (nongenerative spindle-concurrent-hashtable-node-v1) (sealed #t))

  (define lock-spacing 8)             ; words: one cache line per lock

  ;; About four stripes per processor, 16 at least, 256 at most.
  (define stripe-count
    (let loop ([n 16])
      (if (or (fx>= n (fx* 4 (processor-count))) (fx= n 256)) n (loop (fx* n 2)))))
  (define stripe-mask (fx- stripe-count 1))
  (define identity-stripe stripe-count)

  (define (make-table who kind hash equiv k)
    (unless (and (integer? k) (exact? k) (>= k 0))
      (assertion-violation who "expected an exact non-negative integer size" k))
    (let ([locks (make-vector (fx* (fx+ stripe-count 1) lock-spacing) #f)]
          [buckets (make-vector (fx+ stripe-count 1) #f)]
          [per-stripe (quotient k stripe-count)])
      (do ([i 0 (fx+ i 1)]) ((fx> i stripe-count)) (vector-set! locks (fx+ (fx* i lock-spacing) 1) 0))
      (when (> per-stripe 0)
        (do ([i 0 (fx+ i 1)]) ((fx= i stripe-count))
          (vector-set! buckets i (make-vector (bucket-count-for per-stripe) #f))))
      (new-chashtable kind hash equiv buckets locks)))

  (define (bucket-count-for n) (let loop ([len 8]) (if (fx>= len n) len (loop (fx* len 2)))))

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

  (define (check-table who t)
    (unless (concurrent-hashtable? t) (assertion-violation who "expected a concurrent hashtable" t)))

  ;; ---------------------------------------------------------------- hashes
  ;; Mixes a non-negative fixnum so that its low bits depend on all of it
  ;; (symbol hashes and small integers have little entropy in them), with
  ;; products that stay fixnums.
  (define (spread h)
    (let* ([x (fxlogand (fxxor h (fxsrl h 29) (fxsrl h 58)) #x1FFFFFFF)]
           [x (fxlogand (fx* x #x45D9F3B) #x1FFFFFFF)]
           [x (fxxor x (fxsrl x 15))]
           [x (fxlogand (fx* x #x45D9F3B) #x1FFFFFFF)])
      (fxxor x (fxsrl x 13))))

  ;; Eight neighbouring hashes share a stripe, and a stripe's buckets are
  ;; picked by the hash's low bits: sequential keys keep their locality.
  (define-syntax stripe-of
    (syntax-rules () [(_ h) (fxlogand (spread (fxsrl h 3)) stripe-mask)]))
  (define-syntax bucket-of
    (syntax-rules () [(_ vec h) (fxlogand h (fx- (vector-length vec) 1))]))

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

  ;; The key's hash as a non-negative fixnum, or #f for the identity stripe.
  (define (key-hash who t key)
    (if (eq? (chashtable-kind t) 'custom)
        (let ([h ((chashtable-hash t) key)])
          (cond
            [(fixnum? h) (fxlogand h (greatest-fixnum))]
            [(and (integer? h) (exact? h)) (bitwise-and h (greatest-fixnum))]
            [else (assertion-violation who "hash procedure returned a non-integer" h key)]))
        (stable-hash key)))

  (define (find-node t chain h key)
    (case (chashtable-kind t)
      [(eq) (let loop ([n chain]) (and n (if (eq? (node-key n) key) n (loop (node-next n)))))]
      [(eqv) (let loop ([n chain]) (and n (if (eqv? (node-key n) key) n (loop (node-next n)))))]
      [else
       (let ([equiv (chashtable-equiv t)])
         (let loop ([n chain])
           (and n (if (and (fx= (node-hash n) h) (equiv (node-key n) key)) n (loop (node-next n))))))]))

  ;; ---------------------------------------------------------------- locks
  (define (lock! locks i)
    (let ([at (fx* i lock-spacing)])
      (unless (vector-cas! locks at #f #t)
        (let loop ([polls 0])
          (cond
            [(and (not (vector-ref locks at)) (vector-cas! locks at #f #t)) (void)]
            [(fx< polls 1000) (loop (fx+ polls 1))]
            [else (os-yield!) (loop 0)])))))

  (define (unlock! locks i) (vector-set! locks (fx* i lock-spacing) #f))

  (define-syntax with-lock
    (syntax-rules ()
      [(_ t i body ...)
       (let ([locks (chashtable-locks t)] [idx i])
         (disable-interrupts)
         (lock! locks idx)
         (let ([v (begin body ...)])
           (unlock! locks idx)
           (enable-interrupts)
           v))]))

  (define-syntax count-ref
    (syntax-rules () [(_ t i) (vector-ref (chashtable-locks t) (fx+ (fx* i lock-spacing) 1))]))
  (define-syntax count-add!
    (syntax-rules ()
      [(_ t i d) (let ([at (fx+ (fx* i lock-spacing) 1)] [locks (chashtable-locks t)])
                   (vector-set! locks at (fx+ (vector-ref locks at) d)))]))

  ;; ---------------------------------------------------------------- writes
  ;; Binds vec (#f while the stripe is empty), b, chain and node (key's
  ;; node or #f), searched with no lock held.
  (define-syntax search
    (syntax-rules ()
      [(_ t i h key (vec b chain node) body ...)
       (let* ([vec (vector-ref (chashtable-buckets t) i)]
              [b (and vec (bucket-of vec h))]
              [chain (and vec (vector-ref vec b))]
              [node (find-node t chain h key)])
         body ...)]))

  ;; Under the lock: is the bucket still the one searched?
  (define-syntax unchanged?
    (syntax-rules ()
      [(_ t i vec b chain)
       (and (eq? (vector-ref (chashtable-buckets t) i) vec) (or (not vec) (eq? (vector-ref vec b) chain)))]))

  ;; Searches key's bucket, then runs body under the stripe lock if the
  ;; bucket is unchanged, else searches again.
  (define-syntax stripe-write
    (syntax-rules ()
      [(_ t h key (vec b chain node) body ...)
       (let ([i (stripe-of h)])
         (let retry ()
           (search t i h key (vec b chain node)
             (unless (with-lock t i (and (unchanged? t i vec b chain) (begin body ... #t)))
               (retry)))))]))

  ;; Under the lock: adds a node for key at the head of its bucket.
  (define (insert! t i vec h key value)
    (let* ([buckets (chashtable-buckets t)]
           [vec (or vec (let ([v (make-vector 8 #f)]) (vector-set! buckets i v) v))]
           [b (bucket-of vec h)])
      (vector-set! vec b (make-node h key value (vector-ref vec b)))
      (count-add! t i 1)
      (when (fx> (count-ref t i) (vector-length vec)) (grow! buckets i vec))))

  ;; Under the lock: a vector twice as long, with new nodes (nodes never
  ;; move between chains: readers may be walking the old ones).
  (define (grow! buckets i vec)
    (let ([new (make-vector (fx* 2 (vector-length vec)) #f)])
      (vector-for-each
        (lambda (chain)
          (let loop ([n chain])
            (when n
              (let ([b (bucket-of new (node-hash n))])
                (vector-set! new b (make-node (node-hash n) (node-key n) (node-value n) (vector-ref new b))))
              (loop (node-next n)))))
        vec)
      (vector-set! buckets i new)))

  ;; The chain without node n: the nodes before it are copied.
  (define (chain-without chain n)
    (if (eq? chain n)
        (node-next n)
        (make-node (node-hash chain) (node-key chain) (node-value chain) (chain-without (node-next chain) n))))

  ;; The identity stripe: its Chez hashtable under its lock (made if create?).
  (define-syntax with-identity
    (syntax-rules ()
      [(_ t create? absent (tbl) body ...)
       (let ([buckets (chashtable-buckets t)])
         (if (and (not create?) (not (vector-ref buckets identity-stripe)))
             absent
             (with-lock t identity-stripe
               (let ([tbl (or (vector-ref buckets identity-stripe)
                              (let ([new (if (eq? (chashtable-kind t) 'eq) (make-eq-hashtable) (make-eqv-hashtable))])
                                (vector-set! buckets identity-stripe new)
                                new))])
                 body ...))))]))

  ;; ---------------------------------------------------------------- one key
  (define (concurrent-hashtable-ref t key default)
    (check-table 'concurrent-hashtable-ref t)
    (let ([h (key-hash 'concurrent-hashtable-ref t key)])
      (if h
          (let ([vec (vector-ref (chashtable-buckets t) (stripe-of h))])
            (let ([n (and vec (find-node t (vector-ref vec (bucket-of vec h)) h key))])
              (if n (node-value n) default)))
          (with-identity t #f default (tbl) (hashtable-ref tbl key default)))))

  (define (concurrent-hashtable-contains? t key)
    (check-table 'concurrent-hashtable-contains? t)
    (let ([h (key-hash 'concurrent-hashtable-contains? t key)])
      (if h
          (let ([vec (vector-ref (chashtable-buckets t) (stripe-of h))])
            (and vec (find-node t (vector-ref vec (bucket-of vec h)) h key) #t))
          (with-identity t #f #f (tbl) (hashtable-contains? tbl key)))))

  (define (concurrent-hashtable-set! t key value)
    (check-table 'concurrent-hashtable-set! t)
    (let ([h (key-hash 'concurrent-hashtable-set! t key)])
      (if h
          (stripe-write t h key (vec b chain node)
            (if node (node-value-set! node value) (insert! t (stripe-of h) vec h key value)))
          (with-identity t #t #f (tbl) (hashtable-set! tbl key value)))))

  (define (concurrent-hashtable-delete! t key)
    (check-table 'concurrent-hashtable-delete! t)
    (let ([h (key-hash 'concurrent-hashtable-delete! t key)])
      (if h
          (stripe-write t h key (vec b chain node)
            (when node
              (vector-set! vec b (chain-without chain node))
              (count-add! t (stripe-of h) -1)))
          (with-identity t #f #f (tbl) (hashtable-delete! tbl key)))))

  ;; Marks "no entry" for update!.
  (define absent (gensym "absent"))

  ;; proc runs with no lock held; its result is stored only if the entry
  ;; still holds the value proc was given.
  (define (concurrent-hashtable-update! t key proc default)
    (check-table 'concurrent-hashtable-update! t)
    (unless (procedure? proc) (assertion-violation 'concurrent-hashtable-update! "expected a procedure" proc))
    (let ([h (key-hash 'concurrent-hashtable-update! t key)])
      (if h
          (let ([i (stripe-of h)])
            (let retry ()
              (search t i h key (vec b chain node)
                (let* ([old (if node (node-value node) absent)]
                       [new (proc (if (eq? old absent) default old))])
                  (unless (with-lock t i
                            (and (unchanged? t i vec b chain)
                                 (or (not node) (eq? (node-value node) old))
                                 (begin (if node (node-value-set! node new) (insert! t i vec h key new)) #t)))
                    (retry))))))
          (let retry ()
            (let* ([old (with-identity t #f absent (tbl) (hashtable-ref tbl key absent))]
                   [new (proc (if (eq? old absent) default old))])
              (unless (with-identity t #t #f (tbl)
                        (and (eq? (hashtable-ref tbl key absent) old)
                             (begin (hashtable-set! tbl key new) #t)))
                (retry)))))))

  ;; ---------------------------------------------------------------- whole table
  ;; Runs thunk with every stripe locked.
  (define (with-all-locked t thunk)
    (let ([locks (chashtable-locks t)] [n (fx+ stripe-count 1)])
      (disable-interrupts)
      (do ([i 0 (fx+ i 1)]) ((fx= i n)) (lock! locks i))
      (let ([v (thunk)])
        (do ([i 0 (fx+ i 1)]) ((fx= i n)) (unlock! locks i))
        (enable-interrupts)
        v)))

  ;; With every stripe locked: (values keys values) as lists.
  (define (all-entries t)
    (let ([buckets (chashtable-buckets t)])
      (let stripes ([i 0] [ks '()] [vs '()])
        (cond
          [(fx= i stripe-count)
           (let ([tbl (vector-ref buckets identity-stripe)])
             (if tbl
                 (let-values ([(k v) (hashtable-entries tbl)])
                   (values (append (vector->list k) ks) (append (vector->list v) vs)))
                 (values ks vs)))]
          [(vector-ref buckets i)
           => (lambda (vec)
                (let chains ([b 0] [ks ks] [vs vs])
                  (if (fx= b (vector-length vec))
                      (stripes (fx+ i 1) ks vs)
                      (let walk ([n (vector-ref vec b)] [ks ks] [vs vs])
                        (if n
                            (walk (node-next n) (cons (node-key n) ks) (cons (node-value n) vs))
                            (chains (fx+ b 1) ks vs))))))]
          [else (stripes (fx+ i 1) ks vs)]))))

  (define (concurrent-hashtable-size t)
    (check-table 'concurrent-hashtable-size t)
    (with-all-locked t
      (lambda ()
        (let loop ([i 0] [n 0])
          (if (fx= i stripe-count)
              (let ([tbl (vector-ref (chashtable-buckets t) identity-stripe)])
                (if tbl (fx+ n (hashtable-size tbl)) n))
              (loop (fx+ i 1) (fx+ n (count-ref t i))))))))

  (define (concurrent-hashtable-clear! t)
    (check-table 'concurrent-hashtable-clear! t)
    (with-all-locked t
      (lambda ()
        (let ([buckets (chashtable-buckets t)])
          (do ([i 0 (fx+ i 1)]) ((fx> i stripe-count))
            (vector-set! buckets i #f)
            (vector-set! (chashtable-locks t) (fx+ (fx* i lock-spacing) 1) 0))))))

  (define (snapshot t) (with-all-locked t (lambda () (call-with-values (lambda () (all-entries t)) cons))))

  (define (concurrent-hashtable-keys t)
    (check-table 'concurrent-hashtable-keys t)
    (list->vector (car (snapshot t))))

  ;; One consistent snapshot: (values keys values), vectors in matching order.
  (define (concurrent-hashtable-entries t)
    (check-table 'concurrent-hashtable-entries t)
    (let ([s (snapshot t)])
      (values (list->vector (car s)) (list->vector (cdr s)))))

  ;; An ordinary mutable Chez hashtable with a snapshot of the contents.
  (define (concurrent-hashtable-copy t)
    (check-table 'concurrent-hashtable-copy t)
    (let* ([s (snapshot t)] [n (length (car s))]
           [h (case (chashtable-kind t)
                [(eq) (make-eq-hashtable n)]
                [(eqv) (make-eqv-hashtable n)]
                [else (make-hashtable (chashtable-hash t) (chashtable-equiv t) n)])])
      (for-each (lambda (k v) (hashtable-set! h k v)) (car s) (cdr s))
      h))

  (record-writer (record-type-descriptor chashtable)
    (lambda (t port wr)
      (display "#<concurrent-hashtable " port)
      (display (chashtable-kind t) port)
      (display ">" port))))
