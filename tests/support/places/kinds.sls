#!chezscheme
;;; Places for tests/test-places.ss.  Every place form lives here (a place
;;; form works only in a library ending in lift-places).  Bodies use only
;;; their channel and this library's top-level bindings.
(library (places kinds)
  (export echo-place agent-place crash-place crash-after-get-place raise-place return-place
          blocked-place get-once-place silent-place stress-place busy-place
          bump! fd-link my-pid my-ppid stdin-state
          stress-message stress-check-stream)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle)
          (places records))

  ;; ---------------------------------------------------------------- helpers
  (define libc (load-shared-object "libc.so.6"))
  (define c-getpid (foreign-procedure "getpid" () int))
  (define c-getppid (foreign-procedure "getppid" () int))
  (define c-readlink (foreign-procedure "readlink" (string uptr size_t) ssize_t))
  (define c-poll (foreign-procedure "poll" (uptr unsigned-long int) int))
  (define c-read (foreign-procedure "read" (int uptr size_t) ssize_t))

  (define (my-pid) (c-getpid))
  (define (my-ppid) (c-getppid))

  ;; The target of /proc/self/fd/N (say "/dev/null" or "pipe:[1234]").
  (define (fd-link n)
    (let* ([size 4096] [buf (foreign-alloc size)]
           [r (c-readlink (format "/proc/self/fd/~a" n) buf size)])
      (let ([s (if (< r 0)
                   #f
                   (let ([bv (make-bytevector r)])
                     (do ([i 0 (+ i 1)]) ((= i r)) (bytevector-u8-set! bv i (foreign-ref 'unsigned-8 buf i)))
                     (utf8->string bv)))])
        (foreign-free buf)
        s)))

  ;; 'eof if standard input is at end of file within a second, 'blocks if
  ;; nothing can be read in that time, (data n) if it has data.
  (define (stdin-state)
    (let ([buf (foreign-alloc 16)])
      (foreign-set! 'int buf 0 0)
      (foreign-set! 'short buf 4 1)     ; POLLIN
      (foreign-set! 'short buf 6 0)
      (let ([r (c-poll buf 1 1000)])
        (let ([v (cond
                   [(= r 0) 'blocks]
                   [(< r 0) 'poll-failed]
                   [else (let ([n (c-read 0 (+ buf 8) 1)]) (if (= n 0) 'eof (list 'data n)))])])
          (foreign-free buf)
          v))))

  ;; A library-level counter: each place has its own instance of the library.
  (define counter 0)
  (define (bump!) (set! counter (+ counter 1)) counter)

  (define (fill-shared! kind sv lo hi)
    (do ([i lo (+ i 1)]) ((= i hi))
      (case kind
        [(bytes) (shared-bytes-set! sv i (mod (* i 7) 256))]
        [(fx) (shared-fxvector-set! sv i (- (* i 1000003)))]
        [(fl) (shared-flvector-set! sv i (/ (inexact i) 4.0))])))

  (define (describe v)
    (cond
      [(string? v) (list 'string (immutable-string? v))]
      [(bytevector? v) (list 'bytevector (immutable-bytevector? v))]
      [(vector? v) (list 'vector (immutable-vector? v))]
      [(box? v) (list 'box (immutable-box? v))]
      [(hashtable? v) (list 'hashtable (hashtable-mutable? v))]
      [(point? v) (list 'point (cpoint? v))]
      [(place? v) 'place]
      [(place-channel? v) 'place-channel]
      [(shared-bytes? v) 'shared-bytes]
      [(shared-fxvector? v) 'shared-fxvector]
      [(shared-flvector? v) 'shared-flvector]
      [(gensym? v) (list 'gensym (symbol->string v))]
      [else 'other]))

  (define (flood! ch n size)
    (do ([i 0 (+ i 1)]) ((= i n))
      (place-channel-put ch (make-bytevector size (mod i 256)))))

  ;; Blocks the calling thread for good (on a channel nobody writes).
  (define (block-forever)
    (let-values ([(a b) (place-channel)])
      (place-channel-get a)))

  ;; ---------------------------------------------------------------- stress protocol
  ;; Data messages #(channel-index sender seq payload); every 37th carries
  ;; 64 KiB.  Each side sends T*N, then 'end, then its verdict on what it got.
  (define (stress-message idx s i)
    (vector idx s i (if (= (mod i 37) 0) (make-bytevector 65536 (mod i 256)) i)))

  ;; Reads until 'end; returns (ok? count problems).
  (define (stress-check-stream ep idx T N)
    (let ([next (make-vector T 0)])
      (let loop ([count 0] [problems '()])
        (let ([m (place-channel-get ep)])
          (if (eq? m 'end)
              (let ([problems (if (= count (* T N)) problems (cons (list 'count count) problems))])
                (list (null? problems) count (reverse problems)))
              (let* ([s (vector-ref m 1)] [i (vector-ref m 2)] [payload (vector-ref m 3)]
                     [bad (cond
                            [(not (= (vector-ref m 0) idx)) (list 'wrong-channel idx (vector-ref m 0))]
                            [(not (= i (vector-ref next s))) (list 'sender s 'expected (vector-ref next s) 'got i)]
                            [(and (= (mod i 37) 0)
                                  (not (and (bytevector? payload) (= (bytevector-length payload) 65536)
                                            (= (bytevector-u8-ref payload 65535) (mod i 256)))))
                             (list 'bad-payload s i)]
                            [(and (not (= (mod i 37) 0)) (not (eqv? payload i))) (list 'bad-payload s i)]
                            [else #f])])
                (vector-set! next s (+ i 1))
                (loop (+ count 1) (if (and bad (< (length problems) 5)) (cons bad problems) problems))))))))

  (define (stress-side ep idx T N pool)
    (let* ([senders (map (lambda (s)
                           (thread (lambda ()
                                     (do ([i 0 (+ i 1)]) ((= i N))
                                       (place-channel-put ep (stress-message idx s i))))
                                   (if (even? s) pool #f)))
                         (iota T))]
           [receiver (thread (lambda () (stress-check-stream ep idx T N)) #f 'results)])
      (for-each thread-wait senders)
      (place-channel-put ep 'end)
      (place-channel-put ep (list 'verdict (thread-wait receiver)))))

  (define (stress-serve ch)
    ;; (setup T N extra-endpoint ...)
    (let* ([setup (place-channel-get ch)]
           [T (list-ref setup 1)] [N (list-ref setup 2)]
           [eps (cons ch (list-tail setup 3))]
           [pool (make-parallel-thread-pool 2)]
           [sides (map (lambda (ep idx) (thread (lambda () (stress-side ep idx T N pool))))
                       eps (iota (length eps)))])
      (for-each thread-wait sides)
      ;; stay until told to go, so that our messages are surely read
      (place-channel-get ch)))

  ;; ---------------------------------------------------------------- the agent
  ;; Runs commands from its channel; see the case below.
  (define (agent ch)
    (let ([held '()])
      (let loop ()
        (let ([cmd (place-channel-get ch)])
          (define (reply v) (place-channel-put ch v))
          (case (car cmd)
            [(stop) 'stopped]
            [(echo) (reply (cadr cmd)) (loop)]
            [(describe) (reply (describe (cadr cmd))) (loop)]
            [(describe-all) (reply (map describe (cadr cmd))) (loop)]
            [(exit) (apply exit (cdr cmd))]
            ;; (exit-thread v pool): another thread exits; this one blocks
            [(exit-thread)
             (thread (lambda () (exit (cadr cmd))) (caddr cmd))
             (block-forever)]
            [(crash) (error 'agent "deliberate failure in a test place")]
            [(raise) (raise (cadr cmd))]
            [(env) (reply (list (current-directory) (library-directories) (library-extensions)
                                (optimize-level) (stdin-state) (fd-link 1) (fd-link 2)))
                   (loop)]
            [(bump) (reply (bump!)) (loop)]
            [(pid) (reply (list (my-pid) (my-ppid))) (loop)]
            [(point?) (reply (let ([v (cadr cmd)]) (and (point? v) (list (point-x v) (point-y v))))) (loop)]
            [(flood) (flood! ch (cadr cmd) (caddr cmd)) (loop)]
            [(flood-and-return) (flood! ch (cadr cmd) (caddr cmd)) 'returned]
            [(flood-and-exit) (flood! ch (cadr cmd) (caddr cmd)) (exit (cadddr cmd))]
            [(fill) (apply fill-shared! (cdr cmd)) (reply (list 'filled (list-ref cmd 4))) (loop)]
            [(make-shared)
             (let* ([kind (cadr cmd)] [n (caddr cmd)]
                    [sv (case kind
                          [(bytes) (make-shared-bytes n)]
                          [(fx) (make-shared-fxvector n)]
                          [else (make-shared-flvector n)])])
               (fill-shared! kind sv 0 n)
               (set! held (cons sv held))
               (reply sv))
             (loop)]
            [(shared-set)
             ;; (shared-set sv i x): sets through the object it was sent
             (let ([sv (cadr cmd)] [i (caddr cmd)] [x (cadddr cmd)])
               (cond
                 [(shared-bytes? sv) (shared-bytes-set! sv i x)]
                 [(shared-fxvector? sv) (shared-fxvector-set! sv i x)]
                 [else (shared-flvector-set! sv i x)])
               (reply 'set))
             (loop)]
            [(shared-ref)
             (let ([sv (cadr cmd)] [i (caddr cmd)])
               (reply (cond
                        [(shared-bytes? sv) (shared-bytes-ref sv i)]
                        [(shared-fxvector? sv) (shared-fxvector-ref sv i)]
                        [else (shared-flvector-ref sv i)])))
             (loop)]
            ;; (put-on ep v): puts v on a channel it was sent
            [(put-on) (place-channel-put (cadr cmd) (caddr cmd)) (reply 'put) (loop)]
            ;; (get-from ep secs): what a get on ep gives within secs
            [(get-from)
             (reply (guard (c [(error? c) (list 'error (condition-message c))])
                      (sync/timeout (caddr cmd) (cadr cmd))))
             (loop)]
            [(hold) (set! held (cons (cadr cmd) held)) (reply 'held) (loop)]
            ;; (flood-on ep n size): puts n bytevectors (filled with i mod 256) on ep
            [(flood-on) (flood! (cadr cmd) (caddr cmd) (cadddr cmd)) (reply 'flooded) (loop)]
            ;; (collect-from ep n size secs): gets up to n messages from ep, each
            ;; within secs; replies (count first-fill in-order? well-formed?) or
            ;; (error message count)
            [(collect-from)
             (let ([ep (list-ref cmd 1)] [n (list-ref cmd 2)] [size (list-ref cmd 3)] [secs (list-ref cmd 4)])
               (reply
                 (let collect ([count 0] [first #f] [prev #f] [in-order #t] [well-formed #t])
                   (let ([m (if (= count n)
                                #f
                                (guard (c [#t (list 'error (if (message-condition? c) (condition-message c) c) count)])
                                  (sync/timeout secs ep)))])
                     (cond
                       [(not m) (list count first in-order well-formed)]
                       [(and (pair? m) (eq? (car m) 'error)) m]
                       [else
                        (let* ([ok (and (bytevector? m) (= (bytevector-length m) size)
                                        (let ([b (bytevector-u8-ref m 0)])
                                          (= b (bytevector-u8-ref m (- size 1)))))]
                               [fill (and ok (bytevector-u8-ref m 0))])
                          (collect (+ count 1) (or first fill) fill
                                   (and in-order (or (not prev) (not fill) (= fill (mod (+ prev 1) 256))))
                                   (and well-formed ok)))])))))
             (loop)]
            ;; (pump ep n): puts 1..n on ep, then relays ep's reply
            [(pump)
             (let ([ep (cadr cmd)] [n (caddr cmd)])
               (do ([i 1 (+ i 1)]) ((> i n)) (place-channel-put ep i))
               (reply (list 'pump-done (place-channel-get ep))))
             (loop)]
            ;; (sum ep n): gets n numbers from ep, replies on ep with their sum
            ;; and whether they came in order, and reports the same here
            [(sum)
             (let ([ep (cadr cmd)] [n (caddr cmd)])
               (let sum-loop ([i 1] [s 0] [ordered #t])
                 (if (> i n)
                     (begin (place-channel-put ep (list s ordered)) (reply (list 'sum s ordered)))
                     (let ([m (place-channel-get ep)])
                       (sum-loop (+ i 1) (+ s m) (and ordered (eqv? m i)))))))
             (loop)]
            ;; (new-channel): sends back one end of a fresh channel and echoes
            ;; on the other end, tagged 'sub, in a thread
            [(new-channel)
             (let-values ([(mine theirs) (place-channel)])
               (thread (lambda ()
                         (let sub ()
                           (place-channel-put mine (list 'sub (place-channel-get mine)))
                           (sub))))
               (reply theirs))
             (loop)]
            ;; (catch-break): reports the kind of the next break
            [(catch-break)
             (reply (guard (c [(break-condition? c)
                               (list 'break (break-hang-up-condition? c) (break-terminate-condition? c))])
                      (reply 'ready)
                      (place-channel-get ch)
                      'no-break))
             (loop)]
            ;; (no-break secs): breaks disabled for secs, then a get
            [(no-break)
             (parameterize-break #f
               (reply 'ready)
               (sleep (cadr cmd)))
             (place-channel-get ch)
             (loop)]
            ;; (sub-echo v): a place of its own echoes v
            [(sub-echo)
             (let ([q (echo-place)])
               (reply (place-channel-put/get q (cadr cmd)))
               (place-channel-put q 'stop)
               (place-wait q))
             (loop)]
            ;; (sub-agent): starts an agent place of its own, replies with its pid
            [(sub-agent)
             (let ([q (agent-place)])
               (set! held (cons q held))
               (reply (car (place-channel-put/get q '(pid)))))
             (loop)]
            [(make-gensym) (reply (gensym (cadr cmd))) (loop)]
            [(block) (block-forever)]
            [(spin) (let spin ([i 0]) (spin (+ i 1)))]
            [else (reply (list 'unknown-command cmd)) (loop)])))))

  ;; ---------------------------------------------------------------- places
  (define (echo-place)
    (place ch
      (let loop ()
        (let ([m (place-channel-get ch)])
          (unless (eq? m 'stop)
            (place-channel-put ch m)
            (loop))))))

  (define (agent-place) (place ch (agent ch)))

  (define (crash-place) (place ch (error 'crash-place "deliberate failure in a test place")))

  (define (crash-after-get-place)
    (place ch
      (place-channel-get ch)
      (error 'crash-after-get-place "deliberate failure in a test place")))

  (define (raise-place) (place ch (raise 'not-a-condition)))

  (define (return-place) (place ch 42))

  ;; says 'ready, then blocks in a get on its channel
  (define (blocked-place)
    (place ch
      (place-channel-put ch 'ready)
      (place-channel-get ch)))

  ;; blocks in a get at once
  (define (get-once-place) (place ch (place-channel-get ch)))

  ;; never reads its channel
  (define (silent-place) (place ch (block-forever)))

  ;; computes forever, never blocking
  (define (busy-place) (place ch (let spin ([i 0]) (spin (+ i 1)))))

  (define (stress-place) (place ch (stress-serve ch)))

  (lift-places (places kinds)))
