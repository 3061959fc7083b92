#!chezscheme
;;; Over 450 lines: every collective rests on the ranks' agreement and the helper-thread rule here; reductions are reduce's.
;;; The collectives of (spindle mpi), after Racket's rmpi: barrier,
;;; broadcast, allgather, alltoall, alltoallv, and the communicator
;;; operations comm-split and partition; reduce and allreduce are
;;; reduce's.
;;;
;;; Each is an agreement (see `agree`: the ranks' kinds, sizes and roots,
;;; so that a disagreement raises at every rank before MPI could cut a
;;; message or write past a buffer), then one non-blocking MPI collective
;;; (or two: the sizes, then the bytes), completed by the engine's progress
;;; thread, so a waiting green thread parks.  Three kinds of data:
;;;  - shared vectors: MPI reads and writes their memory in place;
;;;  - typed data (fixnums, flonums, bytevectors, fxvectors): copied once into foreign memory as MPI_BYTE, MPI_INT64_T
;;;    or MPI_DOUBLE, no serialisation;
;;;  - any other place message: packed (private/mpi/data), its size exchanged
;;;    first (in the agreement, or MPI_Ialltoall), then the bytes
;;;    (MPI_Ibcast, MPI_Iallgatherv, MPI_Ialltoallv).
;;; The reductions are reduce's, on this library's helper threads
;;; (whole) and broadcast.
(library (spindle private mpi collectives)
  (export rmpi-barrier rmpi-broadcast
          rmpi-allgather rmpi-alltoall rmpi-alltoallv rmpi-comm-split rmpi-partition
          set-collective-spawner! whole agree check-same word broadcast flonum->bits bits->flonum)
  (import (chezscheme)
          (spindle private os mpi)
          (only (spindle private os memory) malloc free memcpy-to-bytevector! memcpy-from-bytevector!)
          (spindle private mpi data)
          (spindle private mpi world)
          (only (spindle private mpi progress) run-request!)
          (only (spindle private core evt-core) make-latch latch-fire!)
          (only (spindle private core sync) sync)
          (only (spindle private places shared-vector) shared-vector? shared-vector-address shared-vector-length
                shared-bytes?))

  ;; Every collective runs whole in a helper thread while the caller waits
  ;; for its outcome (but the barrier, one MPI request): each is several
  ;; MPI operations in turn (the agreement below, then the data), and a
  ;; break, kill or cancellation of the caller between two of them would
  ;; leave this rank an operation behind the others, whose next collective
  ;; would then meet the wrong one (a broadcast's bytes landing in another's
  ;; 8-byte size: heap corruption).  Broken or killed, the caller leaves;
  ;; the helper finishes, its outcome dropped, and until it has the
  ;; communicator is busy: every collective on it first waits for that
  ;; (idle!), so that each rank starts them in one order.  The helper is a
  ;; thread of the caller's pool that no custodian of the program's shuts
  ;; down: (spindle mpi) installs the procedure that starts it (spawn
  ;; thunk), as it does the engine's progress thread, and call-blocking
  ;; (the public layer's), which runs a blocking MPI call on a helper OS
  ;; thread (rmpi-comm-split).
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

;; ------------------------------------------------------------ agreement
  ;; Before any MPI call whose counts, types or root come from a rank's
  ;; arguments, the ranks agree: one MPI_Iallgather of agree-words 64-bit
  ;; words per rank (the collective's id, whether this rank's arguments
  ;; are good, then what its later calls depend on), so that every rank
  ;; sees every rank's words and all decide alike: they all go on, or all
  ;; raise, before MPI is given a size or type that another rank does not
  ;; share (it would cut the message, or write it past the buffer).  A bad
  ;; argument at one rank is raised there after the agreement (the others
  ;; raise an &error naming that rank): raised before, it would leave the
  ;; others waiting in the collective for ever.
  (define agree-words 6)
  (define collective-names
    '#(#f rmpi-broadcast rmpi-allgather "rmpi-allgather with out" rmpi-alltoall rmpi-alltoallv
       "rmpi-alltoallv's counts" rmpi-comm-split rmpi-reduce rmpi-allreduce))

  ;; (agree who comm id describe): describe, a thunk, returns this rank's
  ;; words (a list of at most agree-words - 2 exact integers in the int64
  ;; range), and raises for a bad argument.  Returns the table: by rank, a
  ;; vector of those words.
  (define (agree who comm id describe)
    (let* ([cnt (rmpi-comm-cnt comm)] [bad #f]
           [words (guard (c [#t (set! bad c) '()]) (describe))]
           [mine (malloc (fx* 8 agree-words))] [all (malloc (fx* 8 (fx* agree-words cnt)))])
      (do ([i 0 (fx+ i 1)]) ((fx= i agree-words)) (foreign-set! 'integer-64 mine (fx* 8 i) 0))
      (foreign-set! 'integer-64 mine 0 id)
      (foreign-set! 'integer-64 mine 8 (if bad 1 0))
      (let loop ([i 2] [ws words])
        (unless (null? ws) (foreign-set! 'integer-64 mine (fx* 8 i) (car ws)) (loop (fx+ i 1) (cdr ws))))
      (run-request! who (list mine)
        (lambda (req) (mpi-iallgather mine agree-words (mpi-int64) all agree-words (mpi-int64) (rmpi-comm-handle comm) req)))
      (let ([at (lambda (r i) (foreign-ref 'integer-64 all (fx* 8 (fx+ (fx* r agree-words) i))))]
            [t (make-vector cnt)])
        (do ([r 0 (fx+ r 1)]) ((fx= r cnt))
          (let ([v (make-vector (fx- agree-words 2))])
            (do ([i 0 (fx+ i 1)]) ((fx= i (vector-length v))) (vector-set! v i (at r (fx+ i 2))))
            (vector-set! t r v)))
        (let ([bad-rank (find (lambda (r) (not (eqv? 0 (at r 1)))) (iota cnt))]
              [other (find (lambda (r) (not (eqv? id (at r 0)))) (iota cnt))])
          (let ([other-id (and other (at other 0))])
            (free all)
            (cond
              [bad (raise bad)]
              [bad-rank (error who (format "rank ~a raised in it (a bad argument there, or its part failed)" bad-rank))]
              [other (error who (format "rank ~a called ~a at the same time"
                                        other (if (and (fx< 0 other-id (vector-length collective-names)))
                                                  (vector-ref collective-names other-id)
                                                  "another collective")))]
              [else t]))))))

  (define id-broadcast 1)
  (define id-allgather 2)
  (define id-allgather-typed 3)
  (define id-alltoall 4)
  (define id-alltoallv 5)
  (define id-alltoallv-counts 6)
  (define id-split 7)

  ;; Word i of rank r's words in table t.
  (define (word t r i) (vector-ref (vector-ref t r) i))

  ;; Raises at every rank (t is the same at each) unless word i is the
  ;; same at every rank; show: a word as it is named in the message.
  (define (check-same who t i what show)
    (let ([x (word t 0 i)])
      (let loop ([r 1])
        (when (fx< r (vector-length t))
          (if (eqv? x (word t r i))
              (loop (fx+ r 1))
              (error who (format "the ranks disagree on ~a: rank 0 gives ~a, rank ~a ~a" what (show x) r (show (word t r i)))))))))

  ;; Element kinds as words, and their names.
  (define (kind-code kind) (case kind [(bytes) 1] [(int64) 2] [(double) 3] [else 4]))
  (define (kind-name code)
    (case code [(1) "bytes"] [(2) "64-bit integers (fxvector)"] [(3) "doubles (flvector)"] [else "any values (vector)"]))
  (define (show-number x) (number->string x))

  (define (flonum->bits x)
    (let ([b (make-bytevector 8)]) (bytevector-ieee-double-native-set! b 0 x) (bytevector-s64-native-ref b 0)))
  (define (bits->flonum n)
    (let ([b (make-bytevector 8)]) (bytevector-s64-native-set! b 0 n) (bytevector-ieee-double-native-ref b 0)))

  ;; ------------------------------------------------------------ barrier, broadcast
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
       (check-comm 'rmpi-broadcast comm)
       (whole comm (lambda () (broadcast 'rmpi-broadcast comm root (lambda () v) (and (shared-vector? v) v))))]))

  (define (shared-vector-bytes v)
    (if (shared-bytes? v) (shared-vector-length v) (fx* 8 (shared-vector-length v))))

  ;; root's value (get's, called at root only, inside the agreement: what
  ;; it raises is the root's bad argument) at every rank.  shared: #f, or
  ;; this rank's shared vector, into which root's contents are copied
  ;; directly (every rank gives one, of one kind and size).  Any other
  ;; value is packed; the agreement carries its size.
  (define (broadcast who comm root get shared)
    (let* ([me (rmpi-comm-id comm)] [v #f] [packed #f]
           [t (agree who comm id-broadcast
                (lambda ()
                  (check-rank who comm root)
                  (cond
                    [shared (list root 1 (kind-code (element-kind shared)) (shared-vector-bytes shared))]
                    [(fx= root me) (set! v (get)) (set! packed (pack who v)) (list root 0 0 (bytevector-length packed))]
                    [else (list root 0 0 0)])))])
      (check-same who t 0 "the root" show-number)
      (check-same who t 1 "whether the value is a shared vector" (lambda (x) (if (eqv? x 1) "one" "none")))
      (if shared
          (begin
            (check-same who t 2 "the shared vector's kind" kind-name)
            (check-same who t 3 "the shared vector's size in bytes" show-number)
            (bcast-buffer who comm root (shared-vector-address shared) (shared-vector-bytes shared))
            shared)
          (let* ([n (word t root 3)] [buf (if packed (foreign-copy packed) (malloc (fxmax n 1)))])
            (bcast-buffer who comm root buf n)
            (if packed
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
       (whole comm (lambda () (allgather-typed comm v out)))]))

  ;; The agreement carries each rank's (tag, bits, size): tag 0 a fixnum,
  ;; 1 a flonum (its IEEE bits), 2 anything else, packed (size bytes).  If
  ;; every tag is 0 or 1, that is the answer; otherwise the packed values
  ;; follow (MPI_Iallgatherv, 0 bytes from the other ranks).
  (define (allgather-value comm v)
    (let* ([who 'rmpi-allgather] [cnt (rmpi-comm-cnt comm)] [packed #f]
           [t (agree who comm id-allgather
                (lambda ()
                  (cond
                    [(fixnum? v) (list 0 v 0)]
                    [(flonum? v) (list 1 (flonum->bits v) 0)]
                    [else (set! packed (pack who v)) (list 2 0 (bytevector-length packed))])))]
           [scalar (lambda (r) (if (eqv? 0 (word t r 0)) (word t r 1) (bits->flonum (word t r 1))))])
      (if (for-all (lambda (r) (fx< (word t r 0) 2)) (iota cnt))
          (let ([r (make-vector cnt)])
            (do ([i 0 (fx+ i 1)]) ((fx= i cnt) r) (vector-set! r i (scalar i))))
          (let-values ([(counts displs total) (int-layout who (vector-map (lambda (w) (vector-ref w 2)) t) cnt)])
            (let ([send (if packed (foreign-copy packed) (malloc 1))] [recv (malloc (fxmax 1 total))]
                  [n (if packed (bytevector-length packed) 0)])
              (run-request! who (list send)
                (lambda (req) (mpi-iallgatherv send n (mpi-byte) recv counts displs (mpi-byte) (rmpi-comm-handle comm) req)))
              (let ([r (unpack-blocks recv displs counts cnt)])
                (free counts) (free displs) (free recv)
                (do ([i 0 (fx+ i 1)]) ((fx= i cnt) r)
                  (when (fx< (word t i 0) 2) (vector-set! r i (scalar i))))))))))

  (define (allgather-typed comm v out)
    (let* ([who 'rmpi-allgather] [cnt (rmpi-comm-cnt comm)]
           [t (agree who comm id-allgather-typed
                (lambda ()
                  (let ([kind (check-typed who v)] [k (element-count v)])
                    (check-typed-like who out kind (fx* k cnt))
                    (check-block who k)
                    (list (kind-code kind) k))))])
      (check-same who t 0 "the element kind" kind-name)
      (check-same who t 1 "the number of elements" show-number)
      (let ([kind (element-kind v)] [k (element-count v)])
        (let-values ([(src own-src?) (elements->foreign v)] [(dst own-dst?) (destination out)])
          (run-request! who (if own-src? (list src) '())
            (lambda (req)
              (mpi-iallgather src k (kind-datatype kind) dst k (kind-datatype kind) (rmpi-comm-handle comm) req)))
          (finish-destination! who kind out dst own-dst? (element-count out))
          out))))

  ;; From cnt sizes (a vector): (values counts displs total) as C int
  ;; arrays (malloc'ed), the blocks laid end to end.
  (define (int-layout who sizes cnt)
    (let ([counts (malloc (fxmax 4 (fx* 4 cnt)))] [displs (malloc (fxmax 4 (fx* 4 cnt)))])
      (let loop ([i 0] [at 0])
        (if (fx= i cnt)
            (values counts displs at)
            (let ([n (vector-ref sizes i)])
              (when (> (+ at n) max-int)
                (free counts) (free displs)
                (error who (format "the messages total more than ~a bytes" max-int)))
              (foreign-set! 'int counts (fx* 4 i) n)
              (foreign-set! 'int displs (fx* 4 i) at)
              (loop (fx+ i 1) (fx+ at n)))))))

  (define max-int (- (expt 2 31) 1))

  ;; The packed blocks of recv as a vector of values (a block of 0 bytes: #f).
  (define (unpack-blocks recv displs counts cnt)
    (let ([r (make-vector cnt #f)])
      (do ([i 0 (fx+ i 1)]) ((fx= i cnt) r)
        (let ([n (foreign-ref 'int counts (fx* 4 i))])
          (unless (fx= n 0)
            (let ([bv (make-bytevector n)])
              (memcpy-to-bytevector! bv (+ recv (foreign-ref 'int displs (fx* 4 i))) n)
              (vector-set! r i (unpack bv))))))))

  ;; ------------------------------------------------------------ alltoall
  ;; (rmpi-alltoall comm out [in]): out's block i goes to rank i; the
  ;; result's block j came from rank j.  A vector has one element per rank
  ;; (any values, packed); a bytevector, fxvector or shared vector has cnt
  ;; blocks of equal length, sent as MPI_BYTE, MPI_INT64_T or MPI_DOUBLE
  ;; (the ranks agree on the kind and block length first).  in, if given,
  ;; is a typed vector of out's kind and length that receives the result.
  (define rmpi-alltoall
    (case-lambda
      [(comm out) (rmpi-alltoall comm out #f)]
      [(comm out in)
       (check-comm 'rmpi-alltoall comm)
       (whole comm (lambda () (alltoall comm out in)))]))

  (define (alltoall comm out in)
    (let* ([who 'rmpi-alltoall] [cnt (rmpi-comm-cnt comm)] [kind (element-kind out)] [packed #f]
           [t (agree who comm id-alltoall
                (lambda ()
                  (cond
                    [kind
                     (let ([n (element-count out)])
                       (unless (fx= 0 (fxmod n cnt))
                         (assertion-violation who (format "expected a length that is a multiple of ~a, the rank count" cnt) out))
                       (when in (check-typed-like who in kind n))
                       (check-block who (fxquotient n cnt))
                       (list (kind-code kind) (fxquotient n cnt)))]
                    [(vector? out)
                     (unless (fx= (vector-length out) cnt)
                       (assertion-violation who (format "expected a vector of ~a elements, one per rank" cnt) out))
                     (when in (assertion-violation who "a vector of any values takes no destination" in))
                     (set! packed (vector-map (lambda (x) (pack who x)) out))
                     (list (kind-code #f) 1)]
                    [else (assertion-violation who "expected a vector, bytevector, fxvector or shared vector" out)])))])
      (check-same who t 0 "the kind of out" kind-name)
      (check-same who t 1 "the block length" show-number)
      (if kind
          (let* ([n (element-count out)] [k (fxquotient n cnt)] [in (or in (make-elements out n))])
            (let-values ([(src own-src?) (elements->foreign out)] [(dst own-dst?) (destination in)])
              (run-request! who (if own-src? (list src) '())
                (lambda (req)
                  (mpi-ialltoall src k (kind-datatype kind) dst k (kind-datatype kind) (rmpi-comm-handle comm) req)))
              (finish-destination! who kind in dst own-dst? n)
              in))
          (alltoall-message who comm packed))))

  ;; cnt packed values, one for each rank: the sizes exchanged, then the
  ;; bytes.  (Each rank's receive sizes are what the others send it.)
  (define (alltoall-message who comm packed)
    (let* ([cnt (rmpi-comm-cnt comm)] [h (rmpi-comm-handle comm)]
           [sizes (malloc (fx* 8 cnt))] [their-sizes (malloc (fx* 8 cnt))])
      (do ([i 0 (fx+ i 1)]) ((fx= i cnt))
        (foreign-set! 'integer-64 sizes (fx* 8 i) (bytevector-length (vector-ref packed i))))
      (run-request! who '()
        (lambda (req) (mpi-ialltoall sizes 1 (mpi-int64) their-sizes 1 (mpi-int64) h req)))
      (let*-values ([(scounts sdispls stotal) (int-layout who (vector-map bytevector-length packed) cnt)]
                    [(rcounts rdispls rtotal)
                     (int-layout who (let ([v (make-vector cnt)])
                                       (do ([i 0 (fx+ i 1)]) ((fx= i cnt) v) (vector-set! v i (foreign-ref 'integer-64 their-sizes (fx* 8 i)))))
                                 cnt)])
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
  ;; place for shared vectors), or vectors of any values.  After the
  ;; agreement on the kind, each rank sends each other its send count (an
  ;; MPI_Ialltoall) and a second agreement says whether every one matched
  ;; its receiver's recv-count.
  (define (rmpi-alltoallv comm out send-count send-displ in recv-count recv-displ)
    (check-comm 'rmpi-alltoallv comm)
    (whole comm (lambda () (alltoallv comm out send-count send-displ in recv-count recv-displ))))

  (define (alltoallv comm out send-count send-displ in recv-count recv-displ)
    (define who 'rmpi-alltoallv)
    (let* ([cnt (rmpi-comm-cnt comm)] [kind (element-kind out)] [sc #f] [sd #f] [rc #f] [rd #f] [packed #f]
           [t (agree who comm id-alltoallv
                (lambda ()
                  (set! sc (index-vector who send-count cnt)) (set! sd (index-vector who send-displ cnt))
                  (set! rc (index-vector who recv-count cnt)) (set! rd (index-vector who recv-displ cnt))
                  (check-ranges who out sc sd "send")
                  (check-ranges who in rc rd "receive")
                  (cond
                    [kind (check-typed-like who in kind #f) (list (kind-code kind))]
                    [(and (vector? out) (vector? in))
                     (set! packed
                       (vector-map (lambda (n d)
                                     (let ([v (make-vector n)])
                                       (do ([i 0 (fx+ i 1)]) ((fx= i n)) (vector-set! v i (vector-ref out (fx+ d i))))
                                       (pack who v)))
                                   sc sd))
                     (list (kind-code #f))]
                    [else (assertion-violation who "expected out and in both typed vectors of one kind, or both vectors" out in)])))])
      (check-same who t 0 "the kind of out and in" kind-name)
      (check-counts who comm sc rc)
      (if kind
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
              in))
          (let ([got (alltoall-message who comm packed)])
            (do ([j 0 (fx+ j 1)]) ((fx= j cnt) in)
              (let ([v (vector-ref got j)] [at (vector-ref rd j)])
                (do ([i 0 (fx+ i 1)]) ((fx= i (vector-length v)))
                  (vector-set! in (fx+ at i) (vector-ref v i)))))))))

  ;; Raises at every rank unless every rank's send count to each rank is
  ;; that rank's receive count from it.
  (define (check-counts who comm sc rc)
    (let* ([cnt (rmpi-comm-cnt comm)] [mine (malloc (fx* 8 cnt))] [theirs (malloc (fx* 8 cnt))])
      (do ([j 0 (fx+ j 1)]) ((fx= j cnt)) (foreign-set! 'integer-64 mine (fx* 8 j) (vector-ref sc j)))
      (run-request! who (list mine)
        (lambda (req) (mpi-ialltoall mine 1 (mpi-int64) theirs 1 (mpi-int64) (rmpi-comm-handle comm) req)))
      (let ([bad (find (lambda (j) (not (eqv? (foreign-ref 'integer-64 theirs (fx* 8 j)) (vector-ref rc j)))) (iota cnt))])
        (let ([sent (and bad (foreign-ref 'integer-64 theirs (fx* 8 bad)))])
          (free theirs)
          (let ([t (agree who comm id-alltoallv-counts
                     (lambda () (if bad (list bad sent (vector-ref rc bad)) (list -1 0 0))))])
            (do ([r 0 (fx+ r 1)]) ((fx= r cnt))
              (let ([from (word t r 0)])
                (unless (fx= from -1)
                  (error who (format "rank ~a sends rank ~a ~a elements; its recv-count expects ~a"
                                     from r (word t r 1) (word t r 2)))))))))))

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
  ;; (MPI_UNDEFINED) joins none and returns #f.  Every rank first passes
  ;; the agreement (an allgather: no rank finishes it before all have
  ;; started it, and a bad color or key at one rank raises at all), so the
  ;; blocking MPI_Comm_split (and MPI_Comm_dup of the new
  ;; communicator's twin) that follows returns soon.  Those blocking calls
  ;; run on a helper OS thread (call-blocking) without engine-lock, counted
  ;; as calls made without it (rmpi-finish waits for them): under the lock,
  ;; or on the caller's worker, two threads of each rank splitting two
  ;; communicators at once could each block the other's split, in opposite
  ;; orders at two ranks, for ever.
  (define (rmpi-comm-split comm color key)
    (check-comm 'rmpi-comm-split comm)
    (whole comm (lambda () (split comm color key))))

  (define (split comm color key)
    (agree 'rmpi-comm-split comm id-split
      (lambda ()
        (unless (or (not color) (and (fixnum? color) (<= 0 color max-int)))
          (assertion-violation 'rmpi-comm-split "expected a non-negative color or #f" color))
        (unless (and (fixnum? key) (<= (- (+ max-int 1)) key max-int))
          (assertion-violation 'rmpi-comm-split "expected a fixnum key" key))
        '()))
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
