#!chezscheme
;;; The barrier of a fork-join group: a dissemination barrier over a shared
;;; fxvector.  Every member does ceil(log2 np) rounds; in round r member i
;;; signals member (i + 2^r) mod np and waits for the signal of member
;;; (i - 2^r) mod np.  No member handles more than 2 ceil(log2 np) signals
;;; per barrier, so its cost grows with log2 np, not np.
;;;
;;; A waiter spins on its flag, then yields the CPU, then parks: it blocks
;;; on a place channel from that round's signaller (its wake channel), and
;;; the signaller, seeing it parked, sends it a wake-up.
;;;
;;; Layout (8-byte words): word 0 holds member 0's barrier count + 1 once
;;; member 0 has returned from its body (0 before); member m owns the
;;; words from (m + 1) * stride (stride: a multiple of 8 words, so each
;;; member's words start a cache line):
;;;   r < rounds   flag of round r: how many barriers its signaller has
;;;                signalled in round r (written by that signaller only)
;;;   rounds       parked: the token of the wait the member is parked in, or 0
;;;   rounds + 1   count: how many barriers the member has entered
;;;   rounds + 2   scratch, for fences
;;;
;;; Invariants:
;;; - Barrier k (the k-th of every member) is done for member i when every
;;;   flag of i is >= k.  Flags only grow, and a signaller is at most one
;;;   barrier ahead of a waiter, so >= (not =) is the test.
;;; - No lost wake-up: the waiter stores its token in parked, then a locked
;;;   instruction (a full fence on x86-64), then reads its flag; the
;;;   signaller increments the flag with a locked instruction, then reads
;;;   parked.  One of the two sees the other's store.  A wake-up may come
;;;   for a wait that ended without it: its token is then older than any
;;;   later wait's, which discards it.
;;; - The same pairing orders a member's count against word 0 (see
;;;   cg-barrier-enter! and cg-barrier-finish!).
;;; - Signalling is a locked increment, so what a member wrote to shared
;;;   memory before the barrier is seen by every member after it.
(library (spindle private groups cg-barrier)
  (export cg-barrier-rounds cg-barrier-words make-cg-barrier
          cg-barrier-enter! cg-barrier-wait! cg-barrier-count cg-barrier-finish!)
  (import (chezscheme)
          (only (spindle private places shared-vector) shared-vector-address shared-vector-length)
          (only (spindle private os threads) os-yield!)
          (only (spindle private os monotonic-clock) monotonic-microseconds))

  (define-ftype words (array 16777216 iptr))

  ;; ceil(log2 np)
  (define (cg-barrier-rounds np)
    (let loop ([r 0] [span 1]) (if (fx>= span np) r (loop (fx+ r 1) (fx* span 2)))))

  (define (stride np) (fx* 8 (fxquotient (fx+ (cg-barrier-rounds np) 10) 8)))

  ;; Length of the shared fxvector of a group of np members.
  (define (cg-barrier-words np) (fx* (fx+ np 1) (stride np)))

  ;; A member's view.  wake-in: vector, by round, of the channel its
  ;; signaller wakes it on; wake-out: of the channel to its round's target;
  ;; (put ch token) sends a wake-up.
  (define-record-type (cg-barrier make-barrier cg-barrier?)
    (fields id np round-count stride shared  ; shared: the fxvector, kept alive here
            memory wake-in wake-out put)
    (sealed #t))

  (define (make-cg-barrier sv id np wake-in wake-out put)
    (unless (fx= (shared-vector-length sv) (cg-barrier-words np))
      (assertion-violation 'make-cg-barrier "shared vector of the wrong length" sv))
    (make-barrier id np (cg-barrier-rounds np) (stride np) sv
                  (make-ftype-pointer words (shared-vector-address sv)) wake-in wake-out put))

  (define-syntax word
    (syntax-rules () [(_ b i) (ftype-ref words (i) (cg-barrier-memory b))]))
  (define-syntax word-set!
    (syntax-rules () [(_ b i v) (ftype-set! words (i) (cg-barrier-memory b) v)]))
  (define-syntax word-incr!
    (syntax-rules () [(_ b i) (ftype-locked-incr! words (i) (cg-barrier-memory b))]))

  (define (base b m) (fx* (fx+ m 1) (cg-barrier-stride b)))
  (define (parked-slot b m) (fx+ (base b m) (cg-barrier-round-count b)))
  (define (count-slot b m) (fx+ (base b m) (cg-barrier-round-count b) 1))
  (define (fence! b) (word-incr! b (fx+ (base b (cg-barrier-id b)) (cg-barrier-round-count b) 2)))

  ;; Barriers member m has entered.
  (define (cg-barrier-count b m) (word b (count-slot b m)))

  ;; Member 0 returned from its body after k barriers: a member that
  ;; enters a later one must not wait for it.  The fence pairs with
  ;; cg-barrier-enter!'s: after it, member 0 sees the count of every member
  ;; that will not see word 0 set.
  (define (cg-barrier-finish! b k)
    (word-set! b 0 (fx+ k 1))
    (fence! b))

  ;; Member id enters its k-th barrier.  #t if member 0 has already returned
  ;; without it (the barrier would never end).
  (define (cg-barrier-enter! b k)
    (word-incr! b (count-slot b (cg-barrier-id b)))
    (let ([done (word b 0)])
      (and (fx> done 0) (fx> k (fx- done 1)))))

  ;; A waiter spins this many times (about 2 us), then yields the CPU
  ;; until yield-us have passed (a yield returns at once when no other
  ;; process wants the CPU, so with a core per member this is still a
  ;; spin), then parks.  Parking and the wake-up message cost tens of
  ;; microseconds; waits longer than the window cost that much more.
  (define spins 200)
  (define yield-us 100)

  ;; Runs the rounds of barrier k (entered with cg-barrier-enter!).
  ;; (park ch ready?) blocks until ready? returns true; ch is the wait's
  ;; wake channel, whose messages (tokens) it takes and may ignore: after
  ;; each, ready? tells whether the wait is over.
  (define (cg-barrier-wait! b k park)
    (let ([i (cg-barrier-id b)] [np (cg-barrier-np b)] [mine (base b (cg-barrier-id b))])
      (let loop ([r 0] [span 1])
        (when (fx< r (cg-barrier-round-count b))
          (let ([target (fxmodulo (fx+ i span) np)])
            (word-incr! b (fx+ (base b target) r))
            (let ([token (token k r)])
              (when (fx= (word b (parked-slot b target)) token)
                ((cg-barrier-put b) (vector-ref (cg-barrier-wake-out b) r) token)))
            (wait-flag b (fx+ mine r) k r park)
            (loop (fx+ r 1) (fx* span 2)))))))

  ;; Unique per (barrier, round) of one member: a wake-up names its wait.
  (define (token k r) (fx+ (fx* k 64) r 1))

  (define (wait-flag b slot k r park)
    (define (ready?) (fx>= (word b slot) k))
    (unless (let spin ([n 0])
              (or (ready?) (and (fx< n spins) (spin (fx+ n 1)))))
      (unless (let ([end (fx+ (monotonic-microseconds) yield-us)])
                (let yield ([n 1])
                  (or (ready?)
                      (begin
                        (os-yield!)
                        (if (and (fx= 0 (fxand n 7)) (fx> (monotonic-microseconds) end))
                            (ready?)
                            (yield (fx+ n 1)))))))
        (let ([parked (parked-slot b (cg-barrier-id b))])
          (word-set! b parked (token k r))
          (fence! b)
          (unless (ready?)
            (park (vector-ref (cg-barrier-wake-in b) r) ready?))
          (word-set! b parked 0))))))
