#!chezscheme
;;; Stream sockets for (spindle tcp) and (spindle unix-socket): listeners,
;;; accepting, connecting, all parking the calling thread instead of
;;; blocking its OS thread.
(library (spindle private io socket)
  (export make-listener listener? listener-kind listener-handle listener-name
          listener-accept listener-accept-evt listener-accept-ready? listener-close!
          socket-connect socket-listen socket-port-handle)
  (import (chezscheme)
          (only (spindle private os descriptors) sys-close)
          (only (spindle private os libc) errno-again errno-inprogress errno-connrefused)
          (only (spindle private os polling) poll-in poll-now)
          (only (spindle private os sockets) make-nonblocking-socket sys-bind sys-listen sys-accept sys-connect socket-error socket-peer-address address-family address->string address-port af-inet6 af-unix) (spindle private io fd-port)
          (spindle private io poller)
          (spindle private io custodian-hooks)
          (only (spindle private core sync) sync wrap-evt guard-evt alarm-evt current-inexact-milliseconds)
          (only (spindle private core sim-hooks) check-deterministic))

  ;; kind: 'tcp or 'unix; path: the socket file of a unix listener (or #f).
  (define-record-type listener
    (fields kind handle name path)
    (nongenerative spindle-listener-v1) (sealed #t))

  (define (closed-listener who l)
    (raise (condition (make-error) (make-who-condition who)
                      (make-message-condition "listener is closed") (make-irritants-condition (list l)))))

  ;; Binds and listens: a listener, or raises (who names the caller).
  ;; configure: (lambda (fd)) before bind (socket options).
  (define (socket-listen who kind addr backlog configure name path)
    (check-deterministic who)
    (let ([fd (make-nonblocking-socket (address-family addr))])
      (when (fx< fd 0) (raise-os-error who fd "cannot make a socket"))
      (configure fd)
      (let ([r (sys-bind fd addr)])
        (when (fx< r 0)
          (sys-close fd)
          (raise-os-error who r (string-append "cannot listen on " name))))
      (let ([r (sys-listen fd backlog)])
        (when (fx< r 0)
          (sys-close fd)
          (raise-os-error who r (string-append "cannot listen on " name))))
      (let ([l (make-listener kind (open-handle fd name 'socket) name path)])
        ;; the listener belongs to the current custodian
        (guard (c [#t (listener-close! l) (raise c)])
          (custody-register! l listener-custodian-kind who (current-custody)))
        l)))

  (define listener-custodian-kind
    (make-custody-kind (lambda (l) (listener-close! l)) (lambda (l) (handle-closed? (listener-handle l)))))

  ;; One non-blocking accept: a list (in out), #f if none is waiting, or a
  ;; list holding a thunk that raises the error.
  ;; custodian: the accepting thread's (this may run in the poller).
  (define (try-accept l configure custodian)
    (let ([r (handle-call (listener-handle l) sys-accept)])
      (cond
        [(not r) (list (lambda () (closed-listener 'accept l)))]
        [(fx>= r 0)
         (configure r)
         (guard (c [#t (list (lambda () (raise c)))])
           (let-values ([(in out) (make-fd-ports/custodian r (accepted-name l r) 'socket #t #t custodian)])
             (list in out)))]
        [(fx= r (fx- 0 errno-again)) #f]
        [else (list (lambda () (raise-os-error 'accept r "cannot accept a connection" l)))])))

  ;; An accepted TCP connection is named after its peer ("127.0.0.1:54321",
  ;; "[::1]:54321"; an IPv4 peer of an IPv6 listener by its IPv4 address),
  ;; so that an error says which; a Unix one (whose peer has no name) after
  ;; the listener.
  (define (accepted-name l fd)
    (let ([peer (and (eq? (listener-kind l) 'tcp) (socket-peer-address fd))])
      (if peer
          (let ([host (address->string peer)] [port (number->string (address-port peer))])
            (cond
              [(not (fx= (address-family peer) af-inet6)) (string-append host ":" port)]
              [(ipv4-mapped host) => (lambda (v4) (string-append v4 ":" port))]
              [else (string-append "[" host "]:" port)]))
          (listener-name l))))

  ;; "::ffff:a.b.c.d" -> "a.b.c.d"; else #f.
  (define (ipv4-mapped host)
    (let ([n (string-length host)])
      (and (fx> n 7) (string-ci=? (substring host 0 7) "::ffff:")
           (memv #\. (string->list host))
           (substring host 7 n))))

  ;; try-accept's list -> the ports, or the raise of its error thunk.
  (define (accept-result . vals)
    (if (procedure? (car vals)) ((car vals)) (apply values vals)))

  ;; The evt is ready when a connection is waiting; choosing it accepts
  ;; the connection (never otherwise).  Result: (list in out).
  (define (listener-accept-evt l configure)
    (guard-evt
      (lambda ()
        (let ([custodian (current-custody)])
          (wrap-evt (fd-operation-evt (handle-rec (listener-handle l)) 'read (lambda () (try-accept l configure custodian)))
                    (lambda vals (call-with-values (lambda () (apply accept-result vals)) list)))))))

  (define (listener-accept who l configure)
    (when (handle-closed? (listener-handle l)) (closed-listener who l))
    (apply values (sync (listener-accept-evt l configure))))

  ;; #t if an accept would not block (a connection is waiting).
  (define (listener-accept-ready? l)
    (and (not (handle-closed? (listener-handle l)))
         (fxlogtest (poll-now (handle-fd (listener-handle l)) poll-in) poll-in)))

  (define (listener-close! l)
    (close-handle! (listener-handle l))
    (let ([path (listener-path l)])
      (when path (guard (c [#t (void)]) (delete-file path)))))

  ;; Connects to each address in turn (parking while a connection is under
  ;; way): (values in out), or raises the last error.  A unix socket's
  ;; connect fails with EAGAIN while its listener's backlog is full (a TCP
  ;; one completes later instead): it is tried again after a pause, 1 ms
  ;; doubling to 50 ms, for up to 10 s.
  (define (socket-connect who addrs name configure)
    (check-deterministic who)
    (let loop ([addrs addrs] [last-error (fx- 0 errno-connrefused)] [pause 1.] [waited 0.])
      (if (null? addrs)
          (raise-os-error who last-error (string-append "cannot connect to " name))
          (let ([r (connect-once who (car addrs) name configure)])
            (cond
              [(pair? r) (values (car r) (cdr r))]
              [(and (fx= r (fx- 0 errno-again)) (fx= (address-family (car addrs)) af-unix) (fl< waited 10000.))
               (sync (alarm-evt (fl+ (current-inexact-milliseconds) pause)))
               (loop addrs r (flmin 50. (fl* 2. pause)) (fl+ waited pause))]
              [else (loop (cdr addrs) r 1. 0.)])))))

  ;; (in . out), or -errno.
  (define (connect-once who addr name configure)
    (let ([fd (make-nonblocking-socket (address-family addr))])
      (if (fx< fd 0)
          (raise-os-error who fd "cannot make a socket")
          (let ([r (sys-connect fd addr)])
            (if (or (fx= r 0) (fx= r (fx- 0 errno-inprogress))
                    (and (fx= r (fx- 0 errno-again)) (not (fx= (address-family addr) af-unix))))
                (begin
                  (configure fd)
                  (let-values ([(in out) (make-fd-ports fd name 'socket #t #t)])
                    (if (fx= r 0)
                        (cons in out)
                        (let ([h (fd-port-handle out)])
                          ;; writable once the connection is made or has failed; an
                          ;; edge before the port was watched is reported when it was
                          ;; added, and bumped seq past 1
                          (fd-idle! (handle-rec h) 'write 1)
                          ;; a raise while waiting (a break, a cancelled
                          ;; scope) leaves no socket behind
                          (guard (c [#t (close-port in) (close-port out) (raise c)])
                            (sync (fd-ready-evt (handle-rec h) 'write #t)))
                          (let ([e (or (handle-call h socket-error) 9)])
                            (if (fx= e 0)
                                (cons in out)
                                (begin (close-port in) (close-port out) (fx- 0 e))))))))
                (begin (sys-close fd) r))))))

  (define (socket-port-handle p) (and (port? p) (fd-port-handle p)))

  (record-writer (record-type-descriptor listener)
    (lambda (l port wr)
      (display "#<" port) (display (listener-kind l) port) (display "-listener " port)
      (display (listener-name l) port) (display ">" port))))
