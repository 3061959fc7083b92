#!chezscheme
;;; Unix-domain stream sockets with Racket's names (racket/unix-socket).
;;; Ports behave as the TCP ones do.
(library (spindle unix-socket)
  (export unix-socket-available? unix-socket-path? unix-socket-listen unix-socket-listener?
          unix-socket-accept unix-socket-accept-evt unix-socket-close-listener unix-socket-connect)
  (import (chezscheme)
          (only (spindle private os sockets) make-unix-address unix-path-max) (spindle private io socket))

  (define unix-socket-available? #t)

  ;; A path fits in sockaddr_un (at most 107 bytes, no NUL).
  (define (unix-socket-path? v)
    (and (or (string? v) (bytevector? v))
         (let ([b (if (string? v) (string->utf8 v) v)])
           (and (fx< 0 (bytevector-length b)) (fx<= (bytevector-length b) unix-path-max)
                (not (memv 0 (bytevector->u8-list b)))))))

  (define (check-path who p)
    (unless (unix-socket-path? p) (assertion-violation who "expected a socket path of 1 to 107 bytes" p)))

  (define (no-options fd) (void))

  (define (path-string p) (if (string? p) p (utf8->string p)))
  (define (address-of p) (make-unix-address (if (string? p) (string->utf8 p) p)))

  (define unix-socket-listen
    (case-lambda
      [(path) (unix-socket-listen path 4)]
      [(path backlog)
       (check-path 'unix-socket-listen path)
       (unless (and (fixnum? backlog) (fx>= backlog 1))
         (assertion-violation 'unix-socket-listen "expected a positive backlog" backlog))
       (socket-listen 'unix-socket-listen 'unix (address-of path) backlog no-options
                      (string-append "unix:" (path-string path)) (path-string path))]))

  (define (unix-socket-listener? v) (and (listener? v) (eq? (listener-kind v) 'unix)))

  (define (check-listener who l)
    (unless (unix-socket-listener? l) (assertion-violation who "expected a unix socket listener" l)))

  (define (unix-socket-accept l)
    (check-listener 'unix-socket-accept l)
    (listener-accept 'unix-socket-accept l no-options))

  (define (unix-socket-accept-evt l)
    (check-listener 'unix-socket-accept-evt l)
    (listener-accept-evt l no-options))

  ;; Closes the listener and deletes its socket file.
  (define (unix-socket-close-listener l)
    (check-listener 'unix-socket-close-listener l)
    (listener-close! l))

  (define (unix-socket-connect path)
    (check-path 'unix-socket-connect path)
    (socket-connect 'unix-socket-connect (list (address-of path))
                    (string-append "unix:" (path-string path)) no-options)))
