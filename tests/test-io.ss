#!chezscheme
;;; I/O (issue 10): the poller, TCP and Unix sockets, port evts,
;;; call-blocking; threads that wait for I/O never stop the others.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness)
        (only (spindle private os processes) own-pid))

(test-limit 60)

(define (now-ms) (current-inexact-monotonic-milliseconds))

(define (open-fd-count)
  (length (directory-list "/proc/self/fd")))

;; An echo server on listener l: a thread per connection, on pool (or the
;; main pool).  Returns the accepting thread.
(define (start-echo-server l accept pool)
  (thread
    (lambda ()
      (let loop ()
        (let-values ([(in out) (accept l)])
          (thread (lambda ()
                    (let echo ()
                      (let ([bv (get-bytevector-some in)])
                        (unless (eof-object? bv)
                          (put-bytevector out bv)
                          (flush-output-port out)
                          (echo))))
                    (close-port in)
                    (close-port out))
                  pool))
        (loop)))))

;; Sends `rounds` numbered lines and checks each echo; returns the count.
(define (echo-client connect id rounds)
  (let-values ([(in out) (connect)])
    (let loop ([k 0])
      (if (= k rounds)
          (begin (close-port out) (close-port in) k)
          (let ([msg (string->utf8 (format "~a:~a\n" id k))])
            (put-bytevector out msg)
            (flush-output-port out)
            (let ([back (get-bytevector-n in (bytevector-length msg))])
              (unless (equal? back msg)
                (error 'echo-client "wrong echo" id k back))
              (loop (+ k 1))))))))

(define (subbytevector bv s e)
  (let ([r (make-bytevector (- e s))]) (bytevector-copy! bv s r 0 (- e s)) r))

(define (listener-port l)
  (let-values ([(lh lp ph pp) (tcp-addresses l #t)]) lp))

(test "tcp: listen on port 0, connect, echo, addresses"
  (let* ([l (tcp-listen 0 16 #t "127.0.0.1")] [port (listener-port l)] [server (start-echo-server l tcp-accept #f)])
    (check "tcp-listener?" (tcp-listener? l))
    (check "a port was picked" (> port 0))
    (check-equal "one client" 10 (echo-client (lambda () (tcp-connect "127.0.0.1" port)) 0 10))
    (let-values ([(in out) (tcp-connect "localhost" port)])
      (check "tcp-port? in" (tcp-port? in))
      (check "tcp-port? out" (tcp-port? out))
      (check "not tcp-port?" (not (tcp-port? (current-output-port))))
      (let-values ([(lh lp ph pp) (tcp-addresses out #t)])
        (check-equal "peer host" "127.0.0.1" ph)
        (check-equal "peer port" port pp)
        (check "local port" (> lp 0)))
      (close-port in) (close-port out))
    (kill-thread server)
    (tcp-close l)))

(test "tcp: IPv6 loopback"
  (let* ([l (tcp-listen 0 16 #t "::1")] [port (listener-port l)] [server (start-echo-server l tcp-accept #f)])
    (check-equal "echo over ::1" 5 (echo-client (lambda () (tcp-connect "::1" port)) 0 5))
    (kill-thread server)
    (tcp-close l)))

(test "tcp: many clients on several pools, nothing lost or duplicated"
  (let* ([l (tcp-listen 0 128 #t "127.0.0.1")] [port (listener-port l)]
         [server-pool (make-parallel-thread-pool 2)]
         [server (start-echo-server l tcp-accept server-pool)]
         [client-pools (list #f (make-parallel-thread-pool 2) (make-parallel-thread-pool 1))]
         [clients (map (lambda (i)
                         (thread (lambda () (echo-client (lambda () (tcp-connect "127.0.0.1" port)) i 200))
                                 (list-ref client-pools (mod i 3)) 'results))
                       (iota 30))])
    (check-equal "every round trip" (make-list 30 200) (map thread-wait clients))
    (kill-thread server)
    (tcp-close l)))

(test "unix sockets: echo, listener file removed on close"
  (let* ([path (format "/tmp/spindle-test-~a.sock" (own-pid))]
         [l (unix-socket-listen path)]
         [server (start-echo-server l unix-socket-accept (make-parallel-thread-pool 2))]
         [clients (map (lambda (i) (thread (lambda () (echo-client (lambda () (unix-socket-connect path)) i 100)) #f 'results))
                       (iota 10))])
    (check "unix-socket-listener?" (unix-socket-listener? l))
    (check "path?" (unix-socket-path? path))
    (check "too long a path" (not (unix-socket-path? (make-string 200 #\a))))
    (check-equal "every round trip" (make-list 10 100) (map thread-wait clients))
    (kill-thread server)
    (unix-socket-close-listener l)
    (check "file removed" (not (file-exists? path)))))

(test "a thread waiting on a socket does not stop the others"
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")] [port (listener-port l)]
         [count 0]
         [spinner (thread (lambda () (let loop () (set! count (+ count 1)) (loop))))])
    (let-values ([(in out) (tcp-connect "127.0.0.1" port)])
      (let ([reader (thread (lambda () (get-u8 in)) #f 'results)])
        (sleep 0.2)
        (let ([c count])
          (check "the spinner ran while the reader waited" (> c 1000))
          (let-values ([(sin sout) (tcp-accept l)])
            (put-u8 sout 7) (flush-output-port sout)
            (check-equal "reader got the byte" 7 (thread-wait reader))
            (close-port sin) (close-port sout))))
      (close-port in) (close-port out))
    (kill-thread spinner)
    (tcp-close l)))

(test "tcp-accept-evt in a choice, with a timeout"
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")] [port (listener-port l)])
    (check "nothing waiting: timeout" (not (sync/timeout 0.05 (tcp-accept-evt l))))
    (check "accept not ready" (not (tcp-accept-ready? l)))
    (let-values ([(in out) (tcp-connect "127.0.0.1" port)])
      (sleep 0.05)
      (check "accept ready" (tcp-accept-ready? l))
      (let ([r (sync (choice-evt (tcp-accept-evt l) (alarm-evt (+ (current-inexact-milliseconds) 5000))))])
        (check "accepted two ports" (and (list? r) (= 2 (length r)) (input-port? (car r)) (output-port? (cadr r))))
        (for-each close-port r))
      (close-port in) (close-port out))
    ;; a choice that picks the other branch accepts nothing
    (let-values ([(in out) (tcp-connect "127.0.0.1" port)])
      (sleep 0.05)
      (check-equal "always-evt wins when listed alone" 'other
        (sync (wrap-evt always-evt (lambda (_) 'other))))
      (check "the connection is still there" (tcp-accept-ready? l))
      (let-values ([(a b) (tcp-accept l)]) (close-port a) (close-port b))
      (close-port in) (close-port out))
    (tcp-close l)))

(test "port evts: read with a timeout, read-line-evt, eof-evt"
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")] [port (listener-port l)])
    (let-values ([(in out) (tcp-connect "127.0.0.1" port)] [(sin sout) (tcp-accept l)])
      (check "port not ready" (not (sync/timeout 0.05 in)))
      (check "read-line-evt times out" (not (sync/timeout 0.05 (read-line-evt in))))
      (put-bytevector sout (string->utf8 "partial"))
      (flush-output-port sout)
      (check "partial line: still not ready" (not (sync/timeout 0.05 (read-line-evt in))))
      (check "but the port is ready" (eq? in (sync/timeout 0.5 in)))
      (put-bytevector sout (string->utf8 " line\nnext\r\n"))
      (flush-output-port sout)
      (check-equal "line" "partial line" (sync/timeout 1 (read-line-evt in)))
      (check-equal "return-linefeed" "next" (sync/timeout 1 (read-line-evt in 'return-linefeed)))
      (put-bytevector sout (bytevector 1 2 3 4 5))
      (flush-output-port sout)
      (check-equal "read-bytes-evt" (bytevector 1 2 3) (sync/timeout 1 (read-bytes-evt 3 in)))
      (let ([bv (make-bytevector 10 0)])
        (check-equal "read-bytes-avail!-evt" 2 (sync/timeout 1 (read-bytes-avail!-evt bv in)))
        (check-equal "bytes" (bytevector 4 5) (subbytevector bv 0 2)))
      (check "eof-evt not ready" (not (sync/timeout 0.05 (eof-evt in))))
      (check-equal "write-bytes-evt" 3 (sync/timeout 1 (write-bytes-evt (bytevector 9 8 7) sout)))
      (check-equal "got them" (bytevector 9 8 7) (get-bytevector-n in 3))
      (close-port sout)
      (check "eof-evt ready at eof" (eof-object? (sync/timeout 1 (eof-evt in))))
      (for-each close-port (list in out sin)))
    (tcp-close l)))

(test "a slow client does not delay the others"
  (let* ([l (tcp-listen 0 16 #t "127.0.0.1")] [port (listener-port l)] [server (start-echo-server l tcp-accept #f)])
    (let-values ([(sin sout) (tcp-connect "127.0.0.1" port)])
      (let ([slow (thread (lambda ()
                            (let loop ([i 0])
                              (when (< i 5)
                                (put-u8 sout 65) (flush-output-port sout)
                                (get-u8 sin)
                                (sleep 0.1)
                                (loop (+ i 1))))))]
            [t0 (now-ms)])
        (check-equal "fast client" 50 (echo-client (lambda () (tcp-connect "127.0.0.1" port)) 1 50))
        (check "fast client finished before the slow one" (< (- (now-ms) t0) 400))
        (thread-wait slow)
        (close-port sin) (close-port sout)))
    (kill-thread server)
    (tcp-close l)))

(test "errors: refused, address in use, host not found, bad arguments"
  (let* ([l (tcp-listen 0 4 #f "127.0.0.1")] [port (listener-port l)])
    (check-raises "address in use" (lambda (c) (and (error? c) (eq? (condition-who c) 'tcp-listen)
                                                   (string-contains? (condition-message c) "in use")))
      (lambda () (tcp-listen port 4 #f "127.0.0.1")))
    (tcp-close l)
    (check-raises "refused" (lambda (c) (and (error? c) (eq? (condition-who c) 'tcp-connect)
                                            (string-contains? (condition-message c) "refused")))
      (lambda () (tcp-connect "127.0.0.1" port))))
  (check-raises "host not found" (lambda (c) (and (error? c) (eq? (condition-who c) 'tcp-connect)))
    (lambda () (tcp-connect "no-such-host.invalid" 80)))
  (check-raises "bad port" (both (assertion-from? 'tcp-listen) (irritant? 70000)) (lambda () (tcp-listen 70000)))
  (check-raises "bad port 0" (assertion-from? 'tcp-connect) (lambda () (tcp-connect "127.0.0.1" 0)))
  (check-raises "bad host" (both (assertion-from? 'tcp-connect) (irritant? 'x)) (lambda () (tcp-connect 'x 80)))
  (check-raises "bad listener" (assertion-from? 'tcp-accept) (lambda () (tcp-accept 5)))
  (check-raises "bad listener evt" (assertion-from? 'tcp-accept-evt) (lambda () (tcp-accept-evt 5)))
  (check-raises "tcp-addresses" (assertion-from? 'tcp-addresses) (lambda () (tcp-addresses 5)))
  (check-raises "unix path" (assertion-from? 'unix-socket-connect) (lambda () (unix-socket-connect "")))
  (check-raises "unix connect to nothing" (both error? (lambda (c) (eq? (condition-who c) 'unix-socket-connect)))
    (lambda () (unix-socket-connect "/tmp/spindle-no-such.sock")))
  (check-raises "read-line-evt mode" (assertion-from? 'read-line-evt)
    (lambda () (read-line-evt (open-bytevector-input-port (bytevector)) 'sideways)))
  (check-raises "call-blocking" (assertion-from? 'call-blocking) (lambda () (call-blocking 5))))

(test "a peer that resets mid-write gives an error, never SIGPIPE"
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")] [port (listener-port l)])
    (let-values ([(in out) (tcp-connect "127.0.0.1" port)] [(sin sout) (tcp-accept l)])
      (close-port sin) (close-port sout)
      (check-raises "write to a closed peer" (lambda (c) (and (i/o-error? c) (condition? c)))
        (lambda ()
          (let loop ([i 0])
            (when (< i 1000)
              (put-bytevector out (make-bytevector 65536 1))
              (flush-output-port out)
              (loop (+ i 1))))))
      (guard (c [#t (void)]) (close-port out))
      (close-port in))
    (tcp-close l)))

(test "closing a port while another thread reads wakes it"
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")] [port (listener-port l)])
    (let-values ([(in out) (tcp-connect "127.0.0.1" port)] [(sin sout) (tcp-accept l)])
      (let ([reader (thread (lambda () (guard (c [(i/o-error? c) 'error]) (get-u8 in))) #f 'results)])
        (sleep 0.05)
        (close-port in)
        (let ([r (sync/timeout 2 (wrap-evt reader (lambda (_) (thread-wait reader))))])
          (check "reader woke with an error or eof" (or (eq? r 'error) (eof-object? r)))))
      (for-each close-port (list out sin sout)))
    (tcp-close l)))

(test "kill-thread during a read releases the descriptor"
  (collect-rendezvous)
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")] [port (listener-port l)] [before (open-fd-count)])
    (let loop ([i 0])
      (when (< i 20)
        (let-values ([(in out) (tcp-connect "127.0.0.1" port)] [(sin sout) (tcp-accept l)])
          (let ([reader (thread (lambda () (get-u8 in)))])
            (sleep 0.005)
            (kill-thread reader)
            (for-each close-port (list in out sin sout))))
        (loop (+ i 1))))
    (check-equal "descriptors released" before (open-fd-count))
    (tcp-close l)))

(test "descriptor count unchanged after 10,000 connect/close cycles"
  (let* ([l (tcp-listen 0 128 #t "127.0.0.1")] [port (listener-port l)]
         [acceptor (thread (lambda ()
                             (let loop ()
                               (let-values ([(in out) (tcp-accept l)])
                                 (close-port in) (close-port out))
                               (loop))))]
         [cycle (lambda () (let-values ([(in out) (tcp-connect "127.0.0.1" port)]) (close-port in) (close-port out)))])
    ;; ports left unreachable by earlier tests are closed by now
    (collect-rendezvous)
    (do ([i 0 (+ i 1)]) ((= i 100)) (cycle))
    (let ([before (open-fd-count)])
    (let loop ([i 0])
      (when (< i 10000)
        (let-values ([(in out) (tcp-connect "127.0.0.1" port)])
          (close-port in) (close-port out))
        (loop (+ i 1))))
    (sleep 0.1)
    (check "descriptors" (<= (open-fd-count) before)))
    (kill-thread acceptor)
    (tcp-close l)))

(test "threads on several pools writing one port: no torn or lost writes"
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")] [port (listener-port l)])
    (let-values ([(in out) (tcp-connect "127.0.0.1" port)] [(sin sout) (tcp-accept l)])
      (let* ([pools (list #f (make-parallel-thread-pool 2) (make-parallel-thread-pool 1))]
             [writers (map (lambda (w)
                             (thread (lambda ()
                                       (do ([i 0 (+ i 1)]) ((= i 2000))
                                         ;; a record of 40 bytes: writer, index, padding
                                         (put-bytevector out (string->utf8 (format "~a ~5,'0d ~a\n" w i (make-string 30 #\x)))))
                                       (flush-output-port out))
                                     (list-ref pools (mod w 3))))
                           (iota 6))]
             [reader (thread (lambda ()
                               (let ([tin (transcoded-port sin (native-transcoder))])
                                 (let loop ([acc '()] [n 0])
                                   (if (= n (* 6 2000))
                                       acc
                                       (loop (cons (get-line tin) acc) (+ n 1))))))
                             #f 'results)])
        (for-each thread-wait writers)
        (let ([lines (thread-wait reader)])
          (check-equal "every line whole" '() (filter (lambda (line) (not (= (string-length line) 38))) lines))
          (check-equal "each writer's lines once, in order" (make-list 6 (iota 2000))
            (map (lambda (w)
                   (map (lambda (line) (string->number (substring line 2 7)))
                        (reverse (filter (lambda (line) (char=? (string-ref line 0) (integer->char (+ 48 w)))) lines))))
                 (iota 6)))))
      (for-each close-port (list in out sin sout)))
    (tcp-close l)))

(test "readers on several pools share one port: every byte read once"
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")] [port (listener-port l)] [total 200000])
    (let-values ([(in out) (tcp-connect "127.0.0.1" port)] [(sin sout) (tcp-accept l)])
      (let* ([pools (list #f (make-parallel-thread-pool 2))]
             [readers (map (lambda (r)
                             (thread (lambda ()
                                       (let loop ([sum 0] [count 0])
                                         ;; bulk reads (single bytes and text:
                                         ;; tests/test-shared-reads.ss)
                                         (let ([b (get-bytevector-some in)])
                                           (cond
                                             [(eof-object? b) (cons sum count)]
                                             [(fixnum? b) (loop (+ sum b) (+ count 1))]
                                             [else (loop (fold-left + sum (bytevector->u8-list b)) (+ count (bytevector-length b)))]))))
                                     (list-ref pools (mod r 2)) 'results))
                           (iota 4))])
        (let ([data (make-bytevector total)])
          (do ([i 0 (+ i 1)]) ((= i total)) (bytevector-u8-set! data i (mod i 251)))
          (put-bytevector sout data)
          (flush-output-port sout)
          (close-port sout)
          (let ([results (map thread-wait readers)])
            (check-equal "byte count" total (apply + (map cdr results)))
            (check-equal "byte sum" (fold-left + 0 (bytevector->u8-list data)) (apply + (map car results))))))
      (for-each close-port (list in out sin)))
    (tcp-close l)))

(test "files read and written on helper threads"
  (let ([path (format "/tmp/spindle-file-test-~a" (own-pid))]
        [data (let ([bv (make-bytevector 300000)])
                (do ([i 0 (+ i 1)]) ((= i 300000) bv) (bytevector-u8-set! bv i (mod (* i 7) 256))))])
    (let ([o (open-output-file/helper path)]) (put-bytevector o data) (close-port o))
    (check-equal "round trip" data (file->bytevector/helper path))
    ;; threads reading the file at once, beside a counting thread
    (let* ([count 0]
           [spinner (thread (lambda () (let loop () (set! count (+ count 1)) (yield) (loop))))]
           [readers (map (lambda (i) (thread (lambda () (equal? data (file->bytevector/helper path))) #f 'results)) (iota 8))])
      (check "every reader saw the file" (for-all values (map thread-wait readers)))
      (kill-thread spinner))
    (let ([o (open-output-file/helper path 'append)]) (put-bytevector o (bytevector 1 2 3)) (close-port o))
    (check-equal "append" (+ 3 (bytevector-length data)) (bytevector-length (file->bytevector/helper path)))
    (check-raises "exists 'error" (lambda (c) (and (i/o-filename-error? c) (eq? (condition-who c) 'open-output-file/helper)))
      (lambda () (open-output-file/helper path 'error)))
    (delete-file path)
    (check-raises "missing file" (lambda (c) (and (i/o-filename-error? c) (eq? (condition-who c) 'open-input-file/helper)))
      (lambda () (open-input-file/helper path)))
    (check-raises "bad exists" (assertion-from? 'open-output-file/helper) (lambda () (open-output-file/helper path 'keep)))))

(test "call-blocking of libc sleep does not stop other threads"
  (let* ([c-sleep (foreign-procedure __collect_safe "sleep" (unsigned) unsigned)]
         [count 0]
         [spinner (thread (lambda () (let loop () (set! count (+ count 1)) (yield) (loop))))]
         [t0 (now-ms)]
         [callers (map (lambda (i) (thread (lambda () (call-blocking c-sleep 1)) #f 'results)) (iota 4))])
    (sleep 0.3)
    (check "the spinner ran meanwhile" (> count 100))
    (check-equal "each call returned 0" '(0 0 0 0) (map thread-wait callers))
    (check "4 one-second calls overlapped" (< (- (now-ms) t0) 1900))
    (check-equal "values" '(1 2) (call-with-values (lambda () (call-blocking values 1 2)) list))
    (check-raises "an exception comes back" (lambda (c) (and (error? c) (eq? (condition-who c) 'inside)))
      (lambda () (call-blocking (lambda () (error 'inside "boom")))))
    (kill-thread spinner)))

(done)
