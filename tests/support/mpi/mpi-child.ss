#!chezscheme
;;; One rank of a tests/test-mpi.ss job: `spindle mpirun -np N
;;; tests/support/mpi/mpi-child.ss SCENARIO [ARG]`.  Each scenario prints lines
;;; "rank R: ..." that the test reads; "rank R: ok SCENARIO" means it passed.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (spindle mpi) (rank-places))

(define w (rmpi-world))
(define me (rmpi-id w))
(define n (rmpi-cnt w))
(define args (cdr (command-line)))
(define scenario (car args))

(define (say fmt . xs)
  (printf "rank ~a: ~a\n" me (apply format fmt xs))
  (flush-output-port (current-output-port)))
(define (fail fmt . xs) (apply say (string-append "FAILED " fmt) xs) (exit 2))
(define (expect what want got)
  (unless (equal? want got) (fail "~a: expected ~s, got ~s" what want got)))

;; The main thread counts for 500 ms while a thread waits on `on`: it
;; must get far (the waiting thread leaves its worker free).
(define (count-while-parked on)
  (let ([end (+ (current-inexact-milliseconds) 500)])
    (let loop ([k 0])
      (if (< (current-inexact-milliseconds) end)
          (loop (+ k 1))
          (begin (say "counted ~a while a thread was parked on ~a" k on)
                 (unless (> k 1000) (fail "counted only ~a" k)))))))

;; Message i of a stream of numbered messages: n bytes, i in the first
;; 8, then byte j is (message-byte i j).
(define (message-byte i j) (mod (+ (* i 31) j) 256))
(define (numbered-message i n)
  (let ([b (make-bytevector n)])
    (do ([j 8 (+ j 1)]) ((= j n)) (bytevector-u8-set! b j (message-byte i j)))
    (bytevector-s64-native-set! b 0 i)
    b))

;; Rank r's data for the reductions: a vector of 1000 flonums.
(define (data r) (let ([v (make-vector 1000)]) (do ([i 0 (+ i 1)]) ((= i 1000) v) (vector-set! v i (+ (* r 0.5) (* i 0.25) (/ 1.0 (+ r i 1)))))))

(define (sequential-sum)
  (let ([acc (make-vector 1000 0.0)])
    (do ([r 0 (+ r 1)]) ((= r n) acc)
      (let ([d (data r)]) (do ([i 0 (+ i 1)]) ((= i 1000)) (vector-set! acc i (fl+ (vector-ref acc i) (vector-ref d i))))))))

(define (close-vectors? a b)
  (let loop ([i 0]) (or (= i (vector-length a)) (and (< (abs (- (vector-ref a i) (vector-ref b i))) 1e-9) (loop (+ i 1))))))

(define (contains? s part)
  (let ([n (string-length s)] [k (string-length part)])
    (let loop ([i 0]) (and (<= (+ i k) n) (or (string=? (substring s i (+ i k)) part) (loop (+ i 1)))))))
