#!chezscheme
;;; Writes to socket and pipe ports (issue 17, items 3-5; issue 22, items 1
;;; and 10): small writes leave at once, writes can be bounded in time,
;;; readiness is asked of the kernel, dropped ports release their
;;; descriptors, ports can be made on several OS threads at once.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness))

(test-limit 60)

(define (now-ms) (current-inexact-monotonic-milliseconds))
(define (open-fd-count) (length (directory-list "/proc/self/fd")))

(define (listener-port l)
  (let-values ([(lh lp ph pp) (tcp-addresses l #t)]) lp))

;; (values client-in client-out server-in server-out listener)
(define (tcp-pair)
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")])
    (let*-values ([(ci co) (tcp-connect "127.0.0.1" (listener-port l))] [(si so) (tcp-accept l)])
      (values ci co si so l))))

(define (close-all . ps) (for-each (lambda (p) (guard (c [#t (void)]) (close-port p))) ps))

;; The bytes that arrive on in within ms, as one read (#f: none).
(define (arrival in ms)
  (let ([buf (make-bytevector 64)])
    (let ([n (sync/timeout (/ ms 1000.) (read-bytes-avail!-evt buf in))])
      (and (fixnum? n) (let ([r (make-bytevector n)]) (bytevector-copy! buf 0 r 0 n) r)))))

(define (messages-arrive-alone out in what)
  (for-each
    (lambda (k)
      (let ([msg (make-bytevector k (+ 96 k))])
        (put-bytevector out msg)                  ; no flush
        (check-equal (format "~a: a ~a-byte write arrives alone within 100 ms" what k) msg (arrival in 100))))
    '(1 2 3 4 1 1))
  (put-u8 out 7)
  (check-equal (format "~a: one put-u8" what) (bytevector 7) (arrival in 100)))

(test "1, 2, 3 and 4-byte writes leave at once (TCP, pipe, transcoded port at a newline)"
  (let-values ([(ci co si so l) (tcp-pair)])
    (messages-arrive-alone co si "tcp")
    (messages-arrive-alone so ci "tcp back")
    (let ([t (transcoded-port co (native-transcoder))])
      (put-string t "z\n")
      (check-equal "a line through a transcoded port" (string->utf8 "z\n") (arrival si 100))
      (close-all t))
    (close-all ci si so)
    (tcp-close l))
  (let-values ([(in out) (make-pipe)])
    (messages-arrive-alone out in "pipe")
    (close-all in out)))

(test "put-u8 five times on a TCP port"
  (let-values ([(ci co si so l) (tcp-pair)])
    (do ([i 1 (+ i 1)]) ((> i 5)) (put-u8 co i))
    (check-equal "five bytes, in order" (bytevector 1 2 3 4 5) (sync/timeout 1 (read-bytes-evt 5 si)))
    (close-all ci co si so)
    (tcp-close l)))

(test "put-u8 from threads on several OS threads: every byte once"
  (let-values ([(ci co si so l) (tcp-pair)])
    (let* ([n 5000]
           [pools (list #f (make-parallel-thread-pool 2) (make-parallel-thread-pool 1))]
           [writers (map (lambda (w) (thread (lambda () (do ([i 0 (+ i 1)]) ((= i n)) (put-u8 co w)))
                                             (list-ref pools (mod w 3))))
                         (iota 6))]
           [counts (make-vector 6 0)])
      (for-each thread-wait writers)
      (close-port co)
      (let loop ()
        (let ([b (get-u8 si)])
          (unless (eof-object? b)
            (vector-set! counts b (+ 1 (vector-ref counts b)))
            (loop))))
      (check-equal "each writer's bytes, all of them" (make-vector 6 n) counts))
    (close-all ci si so)
    (tcp-close l)))

(test "examples/echo-server.ss echoes messages of every size"
  (let-values ([(p out in err) (subprocess #f #f 'stdout "bin/spindle" "run" "examples/echo-server.ss")])
    (let* ([line (get-line (transcoded-port out (native-transcoder)))]
           [port (string->number (substring line (string-length "listening on ") (string-length line)))])
      (let-values ([(ci co) (tcp-connect "127.0.0.1" port)])
        (for-each (lambda (msg)
                    (put-bytevector co (string->utf8 msg))
                    (check-equal (format "echo of ~s" msg) (string->utf8 msg) (arrival ci 2000)))
                  '("z" "zz" "zzz" "qqqq" "a longer message\n"))
        (close-all ci co)))
    (subprocess-kill p #t)
    (close-all in)))

(test "a write to a peer that stopped reading times out (socket)"
  (let-values ([(ci co si so l) (tcp-pair)])
    (let ([bv (make-bytevector 65536 1)])
      (let loop ([i 0])
        (check "bounded: the buffers fill" (< i 2000))
        (let* ([t0 (now-ms)] [r (sync/timeout 1 (write-bytes-evt bv co))] [dt (- (now-ms) t0)])
          (if r
              (begin (check-equal "a whole write" 65536 r) (loop (+ i 1)))
              (begin
                (check "the timeout came about on time" (< dt 3000))
                (check "port not ready either" (not (sync/timeout 0 co)))
                (check "write-bytes-avail-evt not ready" (not (sync/timeout 0.05 (write-bytes-avail-evt bv co))))
                ;; what was written is exactly what the chosen evts wrote
                (close-port co)
                (let count ([total 0])
                  (let ([b (get-bytevector-some si)])
                    (if (eof-object? b)
                        (check-equal "bytes received" (* i 65536) total)
                        (count (+ total (bytevector-length b)))))))))))
    (close-all ci si so)
    (tcp-close l)))

(test "a full pipe is not ready; a write to it times out and writes nothing"
  (let-values ([(in out) (make-pipe)])
    (put-bytevector out (make-bytevector 65536 1))
    (check "port-ready-evt on the full pipe" (not (sync/timeout 0 (port-ready-evt out))))
    (check "the port as an evt" (not (sync/timeout 0 out)))
    (let ([t0 (now-ms)])
      (check "write-bytes-evt times out" (not (sync/timeout 1 (write-bytes-evt (bytevector 1 2 3) out))))
      (check "within about its timeout" (< (- (now-ms) t0) 3000)))
    (check "write-bytes-avail-evt times out" (not (sync/timeout 0.05 (write-bytes-avail-evt (bytevector 1 2 3) out))))
    (check-equal "an alarm wins a choice against the write" 'alarm
      (sync (choice-evt (write-bytes-evt (bytevector 9) out)
                        (wrap-evt (alarm-evt (+ (current-inexact-milliseconds) 50)) (lambda (_) 'alarm)))))
    (check-equal "the reader finds the 65536 bytes" 65536 (bytevector-length (get-bytevector-n in 65536)))
    (check "ready again once read" (eq? out (sync/timeout 1 (port-ready-evt out))))
    (check-equal "write-bytes-avail-evt writes" 3 (sync/timeout 1 (write-bytes-avail-evt (bytevector 1 2 3) out)))
    ;; evts that lose a choice write nothing
    (let ([won (let loop ([i 0] [sum 0])
                 (if (= i 200)
                     sum
                     (loop (+ i 1)
                           (+ sum (sync (choice-evt (write-bytes-evt (bytevector 5 5) out)
                                                    (wrap-evt always-evt (lambda (_) 0))))))))])
      (close-port out)
      (check-equal "only the chosen writes arrived" (+ 3 won) (bytevector-length (get-bytevector-all in))))
    (close-all in)))

(test "make-pipe: ports, names, limit, errors"
  (let-values ([(in out) (make-pipe #f "reader" 'writer)])
    (check "input port" (and (input-port? in) (binary-port? in)))
    (check "output port" (and (output-port? out) (binary-port? out)))
    (check-equal "names" '("reader" "writer") (list (port-name in) (port-name out)))
    (put-bytevector out (string->utf8 "hello"))
    (check-equal "round trip" (string->utf8 "hello") (get-bytevector-n in 5))
    (close-port out)
    (check "eof after close" (eof-object? (get-u8 in)))
    (close-port in))
  (let-values ([(in out) (make-pipe 200000)])
    (check-equal "a pipe of 200000 takes 150000 bytes at once" 150000
      (sync/timeout 1 (write-bytes-evt (make-bytevector 150000 3) out)))
    (check-equal "all of them" 150000 (bytevector-length (get-bytevector-n in 150000)))
    (close-all in out))
  (check-raises "bad limit" (assertion-from? 'make-pipe) (lambda () (make-pipe -1)))
  (check-raises "bad limit" (assertion-from? 'make-pipe) (lambda () (make-pipe 'big)))
  (check-raises "write-bytes-avail-evt bytevector" (assertion-from? 'write-bytes-avail-evt)
    (lambda () (write-bytes-avail-evt "abc" (current-output-port))))
  (check-raises "write-bytes-avail-evt range" (assertion-from? 'write-bytes-avail-evt)
    (lambda () (write-bytes-avail-evt (bytevector 1) (current-output-port) 0 2)))
  (check-raises "write-bytes-avail-evt port" (assertion-from? 'write-bytes-avail-evt)
    (lambda () (write-bytes-avail-evt (bytevector 1) 5)))
  (check-raises "write-bytes-evt port" (assertion-from? 'write-bytes-evt)
    (lambda () (write-bytes-evt (bytevector 1) (open-bytevector-input-port (bytevector)))))
  (let-values ([(p get) (open-bytevector-output-port)])
    (check-equal "other ports: all at once" 2 (sync (write-bytes-avail-evt (bytevector 1 2) p)))
    (check-equal "written" (bytevector 1 2) (get))))

(test "one condition for every use of a closed port: &i/o-port naming the operation"
  (let-values ([(ci co si so l) (tcp-pair)])
    (close-port co) (close-port ci)
    (let ([closed? (lambda (who) (lambda (c) (and (i/o-port-error? c) (eq? (condition-who c) who))))])
      (check-raises "put-bytevector" (closed? 'put-bytevector) (lambda () (put-bytevector co (bytevector 1 2 3 4 5))))
      (check-raises "put-u8" (closed? 'put-u8) (lambda () (put-u8 co 1)))
      (check-raises "get-u8" (closed? 'get-u8) (lambda () (get-u8 ci)))
      (check-raises "get-bytevector-n" (closed? 'get-bytevector-n) (lambda () (get-bytevector-n ci 3)))
      ;; closed by another thread while this one waits
      (let-values ([(in out) (make-pipe)])
        (let ([writer (thread (lambda ()
                                (guard (c [#t c])
                                  (let loop () (put-bytevector out (make-bytevector 65536 1)) (loop))))
                              #f 'results)])
          (sleep 0.2)
          (close-port out)
          (let ([c (sync/timeout 5 (wrap-evt writer (lambda (_) (thread-wait writer))))])
            (check "a parked writer wakes with the same condition" (and c ((closed? 'put-bytevector) c))))
          (close-port in))))
    (close-all si)
    (tcp-close l)))

(test "accepted TCP ports are named after the peer"
  (let-values ([(ci co si so l) (tcp-pair)])
    (let-values ([(lh lp ph pp) (tcp-addresses co #t)])
      (check-equal "input" (format "127.0.0.1:~a" lp) (port-name si))
      (check-equal "output" (format "127.0.0.1:~a" lp) (port-name so)))
    (close-all ci co si so)
    (tcp-close l)))

(test "dropped ports release their descriptors at the next collections"
  (collect-rendezvous)
  (let ([before (open-fd-count)] [l (tcp-listen 0 256 #t "127.0.0.1")])
    (let ([port (listener-port l)])
      (do ([i 0 (+ i 1)]) ((= i 100))
        (let*-values ([(ci co) (tcp-connect "127.0.0.1" port)] [(si so) (tcp-accept l)]) (void))))
    (check "200 sockets open" (>= (open-fd-count) (+ before 200)))
    (collect-rendezvous)
    (collect-rendezvous)
    (check "closed after two collections, no port made" (<= (open-fd-count) (+ before 1)))
    (tcp-close l)))

;; Returns the subprocess only: its stdin port is unreachable afterwards.
(define (cat-with-dropped-stdin)
  (let-values ([(p out in err) (subprocess (current-output-port) #f (current-error-port) "/bin/cat")])
    p))

(test "a subprocess whose stdin port was dropped sees end of file after collections"
  (let ([p (cat-with-dropped-stdin)])
    (check "cat runs" (eq? 'running (subprocess-status p)))
    (collect-rendezvous)
    (collect-rendezvous)
    (check "cat ended" (sync/timeout 5 p))
    (check-equal "exit code" 0 (subprocess-status p))))

(define (own-threads-making-ports k seconds make)
  (let* ([counts (make-vector k 0)]
         [deadline (+ (now-ms) (* 1000 seconds))]
         [threads (map (lambda (i)
                         (thread (lambda ()
                                   (let loop ()
                                     (when (< (now-ms) deadline)
                                       (make)
                                       (vector-set! counts i (+ 1 (vector-ref counts i)))
                                       (loop)))
                                   'done)
                                 #:pool 'own #:keep 'results))
                       (iota k))])
    (check-equal (format "~a threads ran to the end" k) (make-list k 'done) (map thread-wait threads))
    (check (format "each made ports (~a)" counts) (for-all positive? (vector->list counts)))))

(test "listeners and pipes made on two and six OS threads at once"
  (own-threads-making-ports 2 2 (lambda () (tcp-close (tcp-listen 0 4 #t "127.0.0.1"))))
  (own-threads-making-ports 6 2 (lambda () (tcp-close (tcp-listen 0 4 #t "127.0.0.1"))))
  (own-threads-making-ports 6 2 (lambda () (let-values ([(in out) (make-pipe)]) (close-port in) (close-port out)))))

(done)
