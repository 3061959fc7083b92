#!chezscheme
;;; libc for sockets: stream sockets (IPv4, IPv6, Unix) for listening,
;;; accepting and connecting; socket options; sockaddr bytevectors; name
;;; lookup; and connected Unix socket pairs carrying descriptors
;;; (SCM_RIGHTS), the transport of place channels.
;;;
;;; Calls that can fail return a negative errno (see (spindle private os
;;; libc) `checked`); none blocks but lookup-host.
(library (spindle private os sockets)
  (export make-nonblocking-socket sys-bind sys-listen sys-accept sys-connect sys-shutdown
          shut-write
          socket-error socket-send-buffer-size sys-set-socket-option! socket-local-address socket-peer-address
          make-inet-address make-inet6-address make-unix-address parse-address
          address-family address->string address-port unix-path-max
          af-inet af-inet6 af-unix lookup-host
          make-socket-pair send-frame-chunk recv-chunk max-fds-per-message)
  (import (chezscheme) (spindle private os libc)
          (only (spindle private os memory) c-string))

  (define loaded libc-loaded)   ; libc is loaded before the bindings below

  (define af-unspec 0)
  (define af-unix 1)
  (define af-inet 2)
  (define af-inet6 10)
  (define sock-stream 1)
  (define sol-socket 1)               ; SOL_SOCKET
  (define so-reuseaddr 2)
  (define so-error 4)
  (define so-sndbuf 7)
  (define so-keepalive 9)
  (define ipproto-tcp 6)
  (define tcp-nodelay 1)
  (define ipproto-ipv6 41)
  (define ipv6-v6only 26)
  (define scm-rights 1)               ; SCM_RIGHTS
  (define msg-nosignal #x4000)        ; MSG_NOSIGNAL
  (define msg-cmsg-cloexec #x40000000) ; MSG_CMSG_CLOEXEC

  (define shut-write 1)                ; shutdown(2)'s SHUT_WR

  (define c-shutdown (foreign-procedure "shutdown" (int int) int))
  (define (sys-shutdown fd how) (checked (c-shutdown fd how)))

  (define c-socket (foreign-procedure "socket" (int int int) int))
  (define c-bind (foreign-procedure "bind" (int u8* int) int))
  (define c-listen (foreign-procedure "listen" (int int) int))
  (define c-accept4 (foreign-procedure "accept4" (int u8* u8* int) int))
  (define c-connect (foreign-procedure "connect" (int u8* int) int))
  (define c-getsockopt (foreign-procedure "getsockopt" (int int int u8* u8*) int))
  (define c-setsockopt (foreign-procedure "setsockopt" (int int int u8* int) int))
  (define c-getsockname (foreign-procedure "getsockname" (int u8* u8*) int))
  (define c-getpeername (foreign-procedure "getpeername" (int u8* u8*) int))
  (define c-inet-pton (foreign-procedure "inet_pton" (int string u8*) int))
  (define c-inet-ntop (foreign-procedure "inet_ntop" (int u8* u8* int) uptr))

  ;; A non-blocking, close-on-exec stream socket of the family, or -errno.
  (define (make-nonblocking-socket family)
    (checked (c-socket family (fxior sock-stream o-nonblock o-cloexec) 0)))

  ;; Addresses are sockaddr bytevectors (sockaddr_in, _in6 or _un).
  (define (sys-bind fd addr) (checked (c-bind fd addr (bytevector-length addr))))
  (define (sys-listen fd backlog) (checked (c-listen fd backlog)))
  (define (sys-connect fd addr) (checked (c-connect fd addr (bytevector-length addr))))

  ;; A non-blocking, close-on-exec connected socket, or -errno.
  (define (sys-accept fd)
    (let retry ()
      (let ([r (checked (c-accept4 fd #f #f (fxior o-nonblock o-cloexec)))])
        (if (fx= r (fx- 0 errno-intr)) (retry) r))))

  ;; An int socket option: its value, or #f if it cannot be read.
  (define (int-socket-option fd level name)
    (let ([v (make-bytevector 4 0)] [len (make-bytevector 4 0)])
      (bytevector-s32-native-set! len 0 4)
      (and (fx= 0 (checked (c-getsockopt fd level name v len)))
           (bytevector-s32-native-ref v 0))))

  ;; The pending error of a socket (SO_ERROR): 0 or an errno.
  (define (socket-error fd) (or (int-socket-option fd sol-socket so-error) 0))

  ;; The size of a socket's send buffer (SO_SNDBUF), or #f.
  (define (socket-send-buffer-size fd) (int-socket-option fd sol-socket so-sndbuf))

  ;; option: 'reuse-address, 'no-delay or 'keep-alive; on?: boolean.
  (define (sys-set-socket-option! fd option on?)
    (let ([v (make-bytevector 4 0)])
      (bytevector-s32-native-set! v 0 (if on? 1 0))
      (case option
        [(reuse-address) (checked (c-setsockopt fd sol-socket so-reuseaddr v 4))]
        [(keep-alive) (checked (c-setsockopt fd sol-socket so-keepalive v 4))]
        [(no-delay) (checked (c-setsockopt fd ipproto-tcp tcp-nodelay v 4))]
        [(v6-only) (checked (c-setsockopt fd ipproto-ipv6 ipv6-v6only v 4))]
        [else (assertion-violation 'sys-set-socket-option! "unknown option" option)])))

  (define (socket-address get fd)
    (let ([addr (make-bytevector 128 0)] [len (make-bytevector 4 0)])
      (bytevector-s32-native-set! len 0 128)
      (and (fx= 0 (get fd addr len))
           (let ([n (bytevector-s32-native-ref len 0)])
             (let ([r (make-bytevector (fxmin n 128))])
               (bytevector-copy! addr 0 r 0 (fxmin n 128))
               r)))))
  (define (socket-local-address fd) (socket-address c-getsockname fd))
  (define (socket-peer-address fd) (socket-address c-getpeername fd))

  ;; sockaddr_in: family (2, native), port (2, big-endian), address (4), zero (8)
  (define (make-inet-address ip4 port) (make-ip-address af-inet 16 port ip4 4))

  ;; sockaddr_in6: family, port, flowinfo (4), address (16), scope id (4)
  (define (make-inet6-address ip6 port) (make-ip-address af-inet6 28 port ip6 8))

  ;; A zeroed sockaddr of size bytes: family, big-endian port, ip at offset.
  (define (make-ip-address family size port ip offset)
    (let ([a (make-bytevector size 0)])
      (bytevector-u16-native-set! a 0 family)
      (bytevector-u16-set! a 2 port (endianness big))
      (bytevector-copy! ip 0 a offset (bytevector-length ip))
      a))

  ;; sockaddr_un: family, path (NUL-terminated, at most 107 bytes)
  (define unix-path-max 107)
  (define (make-unix-address path-bytes)
    (let ([a (make-bytevector (fx+ 3 (bytevector-length path-bytes)) 0)])
      (bytevector-u16-native-set! a 0 af-unix)
      (bytevector-copy! path-bytes 0 a 2 (bytevector-length path-bytes))
      a))

  ;; A numeric IPv4 or IPv6 address text -> (family . raw bytes), or #f.
  (define (parse-address text)
    (let ([b4 (make-bytevector 4 0)] [b6 (make-bytevector 16 0)])
      (cond
        [(eqv? 1 (c-inet-pton af-inet text b4)) (cons af-inet b4)]
        [(eqv? 1 (c-inet-pton af-inet6 text b6)) (cons af-inet6 b6)]
        [else #f])))

  (define (address-family addr) (bytevector-u16-native-ref addr 0))

  (define (address-port addr)
    (if (memv (address-family addr) (list af-inet af-inet6))
        (bytevector-u16-ref addr 2 (endianness big))
        0))

  ;; The numeric host of an inet address, the path of a unix one.
  (define (address->string addr)
    (let ([family (address-family addr)])
      (cond
        [(or (fx= family af-inet) (fx= family af-inet6))
         (let* ([raw (if (fx= family af-inet)
                         (let ([b (make-bytevector 4)]) (bytevector-copy! addr 4 b 0 4) b)
                         (let ([b (make-bytevector 16)]) (bytevector-copy! addr 8 b 0 16) b))]
                [out (make-bytevector 64 0)])
           (c-inet-ntop family raw out 64)
           (let loop ([n 0])
             (if (fx= 0 (bytevector-u8-ref out n))
                 (utf8->string (let ([r (make-bytevector n)]) (bytevector-copy! out 0 r 0 n) r))
                 (loop (fx+ n 1)))))]
        [(fx= family af-unix)
         (let loop ([n 2])
           (if (or (fx= n (bytevector-length addr)) (fx= 0 (bytevector-u8-ref addr n)))
               (utf8->string (let ([r (make-bytevector (fx- n 2))]) (bytevector-copy! addr 2 r 0 (fx- n 2)) r))
               (loop (fx+ n 1))))]
        [else "?"])))

  ;; ---------------------------------------------------------------- names
  (define c-getaddrinfo (foreign-procedure __collect_safe "getaddrinfo" (uptr uptr uptr uptr) int))
  (define c-freeaddrinfo (foreign-procedure "freeaddrinfo" (uptr) void))
  (define c-gai-strerror (foreign-procedure "gai_strerror" (int) string))

  ;; The stream-socket addresses of a host name, as a list of
  ;; (family . raw address bytes), or an error text.  It may block for
  ;; long (it asks the resolver): run it with call-blocking.  The name is
  ;; passed in C memory, since the collector may run during the call.
  (define (lookup-host name)
    (let ([cname (c-string name)] [hints (foreign-alloc 48)] [res (foreign-alloc 8)])
      (do ([i 0 (fx+ i 8)]) ((fx= i 48)) (foreign-set! 'unsigned-64 hints i 0))
      (foreign-set! 'int hints 8 af-unspec)          ; ai_family
      (foreign-set! 'int hints 12 sock-stream)       ; ai_socktype
      (let ([r (c-getaddrinfo cname 0 hints res)])
        (foreign-free cname) (foreign-free hints)
        (if (not (eqv? r 0))
            (begin (foreign-free res) (c-gai-strerror r))
            (let ([head (foreign-ref 'uptr res 0)])
              (foreign-free res)
              (let loop ([ai head] [acc '()])
                (if (eqv? ai 0)
                    (begin (c-freeaddrinfo head) (reverse acc))
                    (let* ([family (foreign-ref 'int ai 4)] [sa (foreign-ref 'uptr ai 24)]
                           [raw (cond
                                  [(fx= family af-inet)
                                   (let ([b (make-bytevector 4)])
                                     (do ([i 0 (fx+ i 1)]) ((fx= i 4)) (bytevector-u8-set! b i (foreign-ref 'unsigned-8 sa (fx+ 4 i))))
                                     b)]
                                  [(fx= family af-inet6)
                                   (let ([b (make-bytevector 16)])
                                     (do ([i 0 (fx+ i 1)]) ((fx= i 16)) (bytevector-u8-set! b i (foreign-ref 'unsigned-8 sa (fx+ 8 i))))
                                     b)]
                                  [else #f])])
                      (loop (foreign-ref 'uptr ai 40)
                            (if (and raw (not (member (cons family raw) acc))) (cons (cons family raw) acc) acc))))))))))

  ;; ---------------------------------------------------------------- socket pairs
  (define c-socketpair (foreign-procedure "socketpair" (int int int u8*) int))
  (define c-sendmsg (foreign-procedure "sendmsg" (int uptr int) ssize_t))
  (define c-recvmsg (foreign-procedure "recvmsg" (int uptr int) ssize_t))

  ;; Two connected stream sockets, close-on-exec, blocking.
  (define (make-socket-pair who)
    (let* ([sv (make-bytevector 8 0)] [r (c-socketpair af-unix (fxior sock-stream o-cloexec) 0 sv)])
      (unless (eqv? r 0) (error who "socketpair failed (out of descriptors?)"))
      (values (bytevector-s32-native-ref sv 0) (bytevector-s32-native-ref sv 4))))

  ;; ---------------------------------------------------------------- messages
  ;; SCM_MAX_FD in Linux is 253.
  (define max-fds-per-message 253)
  (define control-space (+ 16 (* 4 max-fds-per-message) 4))

  ;; One scratch msghdr + iovec + control buffer per OS thread.  Thread
  ;; parameters are inherited by fork-thread, so the area is believed only
  ;; on the OS thread that made it.
  (define scratch (make-thread-parameter #f))
  (define (scratch-area)
    (let ([s (scratch)])
      (if (and s (fx= (car s) (get-thread-id)))
          (cdr s)
          (let ([a (foreign-alloc (+ 56 16 control-space))])
            (scratch (cons (get-thread-id) a))
            a))))

  (define (fill-msghdr! a buf len control controllen)
    (let ([iov (+ a 56)])
      (foreign-set! 'uptr iov 0 buf)
      (foreign-set! 'size_t iov 8 len)
      (foreign-set! 'uptr a 0 0)
      (foreign-set! 'unsigned-32 a 8 0)
      (foreign-set! 'uptr a 16 iov)
      (foreign-set! 'size_t a 24 1)
      (foreign-set! 'uptr a 32 control)
      (foreign-set! 'size_t a 40 controllen)
      (foreign-set! 'int a 48 0)))

  ;; Sends up to len bytes at address buf, with the descriptors fds (a list,
  ;; sent only if non-empty).  Never blocks when fd is non-blocking.
  ;; Returns the count sent, 'again, or 'closed (the peer is gone).
  (define (send-frame-chunk fd buf len fds)
    (with-interrupts-disabled
      (let* ([a (scratch-area)] [control (+ a 72)] [n (length fds)])
        (if (null? fds)
            (fill-msghdr! a buf len 0 0)
            (let ([clen (+ 16 (* 4 n))])
              (foreign-set! 'size_t control 0 clen)
              (foreign-set! 'int control 8 sol-socket)
              (foreign-set! 'int control 12 scm-rights)
              (let loop ([fds fds] [i 0])
                (unless (null? fds)
                  (foreign-set! 'int control (+ 16 (* 4 i)) (car fds))
                  (loop (cdr fds) (fx+ i 1))))
              (fill-msghdr! a buf len control (fxand (fx+ clen 7) (fxnot 7)))))
        (let retry ()
          (let ([r (c-sendmsg fd a msg-nosignal)])
            (if (fx>= r 0)
                r
                (let ([e (errno)])
                  (cond [(fx= e errno-intr) (retry)]
                        [(fx= e errno-again) 'again]
                        [else 'closed]))))))))

  ;; Receives up to len bytes into address buf.  Returns two values: the
  ;; count (0 means the peer closed), 'again or 'closed; and the list of
  ;; descriptors that came with the bytes.
  (define (recv-chunk fd buf len)
    (with-interrupts-disabled
      (let* ([a (scratch-area)] [control (+ a 72)])
        (fill-msghdr! a buf len control control-space)
        (let retry ()
          (let ([r (c-recvmsg fd a msg-cmsg-cloexec)])
            (cond
              [(fx>= r 0) (values r (collect-fds a control))]
              [else
               (let ([e (errno)])
                 (cond [(fx= e errno-intr) (retry)]
                       [(fx= e errno-again) (values 'again '())]
                       [else (values 'closed '())]))]))))))

  (define (collect-fds a control)
    (let ([total (foreign-ref 'size_t a 40)])
      (let loop ([off 0] [acc '()])
        (if (fx> (fx+ off 16) total)
            (reverse acc)
            (let* ([clen (foreign-ref 'size_t control off)]
                   [level (foreign-ref 'int control (fx+ off 8))]
                   [type (foreign-ref 'int control (fx+ off 12))])
              (if (fx< clen 16)
                  (reverse acc)
                  (loop (fx+ off (fxand (fx+ clen 7) (fxnot 7)))
                        (if (and (fx= level sol-socket) (fx= type scm-rights))
                            (let fds ([i 0] [acc acc])
                              (if (fx< i (fxquotient (fx- clen 16) 4))
                                  (fds (fx+ i 1) (cons (foreign-ref 'int control (fx+ off 16 (fx* 4 i))) acc))
                                  acc))
                            acc)))))))))