(define (raises? thunk) (guard (c [#t (and (who-condition? c) (condition-who c))]) (thunk) #f))

(define (collectives count)
   (expect "rank count" count n)
   (rmpi-barrier w)
   (expect "broadcast" '(from 0 #(1 "two" 3.0)) (rmpi-broadcast w 0 (and (= me 0) '(from 0 #(1 "two" 3.0)))))
   (expect "broadcast from the last rank" (bytevector 7 (- n 1)) (rmpi-broadcast w (- n 1) (bytevector 7 me)))
   (let ([got (rmpi-allreduce w + (data me))])
     (unless (close-vectors? got (sequential-sum)) (fail "allreduce sum of flonum vectors differs from the sequential sum")))
   (expect "allreduce max" (- n 1) (rmpi-allreduce w max me))
   (expect "allreduce sum of fxvectors" (fxvector (* n 1) (/ (* n (- n 1)) 2)) (rmpi-allreduce w + (fxvector 1 me)))
   (expect "allreduce min flonum" 0.0 (rmpi-allreduce w 'min (exact->inexact me)))
   (expect "allreduce of any values" (apply string-append (map number->string (iota n)))
     (rmpi-allreduce w string-append (number->string me)))
   (expect "reduce to the last rank" (if (= me (- n 1)) (/ (* n (- n 1)) 2) (void)) (rmpi-reduce w (- n 1) + me))
   ;; shared vectors: in place, no copy
   (let ([v (make-shared-flvector 1000 0.)] [d (data me)] [want (sequential-sum)])
     (do ([i 0 (+ i 1)]) ((= i 1000)) (shared-flvector-set! v i (vector-ref d i)))
     (expect "allreduce of a shared flvector returns it" #t (eq? v (rmpi-allreduce w + v)))
     (let loop ([i 0])
       (when (< i 1000)
         (unless (< (abs (- (shared-flvector-ref v i) (vector-ref want i))) 1e-9) (fail "shared flvector allreduce differs at ~a" i))
         (loop (+ i 1)))))
   (let ([v (make-shared-fxvector 3 me)])
     (rmpi-reduce w 0 max v)
     (when (= me 0) (expect "reduce max of a shared fxvector" (- n 1) (shared-fxvector-ref v 2))))
   (let ([v (make-shared-bytes 5 (if (= me 0) 9 0))])
     (rmpi-broadcast w 0 v)
     (expect "broadcast into shared bytes" 9 (shared-bytes-ref v 4)))
;; allgather, alltoall, alltoallv, comm-split, partition: each
   ;; against the same computation done sequentially from every rank's data
   (expect "allgather of fixnums" (list->vector (iota n)) (rmpi-allgather w me))
   (expect "allgather of flonums" (vector-map (lambda (r) (* r 1.5)) (list->vector (iota n))) (rmpi-allgather w (* me 1.5)))
   (expect "allgather of any values" (vector-map (lambda (r) (list 'r r (make-string r #\x))) (list->vector (iota n)))
     (rmpi-allgather w (list 'r me (make-string me #\x))))
   (expect "allgather of fxvectors into an fxvector" (apply fxvector (apply append (map (lambda (r) (list r (* r r) -7)) (iota n))))
     (rmpi-allgather w (fxvector me (* me me) -7) (make-fxvector (* 3 n) 0)))
   (let ([out (make-shared-flvector (* 2 n) 0.)])
     (rmpi-allgather w (shared-flvector (* (fixnum->flonum me) .5) 3.25) out)
     (do ([r 0 (+ r 1)]) ((= r n))
       (expect "allgather into a shared flvector" (list (* (fixnum->flonum r) .5) 3.25)
         (list (shared-flvector-ref out (* 2 r)) (shared-flvector-ref out (+ 1 (* 2 r)))))))
   (expect "alltoall of any values" (vector-map (lambda (j) (list j '-> me)) (list->vector (iota n)))
     (rmpi-alltoall w (vector-map (lambda (i) (list me '-> i)) (list->vector (iota n)))))
   (expect "alltoall of flonums" (vector-map (lambda (j) (+ j (/ me 10.))) (list->vector (iota n)))
     (rmpi-alltoall w (vector-map (lambda (i) (+ me (/ i 10.))) (list->vector (iota n)))))
   (let ([block (lambda (from to) (map (lambda (t) (+ (* from 1000) (* to 10) t)) '(0 1 2)))])
     (expect "alltoall of fxvector blocks" (apply fxvector (apply append (map (lambda (j) (block j me)) (iota n))))
       (rmpi-alltoall w (apply fxvector (apply append (map (lambda (i) (block me i)) (iota n))))))
     (let ([in (make-shared-fxvector (* 3 n) 0)])
       (rmpi-alltoall w (apply shared-fxvector (apply append (map (lambda (i) (block me i)) (iota n)))) in)
       (expect "alltoall of shared fxvector blocks, in place" (apply append (map (lambda (j) (block j me)) (iota n)))
         (map (lambda (i) (shared-fxvector-ref in i)) (iota (* 3 n))))))
   (expect "alltoall of bytevector blocks" (apply bytevector (apply append (map (lambda (j) (list j me)) (iota n))))
     (rmpi-alltoall w (apply bytevector (apply append (map (lambda (i) (list me i)) (iota n))))))
   ;; alltoallv: rank a sends (a + b) mod 3 elements a*100 + b*10 + t to rank b
   (let* ([count (lambda (a b) (mod (+ a b) 3))]
          [elts (lambda (a b) (map (lambda (t) (+ (* a 100) (* b 10) t)) (iota (count a b))))]
          [displs (lambda (counts) (let loop ([c counts] [at 0] [acc '()]) (if (null? c) (reverse acc) (loop (cdr c) (+ at (car c)) (cons at acc)))))]
          [sc (map (lambda (b) (count me b)) (iota n))] [rc (map (lambda (a) (count a me)) (iota n))]
          [want (apply append (map (lambda (a) (elts a me)) (iota n)))]
          [out (apply append (map (lambda (b) (elts me b)) (iota n)))])
     (expect "alltoallv of fxvectors" (apply fxvector want)
       (rmpi-alltoallv w (apply fxvector out) (apply fxvector sc) (apply fxvector (displs sc))
                       (make-fxvector (length want) -1) (apply fxvector rc) (apply fxvector (displs rc))))
     (expect "alltoallv of any values" (list->vector (map (lambda (x) (list x)) want))
       (rmpi-alltoallv w (list->vector (map list out)) (list->vector sc) (list->vector (displs sc))
                       (make-vector (length want) #f) (list->vector rc) (list->vector (displs rc))))
     (let ([in (make-shared-flvector (max 1 (length want)) -1.)])
       (rmpi-alltoallv w (apply shared-flvector (map exact->inexact (if (null? out) '(0) out))) (apply fxvector sc) (apply fxvector (displs sc))
                       in (apply fxvector rc) (apply fxvector (displs rc)))
       (expect "alltoallv of shared flvectors, in place" (map exact->inexact want)
         (map (lambda (i) (shared-flvector-ref in i)) (iota (length want))))))
   ;; comm-split: by parity, keys reversing the order; the last rank of 3 or more joins none
   (let* ([out? (and (>= n 3) (= me (- n 1)))]
          [sub (rmpi-comm-split w (if out? #f (mod me 2)) (- n me))]
          [members (filter (lambda (r) (and (= (mod r 2) (mod me 2)) (not (and (>= n 3) (= r (- n 1)))))) (iota n))])
     (if out?
         (expect "comm-split with color #f" #f sub)
         (begin
           (expect "comm-split: count" (length members) (rmpi-cnt sub))
           (expect "comm-split: id by key" (length (filter (lambda (r) (> r me)) members)) (rmpi-id sub))
           (expect "comm-split: allreduce in the new communicator" (apply + members) (rmpi-allreduce sub + me))
           (expect "comm-split: allgather in key order" (list->vector (reverse members)) (rmpi-allgather sub me)))))
   (let ([shares (rmpi-allgather w (call-with-values (lambda () (rmpi-partition w 10)) cons))])
     (expect "partition covers 0..9 in order"
       (iota 10) (apply append (map (lambda (p) (map (lambda (i) (+ i (car p))) (iota (cdr p)))) (vector->list shares))))
     (expect "partition is balanced" #t (<= (- (apply max (map cdr (vector->list shares))) (apply min (map cdr (vector->list shares)))) 1)))
   ;; a ring of point-to-point messages
   (when (> n 1)
     (rmpi-send w (modulo (+ me 1) n) (list 'ring me))
     (expect "ring message" (list 'ring (modulo (- me 1) n)) (rmpi-recv w (modulo (- me 1) n))))
   (rmpi-barrier w)
   (say "ok collectives"))

(case scenario
  [("collectives") (collectives (string->number (cadr args)))]
  [("stream")
   ;; COUNT messages 0 -> 1, in order and exactly once; tags keep streams apart
   (let ([count (string->number (cadr args))])
     (case me
       [(0) (do ([i 0 (+ i 1)]) ((= i count)) (rmpi-send w 1 i) (when (= 0 (mod i 100)) (rmpi-send w 1 (- i) 5)))
            (rmpi-send w 1 'end)]
       [(1) (do ([i 0 (+ i 1)]) ((= i count)) (expect "message in order" i (rmpi-recv w 0)))
            (do ([i 0 (+ i 100)]) ((>= i count)) (expect "tag 5 message in order" (- i) (rmpi-recv w 0 5)))
            (expect "the end marker, once" 'end (rmpi-recv w 0))
            (expect "no message left" #f (sync/timeout 0.3 (rmpi-recv-evt w 0)))])
     (rmpi-barrier w)
     (say "ok stream"))]
  [("receivers")
   ;; `receivers COUNT`: rank 0 rmpi-sends COUNT bytevectors of distinct
   ;; sizes, most over 64 KiB (a header, then the bytes), immutable and
   ;; mutable, then 4 end marks; on rank 1, four parallel threads (own OS
   ;; threads: their receives race in MPI) receive the one stream at once,
   ;; one of them from any source and one through the evt: every message
   ;; arrives exactly once and intact
   (let* ([count (string->number (cadr args))]
          [size (lambda (i) (if (= 3 (mod i 4)) (+ 8 (mod i 400)) (+ 65537 (mod (* i 97) 40000))))]
          [byte message-byte])
     (case me
       [(0) (do ([i 0 (+ i 1)]) ((= i count))
              (let ([b (numbered-message i (size i))])
                (rmpi-send w 1 (if (even? i) (bytevector->immutable-bytevector b) b))))
            (do ([k 0 (+ k 1)]) ((= k 4)) (rmpi-send w 1 'end))]
       [(1) (let* ([seen (make-vector count 0)] [bad '()] [lock (make-semaphore 1)]
                   [note! (lambda (f) (call-with-semaphore lock f))]
                   [receive (lambda (k)
                              (case k
                                [(0) (rmpi-recv w 0)]
                                [(1) (rmpi-recv w #f)]
                                [(2) (sync (rmpi-recv-evt w 0))]
                                [else (rmpi-recv w 0)]))]
                   [check (lambda (v)
                            (let ([i (and (bytevector? v) (>= (bytevector-length v) 8) (bytevector-s64-native-ref v 0))])
                              (if (and i (< -1 i count) (= (bytevector-length v) (size i))
                                       (let loop ([j 8]) (or (= j (bytevector-length v)) (and (= (bytevector-u8-ref v j) (byte i j)) (loop (+ j 1))))))
                                  (note! (lambda () (vector-set! seen i (+ 1 (vector-ref seen i)))))
                                  (note! (lambda () (set! bad (cons (if (bytevector? v) (bytevector-length v) v) bad)))))))]
                   [ts (map (lambda (k)
                              (thread (lambda ()
                                        (let loop ()
                                          (let ([v (guard (c [#t (note! (lambda () (set! bad (cons (condition-message c) bad)))) 'end])
                                                     (receive k))])
                                            (unless (eq? v 'end) (check v) (loop)))))
                                      #:pool 'own))
                            '(0 1 2 3))])
              (for-each thread-wait ts)
              (expect "no message lost or bad" '() bad)
              (expect "every message exactly once" count (length (filter (lambda (x) (= x 1)) (vector->list seen)))))])
     (rmpi-barrier w)
     (say "ok receivers"))]
  [("large-values")
   ;; values over 64 KiB encoded (a vector, a string, a list), bytevectors
   ;; mutable and immutable, and small values between them, in order on
   ;; one tag; over the any-source receive and the evt too
   (let ([vals (list (make-vector 100000 7) 'small (make-string 200000 #\x) (iota 50000)
                     (make-bytevector 70000 3) (bytevector->immutable-bytevector (make-bytevector 1000000 9))
                     (make-vector 8000 1.5) 42)])
     (case me
       [(0) (do ([k 0 (+ k 1)]) ((= k 3)) (for-each (lambda (v) (rmpi-send w 1 v 3)) vals))]
       [(1) (for-each (lambda (recv)
                        (for-each (lambda (v) (expect "the value sent" v (recv))) vals))
                      (list (lambda () (rmpi-recv w 0 3)) (lambda () (rmpi-recv w #f 3)) (lambda () (sync (rmpi-recv-evt w 0 3)))))])
     (rmpi-barrier w)
     (say "ok large-values"))]
  [("bytes-stream")
   ;; COUNT in-place messages 0 -> 1 (each 8 bytes: its index), in order
   ;; and exactly once into one buffer, beside a stream of rmpi-send on the
   ;; same tag (the two never mix), and a second tag's in-place stream
   (let ([count (string->number (cadr args))] [buf (make-bytevector 8 0)])
     (case me
       [(0) (let ([out (make-bytevector 8 0)])
              (do ([i 0 (+ i 1)]) ((= i count))
                (bytevector-s64-native-set! out 0 i)
                (rmpi-send-bytes w 1 out)
                (when (= 0 (mod i 1000)) (rmpi-send w 1 (list 'generic i)) (rmpi-send-bytes w 1 out 5 0 4)))
              (rmpi-send-bytes w 1 (bytevector 1 2 3) 0 1 2))]
       [(1) (do ([i 0 (+ i 1)]) ((= i count))
              (let ([n (rmpi-recv-bytes! w 0 buf)])
                (unless (and (= n 8) (= i (bytevector-s64-native-ref buf 0)))
                  (fail "in-place message ~a: got ~a bytes, ~a" i n (bytevector-s64-native-ref buf 0)))))
            (do ([i 0 (+ i 1000)]) ((>= i count))
              (expect "rmpi-send's stream beside it" (list 'generic i) (rmpi-recv w 0))
              (expect "tag 5: 4 bytes" 4 (rmpi-recv-bytes! w 0 buf 5))
              (expect "tag 5 in order" (bitwise-and i #xffffffff) (bytevector-u32-native-ref buf 0)))
            (let ([end (make-bytevector 4 9)])
              (expect "a range: 1 byte into the middle of the buffer" 1 (rmpi-recv-bytes! w 0 end 0 2))
              (expect "the range's byte" (bytevector 9 9 2 9) end))
            (expect "no message left" #f (sync/timeout 0.3 (rmpi-recv-bytes!-evt w 0 buf)))])
     (rmpi-barrier w)
     (say "ok bytes-stream"))]
  [("bytes-misc")
   ;; buffer too small; a receive into a shared vector; a green thread
   ;; parked on an in-place receive while another counts; sync choosing
   ;; between an in-place receive and an alarm; 1 MiB each way from and
   ;; into shared vectors
   (case me
     [(0) (rmpi-send-bytes w 1 (make-bytevector 100000 3) 4)
          (rmpi-send-bytes w 1 (bytevector 5 6) 4)
          (rmpi-send-bytes w 1 (make-bytevector 100 3))
          (rmpi-send-bytes w 1 (bytevector 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16))
          (expect "go" 'go (rmpi-recv w 1))
          (rmpi-send-bytes w 1 (bytevector 42))
          (expect "ready" 'ready (rmpi-recv w 1))
          (rmpi-send-bytes w 1 (bytevector 7 7))
          (let ([v (make-shared-fxvector 131072 0)])
            (do ([i 0 (+ i 1)]) ((= i 131072)) (shared-fxvector-set! v i (* i 3)))
            (rmpi-send-bytes w 1 v 3))
          (let ([back (make-shared-bytes (expt 2 20) 0)])
            (expect "1 MiB back into shared bytes" (expt 2 20) (rmpi-recv-bytes! w 1 back 3))
            (expect "its last byte" 251 (shared-bytes-ref back (- (expt 2 20) 1))))
          (expect "killed" 'killed (rmpi-recv w 1))
          (rmpi-send-bytes w 1 (bytevector 9 9 9) 6)]
     [(1) ;; a large message into a smaller range: an error, and nothing
          ;; written past the range (Open MPI itself would write there)
          (let* ([buf (make-bytevector 2000 0)]
                 [msg (guard (c [(and (error? c) (who-condition? c) (message-condition? c))
                                 (list (condition-who c) (condition-message c))])
                        (rmpi-recv-bytes! w 0 buf 4 0 1000) #f)])
            (expect "a large message too large raises, naming rmpi-recv-bytes!" 'rmpi-recv-bytes! (and msg (car msg)))
            (unless (and msg (contains? (cadr msg) "100000 bytes") (contains? (cadr msg) "1000 bytes"))
              (fail "the message says ~s" msg))
            (expect "nothing written past the range" #t (for-all zero? (bytevector->u8-list (let ([b (make-bytevector 1000)]) (bytevector-copy! buf 1000 b 0 1000) b))))
            (expect "the stream goes on" 2 (rmpi-recv-bytes! w 0 buf 4))
            (expect "its bytes" '(5 6) (list (bytevector-u8-ref buf 0) (bytevector-u8-ref buf 1))))
          (let ([small (make-bytevector 10 0)])
            (let ([msg (guard (c [(and (error? c) (who-condition? c) (message-condition? c))
                                  (list (condition-who c) (condition-message c))])
                         (rmpi-recv-bytes! w 0 small) #f)])
              (expect "a buffer too small raises, naming rmpi-recv-bytes!" 'rmpi-recv-bytes! (and msg (car msg)))
              (unless (and msg (contains? (cadr msg) "100 bytes") (contains? (cadr msg) "10 bytes"))
                (fail "the message says ~s" msg))))
          (let ([sv (make-shared-bytes 32 0)])
            (expect "into a shared vector, at 8" 16 (rmpi-recv-bytes! w 0 sv 0 8))
            (expect "its bytes" '(0 1 2 16 0) (map (lambda (i) (shared-bytes-ref sv i)) '(7 8 9 23 24))))
          (let* ([buf (make-bytevector 4 0)] [got #f]
                 [t (thread (lambda () (set! got (rmpi-recv-bytes! w 0 buf))))])
            (count-while-parked "an in-place receive")
            (unless (eq? (thread-state t) 'parked) (fail "the in-place receiver is ~a, not parked" (thread-state t)))
            (rmpi-send w 0 'go)
            (unless (sync/timeout 10 t) (fail "the in-place receiver never woke"))
            (expect "the parked receiver's count and byte" '(1 42) (list got (bytevector-u8-ref buf 0))))
          (let* ([buf (make-bytevector 4 0)]
                 [choose (lambda (ms)
                           (sync (choice-evt (wrap-evt (rmpi-recv-bytes!-evt w 0 buf) (lambda (n) (list 'mpi n)))
                                             (wrap-evt (alarm-evt (+ (current-inexact-milliseconds) ms)) (lambda (_) 'alarm)))))])
            (expect "the alarm wins" 'alarm (choose 200))
            (rmpi-send w 0 'ready)
            (expect "the in-place receive wins" '(mpi 2) (choose 10000))
            (expect "its bytes" (bytevector 7 7 0 0) buf)
            (expect "then the alarm again, nothing duplicated" 'alarm (choose 200)))
          (let ([in (make-shared-fxvector 131072 -1)])
            (expect "1 MiB into a shared fxvector" (expt 2 20) (rmpi-recv-bytes! w 0 in 3))
            (expect "its elements" '(0 3 393213) (map (lambda (i) (shared-fxvector-ref in i)) '(0 1 131071))))
          (let ([out (make-shared-bytes (expt 2 20) 251)]) (rmpi-send-bytes w 0 out 3))
          ;; a thread killed while parked on an in-place receive: its
          ;; receive is cancelled (its buffer is never written), and the
          ;; message goes to the next receive
          (let* ([b (make-bytevector 8 0)] [t (thread (lambda () (rmpi-recv-bytes! w 0 b 6)))])
            (sleep 0.2)
            (unless (eq? (thread-state t) 'parked) (fail "the receiver to kill is ~a, not parked" (thread-state t)))
            (kill-thread t)
            (rmpi-send w 0 'killed)
            (let ([b2 (make-bytevector 8 0)])
              (expect "the next receive gets the message" 3 (rmpi-recv-bytes! w 0 b2 6))
              (expect "its bytes" '(9 9 9) (list (bytevector-u8-ref b2 0) (bytevector-u8-ref b2 1) (bytevector-u8-ref b2 2))))
            (sleep 0.1)
            (expect "the killed receive's buffer is untouched" (make-bytevector 8 0) b))])
   (rmpi-barrier w)
   (say "ok bytes-misc")]
  [("bytes-receivers")
   ;; `bytes-receivers COUNT THREADS`: rank 0 sends COUNT in-place
   ;; messages of distinct sizes (most of them large: a header, then the
   ;; bytes), then THREADS end marks; on rank 1, THREADS green threads
   ;; receive the one stream at once, each into its own buffer (from rank
   ;; 0 or from any source; one through the evt): every message arrives
   ;; exactly once, intact, its size the one its content names
   (let* ([count (string->number (cadr args))] [threads (string->number (caddr args))]
          [size (lambda (i) (if (= 3 (mod i 4)) (+ 8 (mod i 400)) (+ 512 (mod (* i 97) 20000))))]
          [byte message-byte])
     (case me
       [(0) (do ([i 0 (+ i 1)]) ((= i count))
              (let ([b (numbered-message i (size i))])
                (rmpi-send-bytes w 1 b 2)
                ;; bursts: the receivers park between them, so that the
                ;; headers of a burst complete several parked receives at once
                (when (= 0 (mod i 5)) (sleep 0.001))))
            (do ([k 0 (+ k 1)]) ((= k threads))
              (let ([b (make-bytevector 8)]) (bytevector-s64-native-set! b 0 -1) (rmpi-send-bytes w 1 b 2)))]
       [(1) (let* ([seen (make-vector count 0)] [problems '()]
                   [problem! (lambda (fmt . xs) (set! problems (cons (apply format fmt xs) problems)))]
                   [receiver
                    (lambda (k)
                      (let ([buf (make-bytevector 21000 0)] [src (if (even? k) 0 #f)])
                        (lambda ()
                          (guard (c [#t (problem! "receiver ~a raised: ~a" k
                                          (if (message-condition? c) (condition-message c) c))])
                            (let loop ()
                              (let* ([got (if (= k 1)
                                              (sync (rmpi-recv-bytes!-evt w src buf 2))
                                              (rmpi-recv-bytes! w src buf 2))]
                                     [i (bytevector-s64-native-ref buf 0)])
                                (cond
                                  [(= i -1) (unless (= got 8) (problem! "an end mark of ~a bytes" got))]
                                  [(not (and (<= 0 i) (< i count))) (problem! "receiver ~a: message index ~a (~a bytes)" k i got) (loop)]
                                  [else
                                   (unless (= got (size i)) (problem! "message ~a: ~a bytes, its size is ~a" i got (size i)))
                                   (let check ([j 8])
                                     (when (< j (min got (size i)))
                                       (if (= (bytevector-u8-ref buf j) (byte i j))
                                           (check (+ j 1))
                                           (problem! "message ~a: byte ~a is ~a, not ~a" i j (bytevector-u8-ref buf j) (byte i j)))))
                                   (vector-set! seen i (+ 1 (vector-ref seen i)))
                                   (loop)])))))))]
                   [ts (map (lambda (k) (thread (receiver k))) (iota threads))])
              (for-each (lambda (t) (unless (sync/timeout 60 t) (problem! "a receiver did not finish in 60 s"))) ts)
              (do ([i 0 (+ i 1)]) ((= i count))
                (unless (= 1 (vector-ref seen i)) (problem! "message ~a received ~a times" i (vector-ref seen i))))
              (unless (null? problems)
                (fail "~a problems, the first: ~a" (length problems) (reverse (list-head (reverse problems) (min 5 (length problems))))))
              (expect "no message left" #f (sync/timeout 0.3 (rmpi-recv-bytes!-evt w #f (make-bytevector 21000) 2))))])
     ;; then rounds of three receives posted in a known order, and three
     ;; large messages of 3000, 1000 and 3500 bytes.  Receiver A posts its
     ;; receive and is suspended during its spin, its receive still posted;
     ;; B and C post theirs and park.  MPI matches the headers in posting
     ;; order, A's first, but B and C run first: they must take their own
     ;; messages' bytes, not A's.  (Had A parked before it was suspended,
     ;; a rare stall of 30 us, its receive was withdrawn and posted again
     ;; after C's: then B, C and A get the three messages in that order,
     ;; which is also what a receiver taking another's bytes gives: so at
     ;; most a tenth of the rounds may end so.)
     (let ([rounds 100] [sizes '(3000 1000 3500)])
       (case me
         [(0) (do ([r 0 (+ r 1)]) ((= r rounds))
                (expect "go" r (rmpi-recv w 1))
                (for-each (lambda (k m)
                            (let ([b (make-bytevector m (mod (+ r k) 251))])
                              (bytevector-s64-native-set! b 0 (+ (* 3 r) k))
                              (rmpi-send-bytes w 1 b 3)))
                          '(0 1 2) sizes))]
         [(1) (let ([in-spin 0])
                (do ([r 0 (+ r 1)]) ((= r rounds))
                  (let* ([got (make-vector 3 #f)]
                         [receiver (lambda (k)
                                     (let ([buf (make-bytevector 4000 0)])
                                       (thread (lambda ()
                                                 (vector-set! got k
                                                   (guard (c [(message-condition? c) (condition-message c)])
                                                     (let ([c (rmpi-recv-bytes! w (if (= k 1) #f 0) buf 3)])
                                                       (list c (bytevector-s64-native-ref buf 0) (bytevector-u8-ref buf (- c 1))))))))))]
                         [parked (lambda (t k)
                                   (let wait ([i 0])
                                     (unless (eq? (thread-state t) 'parked)
                                       (when (> i 10000) (fail "round ~a: receiver ~a never parked" r k))
                                       (sleep 0.001)
                                       (wait (+ i 1)))))]
                         [a (receiver 0)])
                    (sleep 0)            ; A posts its receive and spins
                    (thread-suspend a)
                    (let ([b (receiver 1)]) (parked b 1)
                      (let ([c (receiver 2)]) (parked c 2)
                        (rmpi-send w 0 r)
                        (for-each (lambda (t) (unless (sync/timeout 10 t) (fail "round ~a: a receiver did not finish" r))) (list b c))
                        (thread-resume a)
                        (unless (sync/timeout 10 a) (fail "round ~a: the suspended receiver did not finish" r))))
                    (let ([message (lambda (k) (list (list-ref sizes k) (+ (* 3 r) k) (mod (+ r k) 251)))])
                      (cond
                        [(equal? got (vector (message 0) (message 1) (message 2))) (set! in-spin (+ in-spin 1))]
                        [(equal? got (vector (message 2) (message 0) (message 1)))]
                        [else (fail "round ~a: receivers A, B, C got ~s; A's receive was posted first" r got)]))))
                (say "~a of ~a rounds with A suspended during its spin" in-spin rounds)
                (unless (>= (* 10 in-spin) (* 9 rounds))
                  (fail "only ~a of ~a rounds gave A the first message: the others took its bytes" in-spin rounds)))]))
     (rmpi-barrier w)
     (say "ok bytes-receivers"))]
  [("bytes-wrap")
   ;; a stream's data tags repeat every 65536 large messages: receiver A
   ;; posts its receive of message 0 and is suspended during its spin (its
   ;; header matched, its bytes not taken); the main thread receives
   ;; messages 1 to 65535; B the receive of message 65536, whose bytes
   ;; share message 0's tag: B must wait for A, not take A's bytes.
   ;; `bytes-wrap resume`: then A is resumed; `bytes-wrap kill`: killed
   (let ([count 65537] [size (lambda (i) (+ 512 (mod i 1000)))])
     (case me
       [(0) (expect "go" 'go (rmpi-recv w 1))
            (let ([b (make-bytevector 1600 0)])
              (do ([i 0 (+ i 1)]) ((= i count))
                (bytevector-s64-native-set! b 0 i)
                (rmpi-send-bytes w 1 b 4 0 (size i))))]
       [(1) (let* ([got-a #f] [buf-a (make-bytevector 1600 0)]
                   [a (thread (lambda () (set! got-a (rmpi-recv-bytes! w 0 buf-a 4))))])
              (sleep 0)              ; A posts its receive and spins
              (thread-suspend a)
              (rmpi-send w 0 'go)
              (let ([buf (make-bytevector 1600 0)])
                (do ([i 1 (+ i 1)]) ((= i (- count 1)))
                  (let ([c (rmpi-recv-bytes! w 0 buf 4)])
                    (unless (and (= c (size i)) (= i (bytevector-s64-native-ref buf 0)))
                      (fail "message ~a: ~a bytes, index ~a" i c (bytevector-s64-native-ref buf 0))))))
              (let* ([got-b #f] [buf-b (make-bytevector 1600 0)]
                     [b (thread (lambda () (set! got-b (rmpi-recv-bytes! w 0 buf-b 4))))])
                (when (sync/timeout 0.3 b)
                  (fail "the receive of message 65536 took ~a bytes (index ~a) while message 0's were not taken"
                        got-b (bytevector-s64-native-ref buf-b 0)))
                (if (equal? (cadr args) "kill")
                    ;; A killed: its header is given back, B takes it
                    ;; (the older), and the next receive message 65536
                    (begin
                      (kill-thread a)
                      (unless (sync/timeout 10 b) (fail "B did not finish"))
                      (expect "B: message 0" (list (size 0) 0) (list got-b (bytevector-s64-native-ref buf-b 0)))
                      (expect "then message 65536" (size 65536) (rmpi-recv-bytes! w 0 buf-b 4))
                      (expect "its index" 65536 (bytevector-s64-native-ref buf-b 0))
                      (expect "A's buffer: at most the header written, never message bytes" #f got-a))
                    (begin
                      (thread-resume a)
                      (unless (and (sync/timeout 10 a) (sync/timeout 10 b)) (fail "A or B did not finish"))
                      (expect "A: message 0" (list (size 0) 0) (list got-a (bytevector-s64-native-ref buf-a 0)))
                      (expect "B: message 65536" (list (size 65536) 65536) (list got-b (bytevector-s64-native-ref buf-b 0)))))
                (expect "no message left" #f (sync/timeout 0.3 (rmpi-recv-bytes!-evt w 0 (make-bytevector 2000) 4)))))])
     (rmpi-barrier w)
     (say "ok bytes-wrap"))]
  [("bytes-break")
   ;; `bytes-break ROUNDS`: each round, a thread of rank 1 posts an
   ;; in-place receive and spins on it; rank 0 sends one message (small or
   ;; large, alternately) when asked, and rank 1 breaks the thread 0 to
   ;; ~80 us later, during its spin, at its completion or after: the
   ;; message is received exactly once (by the thread, or else by the
   ;; next receive), and a broken receive of a small message leaves its
   ;; buffer unwritten, or holding that message if it completed as the
   ;; break came
   (let* ([rounds (string->number (cadr args))]
          [size (lambda (i) (if (even? i) 16 2000))]
          ;; waits us microseconds; yielding to the receiver meanwhile
          ;; (so that it tests its receive) when yield? is true
          [spin-us (lambda (us yield?)
                     (let ([end (+ (current-inexact-monotonic-milliseconds) (/ us 1000.))])
                       (let loop () (when (< (current-inexact-monotonic-milliseconds) end) (when yield? (sleep 0)) (loop)))))])
     (case me
       [(0) (do ([i 0 (+ i 1)]) ((= i rounds))
              (expect "go" i (rmpi-recv w 1))
              (let ([b (make-bytevector (size i) (mod i 251))])
                (bytevector-s64-native-set! b 0 i)
                (rmpi-send-bytes w 1 b 7)))]
       [(1) (let ([delivered 0] [broken 0])
              (do ([i 0 (+ i 1)]) ((= i rounds))
                (let* ([buf (make-bytevector 4000 0)] [got #f]
                       [t (thread (lambda () (guard (c [(break-condition? c) (set! got 'broken)]) (set! got (rmpi-recv-bytes! w 0 buf 7)))))])
                  (sleep 0)
                  (rmpi-send w 0 i)
                  (spin-us (mod (* i 37) 80) (odd? (quotient i 2)))
                  (break-thread t)
                  (unless (sync/timeout 10 t) (fail "round ~a: the broken receiver never ended" i))
                  (cond
                    [(eq? got 'broken)
                     (set! broken (+ broken 1))
                     ;; a broken receive's buffer holds nothing, or the
                     ;; message itself if MPI completed it as the break came
                     ;; (the message then goes to the next receive all the same)
                     (when (even? i)
                       (unless (or (for-all zero? (bytevector->u8-list buf))
                                   (and (= i (bytevector-s64-native-ref buf 0)) (= (mod i 251) (bytevector-u8-ref buf (- (size i) 1)))
                                        (for-all zero? (list-tail (bytevector->u8-list buf) (size i)))))
                         (fail "round ~a: a broken receive wrote its buffer with something else" i)))
                     (let ([b2 (make-bytevector 4000 0)])
                       (expect (format "round ~a: the next receive gets the message" i) (size i)
                         (sync/timeout 10 (rmpi-recv-bytes!-evt w 0 b2 7)))
                       (expect (format "round ~a: its index" i) i (bytevector-s64-native-ref b2 0))
                       (expect (format "round ~a: its last byte" i) (mod i 251) (bytevector-u8-ref b2 (- (size i) 1))))]
                    [else
                     (set! delivered (+ delivered 1))
                     (expect (format "round ~a: the thread's count" i) (size i) got)
                     (expect (format "round ~a: its index" i) i (bytevector-s64-native-ref buf 0))
                     (expect (format "round ~a: its last byte" i) (mod i 251) (bytevector-u8-ref buf (- (size i) 1)))])))
              (say "~a delivered to the thread, ~a broken first" delivered broken)
              (expect "no message left" #f (sync/timeout 0.3 (rmpi-recv-bytes!-evt w 0 (make-bytevector 4000) 7))))])
     (rmpi-barrier w)
     (say "ok bytes-break"))]
  [("parked")
   ;; rank 1: a thread parked on a receive while the main thread counts;
   ;; rank 0 sends only when asked.  Then: CPU time of a rank idle in a receive.
   (case me
     [(0) (expect "request" 'go (rmpi-recv w 1))
          (rmpi-send w 1 'message)
          (sleep 1.0)
          (rmpi-send w 1 'late)]
     [(1) (let* ([got #f] [t (thread (lambda () (set! got (rmpi-recv w 0))))])
            (count-while-parked "a receive")
            (unless (eq? (thread-state t) 'parked) (fail "the receiver is ~a, not parked" (thread-state t)))
            (rmpi-send w 0 'go)
            (unless (sync/timeout 10 t) (fail "the receiver never woke"))
            (expect "parked receiver's message" 'message got)
            (let ([cpu0 (cpu-time)] [t0 (real-time)])
              (expect "late message" 'late (rmpi-recv w 0))
              (let ([cpu (- (cpu-time) cpu0)] [real (- (real-time) t0)])
                (say "idle receive: ~a ms CPU in ~a ms" cpu real)
                (unless (< cpu (* 0.3 real)) (fail "an idle receive used ~a ms of CPU in ~a ms" cpu real)))))])
   (rmpi-barrier w)
   (say "ok parked")]
  [("choice")
   ;; sync among an MPI receive, a place channel and an alarm
   (let-values ([(a b) (place-channel)])
     (let ()
     (define (choose ms)
       (sync (choice-evt (wrap-evt (rmpi-recv-evt w 0) (lambda (v) (list 'mpi v)))
                         (wrap-evt b (lambda (v) (list 'place v)))
                         (wrap-evt (alarm-evt (+ (current-inexact-milliseconds) ms)) (lambda (_) 'alarm)))))
     (case me
       [(0) (expect "ready" 'ready (rmpi-recv w 1)) (rmpi-send w 1 'hello)]
       [(1) (expect "the alarm wins" 'alarm (choose 200))
            (place-channel-put a 'local)
            (expect "the place channel wins" '(place local) (choose 10000))
            (rmpi-send w 0 'ready)
            (expect "the MPI receive wins" '(mpi hello) (choose 10000))
            (expect "then the alarm again, nothing duplicated" 'alarm (choose 200))])))
   (rmpi-barrier w)
   (say "ok choice")]
  [("raise")
   ;; the last rank raises; the others wait for a message that never comes
   (rmpi-barrier w)
   (if (= me (- n 1))
       (error 'mpi-child "deliberate failure")
       (rmpi-recv w (- n 1)))]
  [("hosts")
   ;; `hosts H N`: N ranks on H hosts (tests/support/mpi/netns.sh): each says its
   ;; host name and whether its network namespace holds that host's
   ;; address; then the collectives
   (let* ([text (lambda (path) (call-with-input-file path get-string-all))]
          [host (let ([h (text "/proc/sys/kernel/hostname")]) (substring h 0 (- (string-length h) 1)))]
          [k (let loop ([i (- (string-length host) 1)]) (if (char=? (string-ref host i) #\-) (substring host (+ i 1) (string-length host)) (loop (- i 1))))]
          [mine? (contains? (text "/proc/self/net/fib_trie") (string-append "10.77.0." k "\n"))]
          [all (rmpi-allgather w (list host mine?))]
          [hosts (let loop ([l (vector->list all)] [seen '()])
                   (cond [(null? l) seen] [(member (caar l) seen) (loop (cdr l) seen)] [else (loop (cdr l) (cons (caar l) seen))]))])
     (say "on ~a" host)
     (expect "host count" (string->number (cadr args)) (length hosts))
     (expect "every rank in its host's network namespace" #t (for-all cadr (vector->list all)))
     ;; messages across hosts, in order
     (let ([last (- n 1)])
       (cond
         [(= me 0) (do ([i 0 (+ i 1)]) ((= i 2000)) (rmpi-send w last i))]
         [(= me last) (do ([i 0 (+ i 1)]) ((= i 2000)) (expect "a message across hosts, in order" i (rmpi-recv w 0)))]))
     (rmpi-barrier w)
     (say "ok hosts"))
   (collectives (string->number (caddr args)))]
  [("exchange")
   ;; both ranks send 1 MiB messages before either receives (a send that
   ;; waited for its receiver would deadlock here); a mutable bytevector
   ;; changed right after rmpi-send returns still arrives as it was sent;
   ;; an immutable one travels without a copy
   (let* ([peer (- 1 me)] [mk (lambda (r k) (let ([b (make-bytevector (expt 2 20) (+ (* 10 r) k))]) b))]
          [mutable (mk me 1)] [fixed (bytevector->immutable-bytevector (mk me 2))])
     (rmpi-send w peer mutable)
     (bytevector-fill! mutable 99)
     (rmpi-send w peer fixed)
     (rmpi-send w peer (mk me 3))
     (expect "the first 1 MiB message, as sent" #t (equal? (rmpi-recv w peer) (mk peer 1)))
     (expect "the immutable one" #t (equal? (rmpi-recv w peer) (mk peer 2)))
     (expect "the third" #t (equal? (rmpi-recv w peer) (mk peer 3)))
     (rmpi-barrier w)
     (say "ok exchange"))]
  [("exit")
   ;; the last rank exits with code 3; the others wait for a message that never comes
   (rmpi-barrier w)
   (if (= me (- n 1))
       (exit 3)
       (rmpi-recv w (- n 1)))]
  [("broken-sender")
   ;; a thread broken while its large send waits for the receiver: MPI
   ;; still reads the message's memory, which must stay intact
   (let ([big (let ([b (make-bytevector 4000000)]) (do ([i 0 (+ i 1)]) ((= i 4000000) b) (bytevector-u8-set! b i (mod i 251))))])
     (case me
       [(0) (let ([t (thread (lambda () (guard (c [#t (void)]) (rmpi-send w 1 big 3))))])
              (sleep 0.2)
              (break-thread t)
              (sync/timeout 5 t)
              (collect (collect-maximum-generation))
              (do ([i 0 (+ i 1)]) ((= i 50)) (make-bytevector 4000000 0))
              (rmpi-send w 1 'after))]
       [(1) (sleep 0.5)
            (expect "the killed sender's message arrives intact" #t (equal? big (rmpi-recv w 0 3)))
            (expect "then the next" 'after (rmpi-recv w 0))]))
   (rmpi-barrier w)
   (say "ok broken-sender")]
  [("idle")
   ;; every rank waits for a message that never comes; the test kills one
   (rmpi-barrier w)
   (say "ready pid ~a" (get-process-id))
   (rmpi-recv w (modulo (+ me 1) n))]
  [("pingpong")
   (let ([count (string->number (cadr args))] [bv (make-bytevector 8 1)])
     (rmpi-barrier w)
     (case me
       [(0) (let ([ts (make-vector count 0.)] [now current-inexact-monotonic-milliseconds])
              (do ([i 0 (+ i 1)]) ((= i count))
                (let ([t0 (now)]) (rmpi-send w 1 bv) (rmpi-recv w 1) (vector-set! ts i (- (now) t0))))
              (let ([sorted (list-sort < (vector->list ts))])
                (say "pingpong 8 B round trip: median ~,1f us, mean ~,1f us, p99 ~,1f us"
                  (* 1000 (list-ref sorted (quotient count 2))) (/ (* 1000 (apply + sorted)) count)
                  (* 1000 (list-ref sorted (quotient (* 99 count) 100))))))]
       [(1) (do ([i 0 (+ i 1)]) ((= i count)) (rmpi-send w 0 (rmpi-recv w 0)))])
     (say "ok pingpong"))]
  [("errors")
   (expect "bad rank" 'rmpi-send (raises? (lambda () (rmpi-send w n 'x))))
   (expect "bad tag" 'rmpi-recv (raises? (lambda () (rmpi-recv w 0 -1))))
   (expect "bad communicator" 'rmpi-id (raises? (lambda () (rmpi-id 'world))))
   (expect "a place channel" 'rmpi-send (raises? (lambda () (let-values ([(a b) (place-channel)]) (rmpi-send w me a)))))
   (expect "a tag that is not a fixnum" 'rmpi-send (raises? (lambda () (rmpi-send w 0 'x 'tag))))
   (expect "a rank of another communicator's size" 'rmpi-recv-evt (raises? (lambda () (rmpi-recv-evt w -1))))
   ;; 2 GiB, never touched (make-bytevector without a fill does not write it)
   (let ([huge (guard (c [#t #f]) (make-bytevector (expt 2 31)))])
     (when huge
       (expect "a message too large" 'rmpi-send (raises? (lambda () (rmpi-send w 0 huge))))
       (let ([msg (guard (c [(message-condition? c) (condition-message c)]) (rmpi-send w 0 huge) "")])
         (unless (contains? msg "too large") (fail "the message says ~s" msg)))))
   (expect "alltoall of a wrong length" 'rmpi-alltoall (raises? (lambda () (rmpi-alltoall w (make-vector (+ n 1) 0)))))
   (expect "alltoallv with too few counts" 'rmpi-alltoallv
     (raises? (lambda () (rmpi-alltoallv w (fxvector) (fxvector) (fxvector) (fxvector) (fxvector) (fxvector)))))
   (expect "comm-split with a negative color" 'rmpi-comm-split (raises? (lambda () (rmpi-comm-split w -1 0))))
   (expect "rmpi-send-bytes of a string" 'rmpi-send-bytes (raises? (lambda () (rmpi-send-bytes w 0 "text"))))
   (expect "rmpi-send-bytes to a bad rank" 'rmpi-send-bytes (raises? (lambda () (rmpi-send-bytes w n (bytevector 1)))))
   (expect "rmpi-recv-bytes! with a bad tag" 'rmpi-recv-bytes! (raises? (lambda () (rmpi-recv-bytes! w 0 (make-bytevector 1) 40000))))
   (expect "rmpi-recv-bytes! with an end past the buffer" 'rmpi-recv-bytes! (raises? (lambda () (rmpi-recv-bytes! w 0 (make-bytevector 4) 0 0 5))))
   (expect "rmpi-recv-bytes!-evt from a bad rank" 'rmpi-recv-bytes!-evt (raises? (lambda () (rmpi-recv-bytes!-evt w -2 (make-bytevector 4)))))
   (rmpi-barrier w)
   (rmpi-finish w)
   (expect "after finish" 'rmpi-barrier (raises? (lambda () (rmpi-barrier w))))
   (expect "a receive after finish" 'rmpi-recv (raises? (lambda () (rmpi-recv w 0))))
   (expect "a send after finish" 'rmpi-send (raises? (lambda () (rmpi-send w 0 'x))))
   (expect "an in-place receive after finish" 'rmpi-recv-bytes! (raises? (lambda () (rmpi-recv-bytes! w 0 (make-bytevector 8)))))
   (expect "an in-place send after finish" 'rmpi-send-bytes (raises? (lambda () (rmpi-send-bytes w 0 (make-bytevector 8)))))
   (expect "allgather after finish" 'rmpi-allgather (raises? (lambda () (rmpi-allgather w 1))))
   (say "ok errors")]
  [("places")
   ;; a rank starts places (from their template: the rank never forks); a
   ;; place is no rank
   (let ([p (echo-place)])
     (expect "a place's answer" (list 'echo me) (place-channel-put/get p me))
     (place-kill p))
   (let ([p (mpi-place)])
     (expect "rmpi-world in a place" "a place is not an MPI rank: only the rank process started by mpirun may use MPI"
       (sync/timeout 30 p))
     (place-wait p))
   (expect "messages still flow" (- n 1) (rmpi-allreduce w max me))
   (say "ok places")]
  [("split-threads")
   ;; `split-threads ROUNDS`: two threads of each rank split two different
   ;; communicators (each of every rank) at once, in opposite orders at
   ;; even and odd ranks, then use the new communicators: no deadlock
   (let* ([rounds (string->number (cadr args))]
          [c1 (rmpi-comm-split w 0 me)] [c2 (rmpi-comm-split w 1 (- n me))]
          [work (lambda (c k)
                  (lambda ()
                    (do ([i 0 (+ i 1)]) ((= i rounds))
                      (let ([s (rmpi-comm-split c (mod (+ i (rmpi-id c)) 2) (rmpi-id c))])
                        (rmpi-barrier s)
                        (expect "an allreduce on the new communicator" (rmpi-cnt s) (rmpi-allreduce s + 1))
                        (expect "a general allreduce on it" (rmpi-cnt s) (rmpi-allreduce s (lambda (a b) (+ a b)) 1))))))]
          [ts (if (even? me)
                  (let ([a (thread (work c1 1))]) (list a (thread (work c2 2))))
                  (let ([b (thread (work c2 2))]) (list (thread (work c1 1)) b)))])
     (for-each (lambda (t) (unless (sync/timeout 30 t) (fail "a splitting thread never ended"))) ts)
     (rmpi-barrier w)
     (say "ok split-threads"))]
  [("mixed-reduce")
   ;; reductions whose operands are fixnums at some ranks and flonums at
   ;; others (a rank whose share of the work is empty sums to exact 0, or
   ;; keeps a vector of exact 0s), or need the general path at some ranks
   ;; only (a ratnum, a bignum result): the result of the general path (a
   ;; fold in rank order; element by element for vectors), at every rank
   (let* ([local (lambda (r)
                   (let-values ([(start count) (let ([q (quotient (- n 1) n)] [m (mod (- n 1) n)])
                                                 (values (+ (* r q) (min r m)) (+ q (if (< r m) 1 0))))])
                     (let loop ([i 0] [s 0]) (if (= i count) s (loop (+ i 1) (+ s (* 1.5 (+ start i 1))))))))]
          [fold (lambda (op f) (let loop ([r 1] [acc (f 0)]) (if (= r n) acc (loop (+ r 1) (op acc (f r))))))]
          [vfold (lambda (op f) (fold (lambda (a b) (vector-map op a b)) f))])
     (let-values ([(start count) (rmpi-partition w (- n 1))])
       (expect "rmpi-partition agrees" (local me)
         (let loop ([i 0] [s 0]) (if (= i count) s (loop (+ i 1) (+ s (* 1.5 (+ start i 1))))))))
     (expect "allreduce sum of 0 and flonums" (fold + local) (rmpi-allreduce w + (local me)))
     (expect "allreduce 'sum" (fold + local) (rmpi-allreduce w 'sum (local me)))
     (expect "allreduce max" (fold max local) (rmpi-allreduce w max (local me)))
     (expect "allreduce min" (fold min local) (rmpi-allreduce w min (local me)))
     (expect "reduce sum to the last rank" (if (= me (- n 1)) (fold + local) (void)) (rmpi-reduce w (- n 1) + (local me)))
     (expect "reduce min to rank 0" (if (= me 0) (fold min local) (void)) (rmpi-reduce w 0 'min (local me)))
     (let ([f (lambda (r) (if (= r 0) 1 2.0))])
       (expect "allreduce prod of 1 and 2.0" (fold * f) (rmpi-allreduce w * (f me))))
     (let ([f (lambda (r) (if (= r (- n 1)) 1/2 r))])
       (expect "allreduce sum with a ratnum at one rank" (fold + f) (rmpi-allreduce w + (f me)))
       (expect "reduce max with a ratnum at one rank" (if (= me 0) (fold max f) (void)) (rmpi-reduce w 0 max (f me))))
     (let ([f (lambda (r) (most-positive-fixnum))])
       (expect "allreduce sum past the fixnums" (fold + f) (rmpi-allreduce w + (f me))))
     (let ([f (lambda (r) (if (= r 0) (make-vector 3 0) (vector (* r 1.0) 2.5 -1.0)))])
       (expect "allreduce sum of vectors, exact 0s at one rank" (vfold + f) (rmpi-allreduce w + (f me)))
       (expect "allreduce max of vectors, exact 0s at one rank" (vfold max f) (rmpi-allreduce w max (f me))))
     (let ([f (lambda (r) (if (= r 0) (vector 1 2 3) (vector 0.5 1.5 2.5)))])
       (expect "allreduce sum of fxvector and flonum vectors"
         (if (= n 1) (fxvector 1 2 3) (vfold + (lambda (r) (if (= r 0) (vector 1 2 3) (f r)))))
         (rmpi-allreduce w + (if (= me 0) (fxvector 1 2 3) (f me)))))
     (expect "allreduce of empty vectors" '#() (rmpi-allreduce w + '#()))
     (expect "allreduce of empty fxvectors" (fxvector) (rmpi-allreduce w + (fxvector)))
     (expect "and the usual typed sum" (fxvector n) (rmpi-allreduce w + (fxvector 1))))
   (rmpi-barrier w)
   (say "ok mixed-reduce")]
  [("recv-break")
   ;; `recv-break ROUNDS [own]`: as bytes-break, for rmpi-recv: each round a
   ;; thread of rank 1 (a parallel thread on its own OS thread with `own`) receives one message (small, over 4 KiB, or a
   ;; bytevector over 64 KiB, in turn) and is broken 0 to ~80 us after
   ;; rank 0 was asked to send it: the message is received exactly once,
   ;; by the thread or else by the next receive
   (let* ([rounds (string->number (cadr args))] [own? (and (pair? (cddr args)) (equal? (caddr args) "own"))]
          [make (lambda (i) (case (mod i 3)
                              [(0) (list i 'small)]
                              [(1) (list i (make-string 3000 #\m))]
                              [else (let ([b (make-bytevector 70000 (mod i 251))]) (bytevector-s64-native-set! b 0 i) b)]))]
          [index (lambda (v) (if (bytevector? v) (bytevector-s64-native-ref v 0) (car v)))]
          [spin-us (lambda (us yield?)
                     (let ([end (+ (current-inexact-monotonic-milliseconds) (/ us 1000.))])
                       (let loop () (when (< (current-inexact-monotonic-milliseconds) end) (when yield? (sleep 0)) (loop)))))])
     (case me
       [(0) (do ([i 0 (+ i 1)]) ((= i rounds))
              (expect "go" i (rmpi-recv w 1))
              (rmpi-send w 1 (make i) 7))]
       [(1) (let ([delivered 0] [broken 0])
              (do ([i 0 (+ i 1)]) ((= i rounds))
                (let* ([got #f] [started (box #f)]
                       [body (lambda () (guard (c [(break-condition? c) (set! got 'broken)])
                                          (set-box! started #t)
                                          (let ([v (rmpi-recv w 0 7)]) (set! got v))))]
                       [t (if own? (thread body #:pool 'own) (thread body))])
                  (let wait () (unless (unbox started) (sleep 0) (wait)))
                  (rmpi-send w 0 i)
                  (spin-us (mod (* i 37) 80) (odd? (quotient i 2)))
                  (break-thread t)
                  (unless (sync/timeout 10 t) (fail "round ~a: the broken receiver never ended" i))
                  (cond
                    [(eq? got 'broken)
                     (set! broken (+ broken 1))
                     (let ([v (sync/timeout 10 (rmpi-recv-evt w 0 7))])
                       (unless v (fail "round ~a: the message was lost (the thread was broken, the next receive got nothing)" i))
                       (expect (format "round ~a: the next receive gets the message" i) i (index v)))]
                    [else
                     (set! delivered (+ delivered 1))
                     (expect (format "round ~a: the thread's message" i) i (index got))])))
              (say "~a delivered to the thread, ~a broken first" delivered broken)
              (expect "no message left" #f (sync/timeout 0.3 (rmpi-recv-evt w 0 7))))])
     (rmpi-barrier w)
     (say "ok recv-break"))]
  [("scratch-threads")
   ;; `scratch-threads COUNT recv|bytes`: rank 1's main thread receives
   ;; and sends first (its OS thread gets its MPI scratch memory), then
   ;; starts a parallel thread (own OS thread) that receives a stream of
   ;; COUNT messages from rank 0 while the main thread ping-pongs COUNT
   ;; messages with rank 0 on other tags: with rmpi-send/rmpi-recv, or
   ;; rmpi-send-bytes/rmpi-recv-bytes!.  Every message arrives once, in
   ;; order (an OS thread started later must not share the main thread's
   ;; scratch memory: Chez's thread parameters are inherited)
   (let* ([count (string->number (cadr args))] [bytes? (equal? (caddr args) "bytes")]
          [send (lambda (dest i tag)
                  (if bytes?
                      (let ([b (make-bytevector 8)]) (bytevector-s64-native-set! b 0 i) (rmpi-send-bytes w dest b tag))
                      (rmpi-send w dest i tag)))]
          [recv (lambda (src tag)
                  (if bytes?
                      (let ([buf (make-bytevector 8)])
                        (rmpi-recv-bytes! w src buf tag)
                        (bytevector-s64-native-ref buf 0))
                      (rmpi-recv w src tag)))])
     (case me
       [(0) (expect "hello" -1 (recv 1 5))
            (send 1 -2 5)
            (let ([a (thread (lambda () (do ([i 0 (+ i 1)]) ((= i count)) (send 1 i 7))) #:pool 'own)])
              (do ([i 0 (+ i 1)]) ((= i count)) (send 1 (recv 1 8) 9))
              (thread-wait a))]
       [(1) (send 0 -1 5)
            (expect "hello back" -2 (recv 0 5))
            (let* ([bad #f]
                   [t (thread (lambda ()
                                (guard (c [#t (set! bad (if (message-condition? c) (condition-message c) c))])
                                  (do ([i 0 (+ i 1)]) ((= i count))
                                    (let ([v (recv 0 7)]) (unless (eqv? v i) (set! bad (list 'expected i 'got v)))))))
                              #:pool 'own)])
              (do ([i 0 (+ i 1)]) ((= i count))
                (send 0 i 8)
                (expect "the ping-pong's answer" i (recv 0 9)))
              (unless (sync/timeout 30 t) (fail "the parallel receiver never ended"))
              (expect "the parallel thread's stream, in order and complete" #f bad))])
     (rmpi-barrier w)
     (say "ok scratch-threads"))]
  [("custodian")
   ;; rank 1's first wait is a thread's under a custodian that is then shut
   ;; down (as a task scope's is when it ends); a thread of the root
   ;; custodian parked on a receive meanwhile still gets its message, and
   ;; the killed thread's message is the next receive's
   (case me
     [(0) (expect "go" 'go (rmpi-recv w 1))
          (rmpi-send w 1 'for-the-killed 3)
          (rmpi-send w 1 'for-the-parked 4)]
     [(1) (let* ([c (make-custodian)]
                 [t1 (parameterize ([current-custodian c]) (thread (lambda () (rmpi-recv w 0 3))))])
            (sleep 0.1)
            (let* ([got #f] [t2 (thread (lambda () (set! got (rmpi-recv w 0 4))))])
              (sleep 0.1)
              (custodian-shutdown-all c)
              (unless (thread-dead? t1) (fail "the custodian's thread lives"))
              (rmpi-send w 0 'go)
              (unless (sync/timeout 10 t2) (fail "the parked receive never got its message"))
              (expect "the parked receive's message" 'for-the-parked got)
              (expect "the killed thread's message" 'for-the-killed (sync/timeout 10 (rmpi-recv-evt w 0 3)))))])
   (rmpi-barrier w)
   (say "ok custodian")]
  [("odd")
   ;; every procedure with odd but legal arguments: empty messages and
   ;; vectors, the largest user tag, messages to self, a communicator of one
   ;; rank, partitions of 0 items, any-source receives from every rank
   (let ([top 32766] [right (mod (+ me 1) n)] [left (mod (- me 1) n)])
     ;; empty messages, to the next rank and to self
     (for-each
       (lambda (v)
         (rmpi-send w right v top)
         (expect (format "~s to the next rank" v) v (rmpi-recv w left top))
         (rmpi-send w me v 0)
         (expect (format "~s to self" v) v (rmpi-recv w me 0)))
       (list (bytevector) "" '() '#() 0 #f (void)))
     ;; a large message to self, and immutable
     (let ([big (make-bytevector 300000 7)])
       (rmpi-send w me big 9)
       (rmpi-send w me (bytevector->immutable-bytevector big) 9)
       (expect "a large message to self" #t (equal? big (rmpi-recv w me 9)))
       (expect "an immutable large message to self" #t (equal? big (rmpi-recv w me 9))))
     ;; in place: 0 bytes, to self and around the ring; the largest tag
     (rmpi-send-bytes w me (bytevector) top)
     (expect "an empty in-place message to self" 0 (rmpi-recv-bytes! w me (make-bytevector 0) top))
     (rmpi-send-bytes w right (make-bytevector 10 1) 3 4 4)
     (expect "an empty range around the ring" 0 (rmpi-recv-bytes! w left (make-bytevector 4) 3 2 2))
     ;; (a large one waits for its receive, as MPI_Send does: the receive
     ;; comes from another thread)
     (let* ([b (make-bytevector 5000 3)] [in (make-bytevector 5000)]
            [t (thread (lambda () (rmpi-recv-bytes! w me in top)) #:keep 'results)])
       (rmpi-send-bytes w me b top)
       (expect "a large in-place message to self" 5000 (thread-wait t))
       (expect "its bytes" b in))
     ;; collectives of nothing
     (expect "broadcast of an empty bytevector" (bytevector) (rmpi-broadcast w 0 (bytevector)))
     (expect "broadcast of '()" '() (rmpi-broadcast w (- n 1) '()))
     (expect "allgather of empty bytevectors" (bytevector) (rmpi-allgather w (bytevector) (bytevector)))
     (expect "alltoall of an empty bytevector" (bytevector) (rmpi-alltoall w (bytevector)))
     (expect "alltoall of an empty fxvector" (fxvector) (rmpi-alltoall w (fxvector)))
     (expect "alltoallv of nothing" (fxvector)
       (rmpi-alltoallv w (fxvector) (make-fxvector n 0) (make-fxvector n 0) (fxvector) (make-fxvector n 0) (make-fxvector n 0)))
     (expect "alltoallv of no values" '#()
       (rmpi-alltoallv w '#() (make-vector n 0) (make-vector n 0) (make-vector 0) (make-vector n 0) (make-vector n 0)))
     (expect "alltoall of empty values" (make-vector n '()) (rmpi-alltoall w (make-vector n '())))
     (expect "allreduce of a string" (apply string-append (map (lambda (r) (make-string r #\a)) (iota n)))
       (rmpi-allreduce w string-append (make-string me #\a)))
     (let-values ([(start count) (rmpi-partition w 0)])
       (expect "a partition of 0 items" '(0 0) (list start count)))
     (let-values ([(start count) (rmpi-partition w (expt 10 20))])
       (expect "a partition of 10^20 items: its share" (+ (quotient (expt 10 20) n) (if (< me (mod (expt 10 20) n)) 1 0)) count))
     ;; any-source receives from every rank, each source's messages in order
     (do ([r 0 (+ r 1)]) ((= r n)) (do ([i 0 (+ i 1)]) ((= i 50)) (rmpi-send w r (list me i) 11)))
     (let ([next (make-vector n 0)])
       (do ([k 0 (+ k 1)]) ((= k (* 50 n)))
         (let ([m (rmpi-recv w #f 11)])
           (expect "per-source order" (vector-ref next (car m)) (cadr m))
           (vector-set! next (car m) (+ 1 (cadr m)))))
       (expect "every message" (make-vector n 50) next))
     ;; a communicator of one rank
     (let ([one (rmpi-comm-split w me 0)])
       (expect "alone" '(0 1) (list (rmpi-id one) (rmpi-cnt one)))
       (rmpi-barrier one)
       (rmpi-send one 0 'self 5)
       (expect "a message to self on it" 'self (rmpi-recv one 0 5))
       (expect "broadcast" 'x (rmpi-broadcast one 0 'x))
       (expect "allreduce" 3 (rmpi-allreduce one + 3))
       (expect "general allreduce" "s" (rmpi-allreduce one string-append "s"))
       (expect "reduce" 2.5 (rmpi-reduce one 0 max 2.5))
       (expect "allgather" (vector me) (rmpi-allgather one me))
       (expect "alltoall" (vector 'y) (rmpi-alltoall one (vector 'y)))
       (expect "alltoall of bytes" (bytevector 1 2) (rmpi-alltoall one (bytevector 1 2)))
       (let-values ([(start count) (rmpi-partition one 0)]) (expect "partition of 0" '(0 0) (list start count)))
       (let-values ([(start count) (rmpi-partition one 7)]) (expect "partition of 7" '(0 7) (list start count)))
       (expect "a split of one rank that joins nothing" #f (rmpi-comm-split one #f 0))
       (let ([again (rmpi-comm-split one 0 5)])
         (expect "a split of a split" 1 (rmpi-cnt again))
         (expect "and it works" 'z (rmpi-broadcast again 0 'z))))
     (expect "every rank joins nothing" #f (rmpi-comm-split w #f me))
     ;; keys order the new ranks: reversed
     (let ([rev (rmpi-comm-split w 0 (- me))])
       (expect "reversed ranks" (- n 1 me) (rmpi-id rev))))
   (rmpi-barrier w)
   (say "ok odd")]
  [("parallel-collectives")
   ;; `parallel-collectives ROUNDS [own]`: three threads of each rank (parallel threads on OS threads of
   ;; their own with `own`) each run ROUNDS collectives on a communicator of
   ;; their own (all made by splits of the world), typed and general,
   ;; at once; and a fourth thread streams point-to-point messages
   (let* ([rounds (string->number (cadr args))] [own? (and (pair? (cddr args)) (equal? (caddr args) "own"))]
          [comms (map (lambda (k) (rmpi-comm-split w 0 (if (even? k) me (- me)))) '(0 1 2))]
          [bad #f] [lock (make-semaphore 1)]
          [note! (lambda (what) (call-with-semaphore lock (lambda () (unless bad (set! bad what)))))]
          [spawn (lambda (f) (if own? (thread f #:pool 'own) (thread f)))]
          [ts (map (lambda (c k)
                     (spawn
                       (lambda ()
                         (guard (e [#t (note! (if (message-condition? e) (condition-message e) e))])
                           (let ([id (rmpi-id c)] [cnt (rmpi-cnt c)])
                             (do ([i 0 (+ i 1)]) ((= i rounds))
                               (case (mod (+ i k) 5)
                                 [(0) (unless (= (rmpi-allreduce c + (+ i id)) (+ (* cnt i) (/ (* cnt (- cnt 1)) 2)))
                                        (note! (list 'sum k i)))]
                                 [(1) (unless (equal? (rmpi-allreduce c (lambda (a b) (string-append a b)) (number->string id))
                                                      (apply string-append (map number->string (iota cnt))))
                                        (note! (list 'general k i)))]
                                 [(2) (unless (equal? (rmpi-broadcast c (mod i cnt) (and (= id (mod i cnt)) (list k i))) (list k i))
                                        (note! (list 'broadcast k i)))]
                                 [(3) (unless (equal? (rmpi-allgather c (list k id)) (list->vector (map (lambda (r) (list k r)) (iota cnt))))
                                        (note! (list 'allgather k i)))]
                                 [else (rmpi-barrier c)])))))))
                   comms '(0 1 2))]
          [p2p (spawn (lambda ()
                        (let ([right (mod (+ me 1) n)] [left (mod (- me 1) n)])
                          (do ([i 0 (+ i 1)]) ((= i (* 5 rounds)))
                            (rmpi-send w right i 21)
                            (unless (eqv? i (rmpi-recv w left 21)) (note! (list 'p2p i)))))))])
     (for-each (lambda (t) (unless (sync/timeout 60 t) (fail "a thread never ended"))) (cons p2p ts))
     (expect "every collective's result" #f bad)
     (rmpi-barrier w)
     (say "ok parallel-collectives"))]
  [("choice-stress")
   ;; `choice-stress COUNT` (even): rank 1 takes COUNT messages from rank 0 each through sync on
   ;; a choice of the receive evt and an alarm due at once or soon (often
   ;; the alarm wins; the message then waits): every message exactly once,
   ;; in order; two threads do the same on a second tag, racing
   (let ([count (string->number (cadr args))])
     (case me
       [(0) (let ([t (thread (lambda () (do ([i 0 (+ i 1)]) ((= i count)) (rmpi-send w 1 i 2) (when (= 0 (mod i 7)) (sleep 0)))))])
              (do ([i 0 (+ i 1)]) ((= i count)) (rmpi-send w 1 i 1) (when (= 0 (mod i 5)) (sleep 0)))
              (thread-wait t))]
       [(1) (let* ([alarms 0]
                   [take (lambda (tag)
                           (let loop ()
                             (let ([v (sync (choice-evt (rmpi-recv-evt w 0 tag)
                                                        (wrap-evt (alarm-evt (+ (current-inexact-milliseconds) (if (= 0 (random 3)) 0 0.05)))
                                                                  (lambda (_) 'alarm))))])
                               (if (eq? v 'alarm) (begin (set! alarms (+ alarms 1)) (loop)) v))))]
                   [seen (make-vector count 0)]
                   [ts (map (lambda (k)
                              (thread (lambda ()
                                        (let loop ([last -1] [k 0])
                                          (when (< k (quotient count 2))
                                            (let ([v (take 2)])
                                              (unless (> v last) (fail "tag 2: ~a after ~a in one thread" v last))
                                              (vector-set! seen v (+ 1 (vector-ref seen v)))
                                              (loop v (+ k 1))))))
                                      #:pool 'own))
                            '(0 1))])
              (do ([i 0 (+ i 1)]) ((= i count)) (expect "tag 1 in order" i (take 1)))
              (for-each (lambda (t) (unless (sync/timeout 60 t) (fail "a racing receiver never ended"))) ts)
              (expect "tag 2: every message once" (make-vector count 1) seen)
              (say "the alarm won ~a times" alarms)
              (expect "no message left" #f (sync/timeout 0.3 (rmpi-recv-evt w 0 1))))])
     (rmpi-barrier w)
     (say "ok choice-stress"))]
  [("huge")
   ;; `huge MB`: a bytevector of MB megabytes through rmpi-send, rmpi-send-bytes,
   ;; rmpi-broadcast and rmpi-allgather, intact
   (let* ([size (* (string->number (cadr args)) 1000000)]
          [big (let ([b (make-bytevector size)]) (do ([i 0 (+ i 4096)]) ((>= i size) b) (bytevector-u8-set! b i (mod (quotient i 4096) 251))))]
          [intact? (lambda (v) (and (bytevector? v) (= (bytevector-length v) size)
                                    (let loop ([i 0]) (or (>= i size) (and (= (bytevector-u8-ref v i) (mod (quotient i 4096) 251)) (loop (+ i 4096)))))))])
     (case me
       [(0) (rmpi-send w 1 big)
            (rmpi-send-bytes w 1 big 3)]
       [(1) (expect "rmpi-send" #t (intact? (rmpi-recv w 0)))
            (let ([in (make-bytevector size 0)])
              (expect "rmpi-send-bytes' count" size (rmpi-recv-bytes! w 0 in 3))
              (expect "rmpi-recv-bytes!" #t (intact? in)))]
       [else (void)])
     (expect "broadcast" #t (intact? (rmpi-broadcast w 0 (and (= me 0) big))))
     (let ([out (make-bytevector (* n size) 0)])
       (rmpi-allgather w big out)
       (expect "allgather" #t (intact? (let ([b (make-bytevector size)]) (bytevector-copy! out (* (- n 1) size) b 0 size) b)))))
   (rmpi-barrier w)
   (say "ok huge")]
  [("finish-busy")
   ;; rmpi-finish while other threads are parked in a receive, spin in one,
   ;; or send: it returns, and each of them ends with an error naming its
   ;; procedure (not a crash or a hang)
   (let* ([errs '()] [lock (make-semaphore 1)]
          [note! (lambda (c) (call-with-semaphore lock (lambda () (set! errs (cons (and (who-condition? c) (condition-who c)) errs)))))]
          [parked (thread (lambda () (guard (c [#t (note! c)]) (rmpi-recv w (mod (+ me 1) n) 30))))]
          [spinner (thread (lambda () (guard (c [#t (note! c)]) (let loop () (sync/timeout 0 (rmpi-recv-evt w #f 31)) (loop)))) #:pool 'own)]
          [sender (thread (lambda () (guard (c [#t (note! c)]) (let loop () (rmpi-send w me 'x 32) (sleep 0) (loop)))) #:pool 'own)])
     (sleep 0.2)
     (rmpi-barrier w)
     (rmpi-finish w)
     (say "finished")
     (unless (sync/timeout 10 spinner) (fail "the spinning receiver never ended"))
     (unless (sync/timeout 10 sender) (fail "the sender never ended"))
     ;; (the parked receiver's error, which rmpi-finish's wake-up may have
     ;; brought already, is looked at below)
     (expect "the spinner's and the sender's errors" '(rmpi-recv-evt rmpi-send)
       (list-sort (lambda (a b) (string<? (symbol->string a) (symbol->string b))) (remq 'rmpi-recv errs)))
     (say "parked receiver: ~a" (if (sync/timeout 1 parked) (if (memq 'rmpi-recv errs) "raised" "ended") "still parked"))
     (say "ok finish-busy"))]
  [("collective-break")
   ;; a thread of rank 0 waiting in a collective (allreduce, barrier,
   ;; broadcast, allgather into an fxvector) is broken or killed before
   ;; rank 1 arrives: the collective still completes, and the next ones
   ;; match and give the right results
   (for-each
     (lambda (how)
       (for-each
         (lambda (op)
           (case me
             [(0) (let ([t (thread (lambda () (guard (c [(break-condition? c) 'broken]) (op))))])
                    (sleep 0.1)
                    (if (eq? how 'break) (break-thread t) (kill-thread t))
                    (unless (sync/timeout 10 t) (fail "the ~a thread never ended" how))
                    (rmpi-send w 1 'go 40))]
             [else (when (= me 1) (expect "go" 'go (rmpi-recv w 0 40)))
                   (op)])
           (expect (format "after a ~a: allreduce" how) (* 10 n) (rmpi-allreduce w + 10))
           (expect (format "after a ~a: general allreduce" how) (* 10 n) (rmpi-allreduce w (lambda (a b) (+ a b)) 10))
           (expect (format "after a ~a: broadcast" how) 'b (rmpi-broadcast w 1 (and (= me 1) 'b))))
         (list (lambda () (rmpi-allreduce w + 1))
               (lambda () (rmpi-barrier w))
               (lambda () (rmpi-broadcast w 1 (make-bytevector 100000 (if (= me 1) 9 0))))
               (lambda () (rmpi-allgather w (fxvector 1 2) (make-fxvector (* 2 n) 0))))))
     '(break kill))
   (rmpi-barrier w)
   (say "ok collective-break")]
  [("disagree")
   ;; the last rank gives each collective another kind, length, root, form
   ;; or operation than the others (or an argument bad at it alone): every
   ;; rank raises, naming the collective, before any MPI call that depends
   ;; on them, and the ranks stay in step (a later allreduce is right)
   (let* ([odd? (= me (- n 1))] [alt (lambda (usual other) (if odd? other usual))])
     (define (check what who thunk)
       (expect (format "~a raises" what) who (raises? thunk))
       (expect (format "after ~a: in step" what) (* 10 n) (rmpi-allreduce w + 10)))
     (check "allreduce of vectors of 3 and 2 fixnums" 'rmpi-allreduce
       (lambda () (rmpi-allreduce w + (alt (vector 1 2 3) (vector 10 20)))))
     (check "allreduce of flonum vectors of 100000 and 2" 'rmpi-allreduce
       (lambda () (rmpi-allreduce w + (alt (make-vector 100000 1.5) (vector 1.5 2.5)))))
     (check "allreduce of fxvectors of 5 and 3" 'rmpi-allreduce
       (lambda () (rmpi-allreduce w max (alt (make-fxvector 5 1) (make-fxvector 3 1)))))
     (check "allreduce of a product of fxvectors of 5 and 3" 'rmpi-allreduce
       (lambda () (rmpi-allreduce w * (alt (make-fxvector 5 1) (make-fxvector 3 1)))))
     (check "allreduce of a fixnum and a vector" 'rmpi-allreduce
       (lambda () (rmpi-allreduce w + (alt 1 (vector 1.0)))))
     (check "allreduce of shared flvectors of 10 and 5" 'rmpi-allreduce
       (lambda () (rmpi-allreduce w + (alt (make-shared-flvector 10 1.) (make-shared-flvector 5 1.)))))
     (check "allreduce of a shared flvector and a flonum vector" 'rmpi-allreduce
       (lambda () (rmpi-allreduce w + (alt (make-shared-flvector 4 1.) (make-vector 4 1.)))))
     (check "allreduce of a shared flvector and a shared fxvector" 'rmpi-allreduce
       (lambda () (rmpi-allreduce w + (alt (make-shared-flvector 4 1.) (make-shared-fxvector 4 1)))))
     (check "allreduce with + and max" 'rmpi-allreduce (lambda () (rmpi-allreduce w (alt + max) 1)))
     (check "allreduce with + and a procedure" 'rmpi-allreduce
       (lambda () (rmpi-allreduce w (alt + (lambda (a b) (+ a b))) 1)))
     (check "allreduce with a bad operation at one rank" 'rmpi-allreduce (lambda () (rmpi-allreduce w (alt + 'plus) 1)))
     (check "reduce to roots 0 and 1" 'rmpi-reduce (lambda () (rmpi-reduce w (alt 0 (min 1 (- n 1))) + 1)))
     (check "reduce to a bad root at one rank" 'rmpi-reduce (lambda () (rmpi-reduce w (alt 0 n) + 1)))
     (check "broadcast from roots 0 and 1" 'rmpi-broadcast (lambda () (rmpi-broadcast w (alt 0 (min 1 (- n 1))) 'x)))
     (check "broadcast of shared bytes of 8 and 4" 'rmpi-broadcast
       (lambda () (rmpi-broadcast w 0 (alt (make-shared-bytes 8 1) (make-shared-bytes 4 1)))))
     (check "broadcast of shared bytes and a value" 'rmpi-broadcast
       (lambda () (rmpi-broadcast w 0 (alt (make-shared-bytes 8 1) (make-bytevector 8 1)))))
     (check "broadcast of a value that is no place message at the root" 'rmpi-broadcast
       (lambda () (rmpi-broadcast w (- n 1) (alt 1 (lambda () 1)))))
     (check "allgather of bytevectors of 4 and 8" 'rmpi-allgather
       (lambda () (let ([k (alt 4 8)]) (rmpi-allgather w (make-bytevector k 1) (make-bytevector (* k n) 0)))))
     (check "allgather of a bytevector and an fxvector" 'rmpi-allgather
       (lambda () (rmpi-allgather w (alt (make-bytevector 2 1) (make-fxvector 2 1)) (alt (make-bytevector (* 2 n) 0) (make-fxvector (* 2 n) 0)))))
     (check "allgather of a value and of a typed vector" 'rmpi-allgather
       (lambda () (if odd? (rmpi-allgather w (make-fxvector 2 1) (make-fxvector (* 2 n) 0)) (rmpi-allgather w 5))))
     (check "allgather into an out of the wrong length at one rank" 'rmpi-allgather
       (lambda () (rmpi-allgather w (make-fxvector 2 1) (make-fxvector (alt (* 2 n) 3) 0))))
     (check "allgather of a value that is no place message at one rank" 'rmpi-allgather
       (lambda () (rmpi-allgather w (alt 'x (lambda () 1)))))
     (check "alltoall of a bytevector and an fxvector" 'rmpi-alltoall
       (lambda () (rmpi-alltoall w (alt (make-bytevector (* 2 n) 1) (make-fxvector (* 2 n) 1)))))
     (check "alltoall of bytevectors of 2n and 4n" 'rmpi-alltoall
       (lambda () (rmpi-alltoall w (make-bytevector (* n (alt 2 4)) 1))))
     (check "alltoall of a vector and a bytevector" 'rmpi-alltoall
       (lambda () (rmpi-alltoall w (alt (make-vector n 'x) (make-bytevector n 1)))))
     (check "alltoall of a wrong length at one rank" 'rmpi-alltoall
       (lambda () (rmpi-alltoall w (make-vector (alt n (+ n 1)) 'x))))
     (let* ([ones (make-fxvector n 1)] [at (let ([v (make-fxvector n 0)]) (do ([i 0 (+ i 1)]) ((= i n) v) (fxvector-set! v i i)))]
            [at2 (let ([v (make-fxvector n 0)]) (do ([i 0 (+ i 1)]) ((= i n) v) (fxvector-set! v i (* 2 i))))])
       (check "alltoallv whose counts disagree" 'rmpi-alltoallv
         (lambda () (rmpi-alltoallv w (make-bytevector (* 2 n) 1) (alt ones (make-fxvector n 2)) (alt at at2)
                                    (make-bytevector (* 2 n) 0) ones at)))
       (check "alltoallv of bytevectors and fxvectors" 'rmpi-alltoallv
         (lambda () (rmpi-alltoallv w (alt (make-bytevector n 1) (make-fxvector n 1)) ones at (alt (make-bytevector n 0) (make-fxvector n 0)) ones at)))
       (check "alltoallv of vectors and bytevectors" 'rmpi-alltoallv
         (lambda () (rmpi-alltoallv w (alt (make-vector n 'x) (make-bytevector n 1)) ones at (alt (make-vector n 0) (make-bytevector n 0)) ones at)))
       (check "alltoallv of vectors whose counts disagree" 'rmpi-alltoallv
         (lambda () (rmpi-alltoallv w (make-vector (* 2 n) 'x) (alt ones (make-fxvector n 2)) (alt at at2)
                                    (make-vector (* 2 n) 0) ones at))))
     (check "comm-split with a bad color at one rank" 'rmpi-comm-split
       (lambda () (rmpi-comm-split w (alt 0 -1) 0))))
   (rmpi-barrier w)
   (say "ok disagree")]
  [("bytes-deadline")
   ;; rank 0 sends 4 MiB in place, the send cut by a deadline (move-on-after
   ;; 0.2; a whole bytevector, a range of one, a shared vector) or its
   ;; thread killed, then fills the buffer with 2s; rank 1 receives a second
   ;; later: the bytes as they were at the call, all 1s
   (let ([size (* 4 1024 1024)])
     (for-each
       (lambda (how)
         (case me
           [(0)
            (let* ([shared? (eq? how 'shared)] [b (if shared? (make-shared-bytes size 1) (make-bytevector size 1))])
              (case how
                [(kill)
                 (let ([t (thread (lambda () (rmpi-send-bytes w 1 b 5)))])
                   (sleep 0.2)
                   (kill-thread t))]
                [else
                 (expect (format "~a: the send is cut by its deadline" how) #f
                   (move-on-after 0.2 (if (eq? how 'range) (rmpi-send-bytes w 1 b 5 8 (- size 8)) (rmpi-send-bytes w 1 b 5)) 'sent))])
              (if shared?
                  (do ([i 0 (+ i 1)]) ((= i size)) (shared-bytes-set! b i 2))
                  (bytevector-fill! b 2))
              (collect (collect-maximum-generation))
              (rmpi-send w 1 'filled 6))]
           [(1)
            (expect "filled" 'filled (rmpi-recv w 0 6))
            (sleep 0.8)
            (let* ([in (make-bytevector size 0)] [k (rmpi-recv-bytes! w 0 in 5)])
              (expect (format "~a: the length" how) (if (eq? how 'range) (- size 16) size) k)
              (let loop ([i 0])
                (when (< i k)
                  (unless (= 1 (bytevector-u8-ref in i))
                    (fail "~a: byte ~a is ~a, changed after the send was cut" how i (bytevector-u8-ref in i)))
                  (loop (+ i 1)))))]
           [else (void)])
         (rmpi-barrier w))
       '(deadline range shared kill)))
   (say "ok bytes-deadline")]
  [("exit-thread")
   ;; `exit-thread DIR POOL`: the last rank exits with code 4 from a thread
   ;; (of pool POOL: own, a parallel thread; main, a coroutine) while the
   ;; others wait in an allreduce
   (rmpi-barrier w)
   (if (= me (- n 1))
       (thread-wait (thread (lambda () (exit 4)) #:pool (if (string=? (caddr args) "own") 'own #f)))
       (rmpi-allreduce w + 1))]
  [("fxvectors")
   ;; rmpi-send of fxvectors (empty, small, over 64 KiB, negative and
   ;; extreme elements), received as fxvectors, beside other values on the
   ;; same tag; through the evt; and a general reduction of fxvectors with a
   ;; procedure
   (let* ([mk (lambda (k) (let ([v (make-fxvector k 0)])
                             (do ([i 0 (+ i 1)]) ((= i k) v)
                               (fxvector-set! v i (case (mod i 4) [(0) (- i)] [(1) (most-positive-fixnum)] [(2) (most-negative-fixnum)] [else (* i 7)])))))]
          [sizes '(0 1 3 600 9000 100000)])
     (case me
       [(0) (for-each (lambda (k) (rmpi-send w 1 (mk k) 7) (rmpi-send w 1 (list 'after k) 7)) sizes)
            (rmpi-send w 1 (mk 5) 8)]
       [(1) (for-each (lambda (k)
                        (let ([got (rmpi-recv w 0 7)])
                          (expect (format "an fxvector of ~a" k) #t (and (fxvector? got) (equal? got (mk k)))))
                        (expect "then the next value" (list 'after k) (rmpi-recv w 0 7)))
                      sizes)
            (expect "through the evt" (mk 5) (sync (rmpi-recv-evt w 0 8)))]
       [else (void)])
     (expect "a general reduction of fxvectors"
       (fxvector (* 3 n))
       (rmpi-allreduce w (lambda (a b) (fxvector (+ (fxvector-ref a 0) (fxvector-ref b 0)))) (fxvector 3))))
   (rmpi-barrier w)
   (say "ok fxvectors")]
  [else (fail "unknown scenario ~a" scenario)])
