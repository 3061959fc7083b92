#!chezscheme
;;; The collectives of (spindle mpi), after Racket's rmpi: barrier,
;;; broadcast, allgather, alltoall, alltoallv, and the communicator
;;; operations comm-split and partition; reduce and allreduce are
;;; mpi-reduce's.
;;;
;;; Each is one non-blocking MPI collective (or two: the sizes, then the
;;; bytes) completed by the engine's progress thread, so a waiting green
;;; thread parks.  Three kinds of data:
;;;  - shared vectors: MPI reads and writes their memory in place;
;;;  - typed data (fixnums, flonums, bytevectors, fxvectors): copied once into foreign memory as MPI_BYTE, MPI_INT64_T
;;;    or MPI_DOUBLE, no serialisation;
;;;  - any other place message: packed (mpi-data), its size exchanged
;;;    first, then the bytes (MPI_Iallgatherv, MPI_Ialltoallv).
;;; The reductions are mpi-reduce's, on this library's helper threads
;;; (whole) and broadcast.
(library (spindle private places mpi-collectives)
  (export rmpi-barrier rmpi-broadcast
          rmpi-allgather rmpi-alltoall rmpi-alltoallv rmpi-comm-split rmpi-partition
          set-collective-spawner! whole idle! broadcast-message)
  (import (chezscheme)
          (spindle private os mpi)
          (only (spindle private os memory) malloc free memcpy-to-bytevector! memcpy-from-bytevector!)
          (spindle private places mpi-data)
          (spindle private places mpi-world)
          (spindle private places mpi-engine)
          (only (spindle private core evt-core) make-latch latch-fire!)
          (only (spindle private core sync) sync)
          (only (spindle private places shared-vector) shared-vector? shared-vector-address shared-vector-length
                shared-flvector? shared-fxvector? shared-bytes?))

  ;; A collective made of several MPI operations in turn (a size, then the
  ;; bytes; a reduction's gathering, then its broadcast) runs whole in a
  ;; helper thread while the caller waits for its outcome: a break, kill or
  ;; cancellation of the caller between two of them would leave this rank
  ;; an operation behind the others, whose next collective would then meet
  ;; the wrong one (a broadcast's bytes landing in another's 8-byte size:
  ;; heap corruption).  Broken or killed, the caller leaves; the helper
  ;; finishes, its outcome dropped, and until it has the communicator is
  ;; busy: every collective on it first waits for that (idle!), so that
  ;; each rank starts them in one order.  A collective of one MPI request
  ;; needs no helper: its request completes without its caller.  The
  ;; helper is a thread of the caller's pool that no custodian of the
  ;; program's shuts down: (spindle mpi) installs the procedure that starts
  ;; it (spawn thunk), as it does the engine's progress thread, and
  ;; call-blocking (the public layer's), which runs a blocking MPI call on
  ;; a helper OS thread (rmpi-comm-split).
  (define spawn-helper #f)
  (define call-blocking #f)
  (define (set-collective-spawner! spawn blocking)
    (set! spawn-helper spawn)
    (set! call-blocking blocking))

  (define (idle! comm)
    (let ([l (rmpi-comm-busy comm)]) (when l (sync l))))

  (define (whole comm thunk)
    (idle! comm)
    (let* ([outcome #f] [done (make-latch (lambda (l) outcome))])
      (rmpi-comm-busy-set! comm done)
      (spawn-helper
        (lambda ()
          (set! outcome
            (call/cc
              (lambda (k)
                (with-exception-handler
                  (lambda (c) (k (cons 'raised c)))
                  (lambda () (call-with-values thunk (lambda vals (cons 'ok vals))))))))
          (when (eq? (rmpi-comm-busy comm) done) (rmpi-comm-busy-set! comm #f))
          (latch-fire! done)))
      (let ([r (sync done)])
        (if (eq? (car r) 'ok) (apply values (cdr r)) (raise (cdr r))))))

  (define (rmpi-barrier comm)
    (check-comm 'rmpi-barrier comm)
    (idle! comm)
    (barrier comm))

  (define (barrier comm)
    (run-request! 'rmpi-barrier '() (lambda (req) (mpi-ibarrier (rmpi-comm-handle comm) req))))

  (define (bcast-buffer who comm root buf n)
    (run-request! who '() (lambda (req) (mpi-ibcast buf n (mpi-byte) root (rmpi-comm-handle comm) req))))

  (define rmpi-broadcast
    (case-lambda
      [(comm root) (rmpi-broadcast comm root #f)]
      [(comm root v)
       (check-comm 'rmpi-broadcast comm) (check-rank 'rmpi-broadcast comm root)
       (if (shared-vector? v)
           (begin (idle! comm) (broadcast-in-place comm root v))
           (whole comm (lambda () (broadcast-message comm root v))))]))

  ;; A shared vector at every rank (each its own, of one length): root's
  ;; contents are copied into the others' memory directly.
  (define (broadcast-in-place comm root v)
    (bcast-buffer 'rmpi-broadcast comm root (shared-vector-address v) (shared-vector-bytes v))
    v)

  (define (shared-vector-bytes v)
    (if (shared-bytes? v) (shared-vector-length v) (fx* 8 (shared-vector-length v))))

  (define (broadcast-message comm root v)
       (let ([me? (fx= root (rmpi-comm-id comm))] [len (malloc 8)])
         (let ([bv (and me? (pack 'rmpi-broadcast v))])
           (foreign-set! 'integer-64 len 0 (if bv (bytevector-length bv) 0))
           (bcast-buffer 'rmpi-broadcast comm root len 8)
           (let* ([n (foreign-ref 'integer-64 len 0)] [buf (if bv (foreign-copy bv) (malloc (fxmax n 1)))])
             (free len)
             (bcast-buffer 'rmpi-broadcast comm root buf n)
             (if me?
                 (begin (free buf) v)
                 (let ([in (make-bytevector n)])
                   (memcpy-to-bytevector! in buf n)
                   (free buf)
                   (unpack in)))))))

  ;; ------------------------------------------------------------ allgather
  ;; (rmpi-allgather comm v) -> a vector of every rank's v, in rank order.
  ;; (rmpi-allgather comm v out): v typed, out typed of the same kind and
  ;; cnt times v's length: rank r's elements land at r * (length v) in out,
  ;; which is returned.
  (define rmpi-allgather
    (case-lambda
      [(comm v)
       (check-comm 'rmpi-allgather comm)
       (whole comm (lambda () (allgather-value comm v)))]
      [(comm v out)
       (check-comm 'rmpi-allgather comm)
       (let ([kind (check-typed 'rmpi-allgather v)] [k (element-count v)])
         (check-typed-like 'rmpi-allgather out kind (fx* k (rmpi-comm-cnt comm)))
         (check-block 'rmpi-allgather k)
         (idle! comm)
         (let-values ([(src own-src?) (elements->foreign v)] [(dst own-dst?) (destination out)])
           (run-request! 'rmpi-allgather (if own-src? (list src) '())
             (lambda (req)
               (mpi-iallgather src k (kind-datatype kind) dst k (kind-datatype kind) (rmpi-comm-handle comm) req)))
           (finish-destination! 'rmpi-allgather kind out dst own-dst? (element-count out))
           out))]))

  ;; One MPI_Iallgather of (tag, bits) per rank: tag 0 a fixnum, 1 a
  ;; flonum (its IEEE bits), 2 anything else.  Ranks may give values of
  ;; different kinds, so only when every tag is 0 or 1 is that the answer;
  ;; otherwise every rank, seeing the same tags, goes on to the general path.
  (define (allgather-value comm v)
    (let* ([cnt (rmpi-comm-cnt comm)] [p (malloc 16)] [out (malloc (fx* 16 cnt))])
      (cond
        [(fixnum? v) (foreign-set! 'integer-64 p 0 0) (foreign-set! 'integer-64 p 8 v)]
        [(flonum? v) (foreign-set! 'integer-64 p 0 1) (foreign-set! 'double p 8 v)]
        [else (foreign-set! 'integer-64 p 0 2) (foreign-set! 'integer-64 p 8 0)])
      (run-request! 'rmpi-allgather (list p)
        (lambda (req) (mpi-iallgather p 2 (mpi-int64) out 2 (mpi-int64) (rmpi-comm-handle comm) req)))
      (let ([r (make-vector cnt)])
        (let loop ([i 0])
          (if (fx= i cnt)
              (begin (free out) r)
              (case (foreign-ref 'integer-64 out (fx* 16 i))
                [(0) (vector-set! r i (foreign-ref 'integer-64 out (fx+ 8 (fx* 16 i)))) (loop (fx+ i 1))]
                [(1) (vector-set! r i (foreign-ref 'double out (fx+ 8 (fx* 16 i)))) (loop (fx+ i 1))]
                [else (free out) (allgather-message 'rmpi-allgather comm v)]))))))

  ;; Any value: the packed sizes, then the bytes.
  (define (allgather-message who comm v)
    (let* ([bv (pack who v)] [n (bytevector-length bv)] [cnt (rmpi-comm-cnt comm)] [h (rmpi-comm-handle comm)]
           [mine (malloc 8)] [sizes (malloc (fx* 8 cnt))])
      (foreign-set! 'integer-64 mine 0 n)
      (run-request! who (list mine)
        (lambda (req) (mpi-iallgather mine 1 (mpi-int64) sizes 1 (mpi-int64) h req)))
      (let-values ([(counts displs total) (int-layout who sizes cnt)])
        (free sizes)
        (let ([send (foreign-copy bv)] [recv (malloc (fxmax 1 total))])
          (run-request! who (list send)
            (lambda (req) (mpi-iallgatherv send n (mpi-byte) recv counts displs (mpi-byte) h req)))
          (let ([r (unpack-blocks recv displs counts cnt)])
            (free counts) (free displs) (free recv)
            r)))))

  ;; From cnt 64-bit sizes: (values counts displs total) as C int arrays
  ;; (malloc'ed), the blocks laid end to end.
  (define (int-layout who sizes cnt)
    (let ([counts (malloc (fx* 4 cnt))] [displs (malloc (fx* 4 cnt))])
      (let loop ([i 0] [at 0])
        (if (fx= i cnt)
            (values counts displs at)
            (let ([n (foreign-ref 'integer-64 sizes (fx* 8 i))])
              (when (> (+ at n) max-int)
                (free counts) (free displs)
                (error who (format "the messages total more than ~a bytes" max-int)))
              (foreign-set! 'int counts (fx* 4 i) n)
              (foreign-set! 'int displs (fx* 4 i) at)
              (loop (fx+ i 1) (fx+ at n)))))))

  (define max-int (- (expt 2 31) 1))

  ;; The packed blocks of recv as a vector of values.
  (define (unpack-blocks recv displs counts cnt)
    (let ([r (make-vector cnt)])
      (do ([i 0 (fx+ i 1)]) ((fx= i cnt) r)
        (let* ([n (foreign-ref 'int counts (fx* 4 i))] [bv (make-bytevector n)])
          (memcpy-to-bytevector! bv (+ recv (foreign-ref 'int displs (fx* 4 i))) n)
          (vector-set! r i (unpack bv))))))

  ;; ------------------------------------------------------------ alltoall
  ;; (rmpi-alltoall comm out [in]): out's block i goes to rank i; the
  ;; result's block j came from rank j.  A vector has one element per rank
  ;; (any values, packed); a bytevector, fxvector or shared vector has cnt
  ;; blocks of equal length, sent as MPI_BYTE, MPI_INT64_T or MPI_DOUBLE
  ;; (every rank must give the same kind, as in MPI).  in, if given, is a
  ;; typed vector of out's kind and length that receives the result.
  (define rmpi-alltoall
    (case-lambda
      [(comm out) (alltoall comm out #f)]
      [(comm out in) (alltoall comm out in)]))

  (define (alltoall comm out in)
    (check-comm 'rmpi-alltoall comm)
    (let ([cnt (rmpi-comm-cnt comm)] [kind (element-kind out)])
      (when (and (vector? out) (not (fx= (vector-length out) cnt)))
        (assertion-violation 'rmpi-alltoall (format "expected a vector of ~a elements, one per rank" cnt) out))
      (cond
        [kind
         (let ([n (element-count out)])
           (unless (fx= 0 (fxmod n cnt))
             (assertion-violation 'rmpi-alltoall (format "expected a length that is a multiple of ~a, the rank count" cnt) out))
           (let ([in (or in (make-elements out n))] [k (fxquotient n cnt)])
             (check-typed-like 'rmpi-alltoall in kind n)
             (check-block 'rmpi-alltoall k)
             (idle! comm)
             (let-values ([(src own-src?) (elements->foreign out)] [(dst own-dst?) (destination in)])
               (run-request! 'rmpi-alltoall (if own-src? (list src) '())
                 (lambda (req)
                   (mpi-ialltoall src k (kind-datatype kind) dst k (kind-datatype kind) (rmpi-comm-handle comm) req)))
               (finish-destination! 'rmpi-alltoall kind in dst own-dst? n)
               in)))]
        [(vector? out)
         (when in (assertion-violation 'rmpi-alltoall "a vector of any values takes no destination" in))
         (whole comm (lambda () (alltoall-message 'rmpi-alltoall comm out)))]
        [else (assertion-violation 'rmpi-alltoall "expected a vector, bytevector, fxvector or shared vector" out)])))

  ;; A vector of cnt values: each packed, the sizes exchanged, then the bytes.
  (define (alltoall-message who comm out)
    (let* ([cnt (rmpi-comm-cnt comm)] [h (rmpi-comm-handle comm)]
           [packed (vector-map (lambda (x) (pack who x)) out)]
           [sizes (malloc (fx* 8 cnt))] [their-sizes (malloc (fx* 8 cnt))])
      (do ([i 0 (fx+ i 1)]) ((fx= i cnt))
        (foreign-set! 'integer-64 sizes (fx* 8 i) (bytevector-length (vector-ref packed i))))
      (run-request! who '()
        (lambda (req) (mpi-ialltoall sizes 1 (mpi-int64) their-sizes 1 (mpi-int64) h req)))
      (let*-values ([(scounts sdispls stotal) (int-layout who sizes cnt)]
                    [(rcounts rdispls rtotal) (int-layout who their-sizes cnt)])
        (free sizes) (free their-sizes)
        (let ([send (malloc (fxmax 1 stotal))] [recv (malloc (fxmax 1 rtotal))])
          (do ([i 0 (fx+ i 1)]) ((fx= i cnt))
            (let ([bv (vector-ref packed i)])
              (memcpy-from-bytevector! (+ send (foreign-ref 'int sdispls (fx* 4 i))) bv (bytevector-length bv))))
          (run-request! who (list send scounts sdispls)
            (lambda (req)
              (mpi-ialltoallv send scounts sdispls (mpi-byte) recv rcounts rdispls (mpi-byte) h req)))
          (let ([r (unpack-blocks recv rdispls rcounts cnt)])
            (free rcounts) (free rdispls) (free recv)
            r)))))

  ;; ------------------------------------------------------------ alltoallv
  ;; (rmpi-alltoallv comm out send-count send-displ in recv-count recv-displ):
  ;; send-count[i] elements of out from send-displ[i] go to rank i; from
  ;; rank j, recv-count[j] elements land in `in` at recv-displ[j]; returns
  ;; in.  Counts and displacements are fxvectors (or vectors of fixnums) of
  ;; one element per rank.  out and in: typed vectors of one kind (in
  ;; place for shared vectors), or vectors of any values.
  (define (rmpi-alltoallv comm out send-count send-displ in recv-count recv-displ)
    (define who 'rmpi-alltoallv)
    (check-comm who comm)
    (let* ([cnt (rmpi-comm-cnt comm)]
           [sc (index-vector who send-count cnt)] [sd (index-vector who send-displ cnt)]
           [rc (index-vector who recv-count cnt)] [rd (index-vector who recv-displ cnt)]
           [kind (element-kind out)])
      (check-ranges who out sc sd "send")
      (check-ranges who in rc rd "receive")
      (cond
        [kind
         (check-typed-like who in kind #f)
         (idle! comm)
         (let-values ([(src own-src?) (elements->foreign out)] [(dst own-dst?) (destination in)])
           (let ([scounts (int-array sc)] [sdispls (int-array sd)] [rcounts (int-array rc)] [rdispls (int-array rd)])
             (run-request! who (append (if own-src? (list src) '()) (list scounts sdispls))
               (lambda (req)
                 (mpi-ialltoallv src scounts sdispls (kind-datatype kind) dst rcounts rdispls (kind-datatype kind)
                   (rmpi-comm-handle comm) req)))
             (free rcounts) (free rdispls)
             (when own-dst?
               (do ([j 0 (fx+ j 1)]) ((fx= j cnt))
                 (foreign->elements! who kind dst (vector-ref rd j) in (vector-ref rd j) (vector-ref rc j)))
               (free dst))
             in))]
        [(and (vector? out) (vector? in))
         (let ([got (whole comm (lambda () (alltoall-message who comm
                      (vector-map (lambda (n d)
                                    (let ([v (make-vector n)])
                                      (do ([i 0 (fx+ i 1)]) ((fx= i n) v) (vector-set! v i (vector-ref out (fx+ d i))))))
                                  sc sd))))])
           (do ([j 0 (fx+ j 1)]) ((fx= j cnt) in)
             (let ([v (vector-ref got j)] [at (vector-ref rd j)])
               (unless (fx= (vector-length v) (vector-ref rc j))
                 (error who (format "rank ~a sent ~a elements; recv-count expects ~a" j (vector-length v) (vector-ref rc j))))
               (do ([i 0 (fx+ i 1)]) ((fx= i (vector-length v)))
                 (vector-set! in (fx+ at i) (vector-ref v i))))))]
        [else (assertion-violation who "expected out and in both typed vectors of one kind, or both vectors" out in)])))

  ;; counts or displacements: a fresh vector of cnt non-negative fixnums.
  (define (index-vector who v cnt)
    (let ([r (cond [(fxvector? v) (let ([r (make-vector (fxvector-length v))])
                                    (do ([i 0 (fx+ i 1)]) ((fx= i (vector-length r)) r) (vector-set! r i (fxvector-ref v i))))]
                   [(vector? v) (vector-copy v)]
                   [else #f])])
      (unless (and r (fx= (vector-length r) cnt)
                   (let loop ([i 0])
                     (or (fx= i cnt) (let ([x (vector-ref r i)]) (and (fixnum? x) (<= 0 x max-int) (loop (fx+ i 1)))))))
        (assertion-violation who (format "expected an fxvector of ~a non-negative counts or displacements, one per rank" cnt) v))
      r))

  (define (check-ranges who v counts displs what)
    (let ([n (cond [(vector? v) (vector-length v)] [(element-kind v) (element-count v)] [else -1])])
      (do ([i 0 (fx+ i 1)]) ((fx= i (vector-length counts)))
        (unless (<= (+ (vector-ref displs i) (vector-ref counts i)) n)
          (assertion-violation who (format "the ~a block for rank ~a is outside the vector" what i) v)))))

  (define (int-array v)
    (let ([p (malloc (fxmax 4 (fx* 4 (vector-length v))))])
      (do ([i 0 (fx+ i 1)]) ((fx= i (vector-length v)) p) (foreign-set! 'int p (fx* 4 i) (vector-ref v i)))))

  ;; ------------------------------------------------------------ typed helpers
  (define (check-typed who v)
    (or (element-kind v)
        (assertion-violation who "expected a bytevector, fxvector or shared vector" v)))

  ;; v: a typed vector of kind with n elements (any n when n is #f).
  (define (check-typed-like who v kind n)
    (unless (and (eq? (element-kind v) kind) (or (not n) (fx= (element-count v) n)))
      (assertion-violation who
        (format "expected a destination of the source's kind~a" (if n (format " with ~a elements" n) ""))
        v)))

  ;; MPI counts are C ints.
  (define (check-block who k)
    (unless (<= k max-int)
      (error who (format "a block of ~a elements is too large (at most ~a)" k max-int))))

  ;; Where MPI writes into v: its own memory if shared, else a temporary.
  (define (destination v)
    (if (shared-vector? v)
        (values (shared-vector-address v) #f)
        (values (malloc (fxmax 8 (fx* (element-size (element-kind v)) (element-count v)))) #t)))

  (define (finish-destination! who kind v dst own? n)
    (when own?
      (foreign->elements! who kind dst 0 v 0 n)
      (free dst)))

  ;; ------------------------------------------------------------ communicators
  ;; A new communicator of the ranks that give the same color, ordered by
  ;; key (ties by rank in comm): Racket's keys are the new ranks.  color #f
  ;; (MPI_UNDEFINED) joins none and returns #f.  Every rank first passes a
  ;; barrier, so the blocking MPI_Comm_split (and MPI_Comm_dup of the new
  ;; communicator's twin) that follows returns soon.  Those blocking calls
  ;; run on a helper OS thread (call-blocking) without engine-lock, counted
  ;; as calls made without it (rmpi-finish waits for them): under the lock,
  ;; or on the caller's worker, two threads of each rank splitting two
  ;; communicators at once could each block the other's split, in opposite
  ;; orders at two ranks, for ever.
  (define (rmpi-comm-split comm color key)
    (check-comm 'rmpi-comm-split comm)
    (unless (or (not color) (and (fixnum? color) (<= 0 color max-int)))
      (assertion-violation 'rmpi-comm-split "expected a non-negative color or #f" color))
    (unless (and (fixnum? key) (<= (- (+ max-int 1)) key max-int))
      (assertion-violation 'rmpi-comm-split "expected a fixnum key" key))
    (whole comm (lambda () (split comm color key))))

  (define (split comm color key)
    (barrier comm)
    (let ([r (call-blocking
               (lambda ()
                 (counted-mpi-call 'finalized
                   (let-values ([(rc h) (mpi-comm-split (rmpi-comm-handle comm) (or color mpi-undefined) key)])
                     (cond
                       [(not (eqv? rc 0)) rc]
                       [(not color) #f]
                       [else (let-values ([(rc c) (handle->comm h)]) (if (eqv? rc 0) c rc))])))))])
      (when (eq? r 'finalized) (error 'rmpi-comm-split "MPI has been finalised"))
      (when (fixnum? r) (check-rc 'rmpi-comm-split r))
      r))

  ;; This rank's share of num items: (values start count), the first
  ;; (mod num cnt) ranks taking one more.
  (define (rmpi-partition comm num)
    (check-comm 'rmpi-partition comm)
    (unless (and (integer? num) (exact? num) (>= num 0))
      (assertion-violation 'rmpi-partition "expected a non-negative exact integer" num))
    (let ([id (rmpi-comm-id comm)] [cnt (rmpi-comm-cnt comm)])
      (let-values ([(q r) (div-and-mod num cnt)])
        (values (+ (* id q) (min id r)) (+ q (if (< id r) 1 0)))))))
