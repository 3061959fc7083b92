#!chezscheme
;;; TCP with Racket's names and argument order (racket/tcp).  Ports are
;;; Chez binary ports (textual through transcoded-port) whose reads and
;;; writes park the calling thread while the socket is not ready; name
;;; lookups run on a helper OS thread (call-blocking).  Accepted and
;;; connected sockets have TCP_NODELAY set.
(library (spindle tcp)
  (export tcp-listen tcp-accept tcp-accept-evt tcp-accept-ready? tcp-connect
          tcp-close tcp-abandon-port tcp-addresses tcp-listener? tcp-port?)
  (import (except (chezscheme) parameterize)
          (only (spindle private core sim-hooks) check-deterministic)
          (only (spindle private os sockets) sys-set-socket-option! socket-local-address socket-peer-address make-inet-address make-inet6-address parse-address address-family address->string address-port af-inet af-inet6 lookup-host) (spindle private io fd-port)
          (spindle private io socket) (spindle blocking)
          (only (spindle private core keywords) define-keyword-procedure)
          (only (spindle scope) call-with-task-scope scope-thread scope-cancel! move-on-after
                cancelled-condition?)
          (only (spindle custodian) current-custodian)
          (only (spindle parameter) parameterize)
          (only (spindle semaphore) make-semaphore semaphore-post)
          (only (spindle private core sync) sync/timeout)
          (only (spindle thread) current-thread-pool))

  (define (tcp-listener? v) (and (listener? v) (eq? (listener-kind v) 'tcp)))

  (define (tcp-port? v)
    (let ([h (socket-port-handle v)])
      (and h (eq? (handle-kind h) 'socket) (not (unix-name? (handle-name h))))))

  ;; Unix-socket ports are named "unix:PATH".
  (define (unix-name? name)
    (and (fx>= (string-length name) 5) (string=? (substring name 0 5) "unix:")))

  (define (check-port-number who n zero-ok?)
    (unless (and (fixnum? n) (fx<= (if zero-ok? 0 1) n 65535))
      (assertion-violation who (if zero-ok? "expected a port number in 0 .. 65535"
                                   "expected a port number in 1 .. 65535")
                           n)))

  (define (check-host who h)
    (unless (string? h) (assertion-violation who "expected a host name string" h)))

  ;; Addresses of host (numeric, localhost, or looked up on a helper OS
  ;; thread), with the port.
  (define (resolve who host port)
    (let ([numeric (parse-address host)])
      (map (lambda (fa)
             (if (fx= (car fa) af-inet)
                 (make-inet-address (cdr fa) port)
                 (make-inet6-address (cdr fa) port)))
           (cond
             [numeric (list numeric)]
             [(string-ci=? host "localhost")
              (list (cons af-inet (bytevector 127 0 0 1))
                    (cons af-inet6 (let ([b (make-bytevector 16 0)]) (bytevector-u8-set! b 15 1) b)))]
             [else
              (let ([r (call-blocking lookup-host host)])
                (if (string? r)
                    (raise (condition (make-error) (make-who-condition who)
                                      (make-message-condition (string-append "host not found: " r))
                                      (make-irritants-condition (list host))))
                    r))]))))

  (define (no-delay! fd) (sys-set-socket-option! fd 'no-delay #t))

  ;; (tcp-listen port [max-allow-wait 4] [reuse? #f] [hostname #f]):
  ;; hostname #f listens on every interface, IPv6 and IPv4 alike.
  (define tcp-listen
    (case-lambda
      [(port) (tcp-listen port 4 #f #f)]
      [(port backlog) (tcp-listen port backlog #f #f)]
      [(port backlog reuse?) (tcp-listen port backlog reuse? #f)]
      [(port backlog reuse? host)
       (check-port-number 'tcp-listen port #t)
       (unless (and (fixnum? backlog) (fx>= backlog 1))
         (assertion-violation 'tcp-listen "expected a positive backlog" backlog))
       (when host (check-host 'tcp-listen host))
       (let* ([addrs (if host
                         (resolve 'tcp-listen host port)
                         (list (make-inet6-address (make-bytevector 16 0) port)
                               (make-inet-address (make-bytevector 4 0) port)))]
              [name (string-append (or host "*") ":" (number->string port))])
         (let try ([addrs addrs])
           (let ([any6? (and (not host) (fx= (address-family (car addrs)) af-inet6))])
             (guard (c [(and (pair? (cdr addrs)) (error? c) (not (i/o-error? c))) (try (cdr addrs))])
               (socket-listen 'tcp-listen 'tcp (car addrs) backlog
                              (lambda (fd)
                                (when reuse? (sys-set-socket-option! fd 'reuse-address #t))
                                (when any6? (sys-set-socket-option! fd 'v6-only #f)))
                              name #f)))))]))

  (define (check-listener who l)
    (unless (tcp-listener? l) (assertion-violation who "expected a TCP listener" l)))

  ;; (tcp-accept listener) -> (values in out)
  (define (tcp-accept l)
    (check-listener 'tcp-accept l)
    (listener-accept 'tcp-accept l no-delay!))

  ;; Ready when a connection is waiting; result (list in out).
  (define (tcp-accept-evt l)
    (check-listener 'tcp-accept-evt l)
    (listener-accept-evt l no-delay!))

  (define (tcp-accept-ready? l)
    (check-listener 'tcp-accept-ready? l)
    (listener-accept-ready? l))

  (define (tcp-close l)
    (check-listener 'tcp-close l)
    (listener-close! l))

  ;; (tcp-connect host port [local-host #f] [local-port #f] [timeout #f])
  ;; -> (values in out).  timeout: seconds for the whole connect, name
  ;; lookup included (a deadline of an enclosing scope applies as well).
  (define tcp-connect-procedure
    (case-lambda
      [(host port) (tcp-connect-procedure host port #f #f #f)]
      [(host port local-host) (tcp-connect-procedure host port local-host #f #f)]
      [(host port local-host local-port) (tcp-connect-procedure host port local-host local-port #f)]
      [(host port local-host local-port timeout)
       (check-deterministic 'tcp-connect)
       (check-host 'tcp-connect host)
       (check-port-number 'tcp-connect port #f)
       (when (or local-host local-port)
         (assertion-violation 'tcp-connect "a local host or port is not supported" local-host local-port))
       (unless (or (not timeout) (and (real? timeout) (not (nan? timeout)) (>= timeout 0)))
         (assertion-violation 'tcp-connect "expected #f or a non-negative real number of seconds" timeout))
       (let ([name (string-append host ":" (number->string port))])
         (if timeout
             ;; only this scope's own deadline is the timeout error: a
             ;; cancellation of a scope around it passes through
             (let ([ports (move-on-after timeout
                            (call-with-values (lambda () (race-connect (resolve 'tcp-connect host port) name)) cons))])
               (unless ports
                 (raise (condition (make-error) (make-who-condition 'tcp-connect)
                                   (make-message-condition
                                     (format "cannot connect to ~a: timed out after ~a s" name timeout))
                                   (make-irritants-condition (list host port)))))
               (values (car ports) (cdr ports)))
             (race-connect (resolve 'tcp-connect host port) name)))]))

  (define-keyword-procedure tcp-connect tcp-connect-procedure
    (host #f) (port #f) (local-host #f) (local-port #f) (timeout #f))

  ;; The addresses in the resolver's order, the two families interleaved
  ;; from the first one's (RFC 8305, section 4).
  (define (interleave addrs)
    (let-values ([(first other) (partition (lambda (a) (fx= (address-family a) (address-family (car addrs)))) addrs)])
      (let loop ([a first] [b other] [acc '()])
        (cond
          [(null? a) (append (reverse acc) b)]
          [(null? b) (append (reverse acc) a)]
          [else (loop (cdr a) (cdr b) (cons* (car b) (car a) acc))]))))

  ;; RFC 8305's Connection Attempt Delay.
  (define attempt-delay 0.25)

  ;; Happy Eyeballs (RFC 8305): the attempts start one after another, the
  ;; next when the one before fails or after attempt-delay, and run
  ;; together in a task scope; the first connection wins, the scope
  ;; cancels the others (a cancelled connect closes its socket, and a
  ;; late one that connected anyway is closed here).  The ports belong to
  ;; the caller's custodian, not the scope's.  With every attempt failed,
  ;; the last error is raised.
  (define (race-connect addrs name)
    (if (null? (cdr addrs))
        (socket-connect 'tcp-connect addrs name no-delay!)
        (let ([won (box #f)] [last-error (box #f)] [cust (current-custodian)] [pool (current-thread-pool)])
          (call-with-task-scope
            (lambda (s)
              (let loop ([as (interleave addrs)])
                (unless (null? as)
                  (let ([failed (make-semaphore 0)] [addr (car as)])
                    (scope-thread s
                      (lambda ()
                        (guard (c [(not (cancelled-condition? c)) (set-box! last-error c) (semaphore-post failed)])
                          (let-values ([(in out) (parameterize ([current-custodian cust])
                                                   (socket-connect 'tcp-connect (list addr) name no-delay!))])
                            (if (box-cas! won #f (cons in out))
                                (scope-cancel! s)
                                (begin (close-port in) (close-port out))))))
                      pool)
                    (sync/timeout attempt-delay failed)
                    (loop (cdr as)))))))
          (let ([w (unbox won)])
            (if w (values (car w) (cdr w)) (raise (unbox last-error)))))))

  ;; Closes the port without ending the connection's direction (no FIN for
  ;; an output port); the socket closes when its other port is closed too.
  (define (tcp-abandon-port p)
    (unless (tcp-port? p) (assertion-violation 'tcp-abandon-port "expected a TCP port" p))
    (abandon-port! p))

  ;; (tcp-addresses port-or-listener [port-numbers? #f]) ->
  ;; (values local-host peer-host), or with port numbers
  ;; (values local-host local-port peer-host peer-port).
  (define tcp-addresses
    (case-lambda
      [(x) (tcp-addresses x #f)]
      [(x port-numbers?)
       (let ([h (cond
                  [(tcp-listener? x) (listener-handle x)]
                  [(tcp-port? x) (socket-port-handle x)]
                  [else (assertion-violation 'tcp-addresses "expected a TCP port or listener" x)])])
         (let ([local (handle-call h socket-local-address)]
               [peer (if (listener? x) #f (handle-call h socket-peer-address))])
           (unless local
             (raise (condition (make-error) (make-who-condition 'tcp-addresses)
                               (make-message-condition "the socket is closed") (make-irritants-condition (list x)))))
           (let ([peer-host (if peer (address->string peer) (if (fx= (address-family local) af-inet6) "::" "0.0.0.0"))]
                 [peer-port (if peer (address-port peer) 0)])
             (if port-numbers?
                 (values (address->string local) (address-port local) peer-host peer-port)
                 (values (address->string local) peer-host)))))])))
