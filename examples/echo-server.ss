#!chezscheme
;;; A TCP echo server: one thread per connection.
;;;   bin/spindle run examples/echo-server.ss [--port N] [--pool K]
;;; --port 0 (the default) picks a free port; the first line printed is
;;; "listening on PORT".  --pool K runs the connection threads on a
;;; parallel thread pool of K OS workers instead of the main pool.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (options))

(define pool (let ([k (option "--pool" #f)]) (and k (make-parallel-thread-pool k))))
(define listener (tcp-listen (option "--port" 0) 1024 #t "127.0.0.1"))

(define (serve in out)
  (guard (c [(i/o-error? c) (void)])          ; a client that resets
    (let ([buf (make-bytevector 4096)])         ; reused: no allocation per read
      (let loop ()
        (let ([n (get-bytevector-some! in buf 0 (bytevector-length buf))])
          (unless (eof-object? n)
            (put-bytevector out buf 0 n)        ; one write(2): spindle ports write through
            (loop))))))
  (close-port in)
  (guard (c [(i/o-error? c) (void)]) (close-port out)))

(let-values ([(host port peer-host peer-port) (tcp-addresses listener #t)])
  (printf "listening on ~a\n" port)
  (flush-output-port (current-output-port)))

(let loop ()
  (let-values ([(in out) (tcp-accept listener)])
    (thread (lambda () (serve in out)) #:pool pool))
  (loop))
