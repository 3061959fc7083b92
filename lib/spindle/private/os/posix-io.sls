#!chezscheme
;;; libc for I/O on descriptors: non-blocking reads and writes into
;;; bytevectors, sockets (IPv4, IPv6, Unix), eventfd, epoll with a
;;; sub-millisecond timeout, and error texts.  Layouts are those of x86-64
;;; and aarch64 Linux with glibc.
;;;
;;; Calls that can fail return a negative errno instead of raising, and
;;; read errno right after the call with interrupts disabled (nothing can
;;; allocate or collect in between).  None of these calls blocks: every
;;; descriptor they are given is non-blocking, so none needs to release
;;; the collector, and a bytevector's address stays valid for the call.
(library (spindle private os posix-io)
  (export sys-read sys-write sys-close sys-shutdown sys-strerror
          foreign->bytevector! bytevector->foreign!
          errno-again errno-intr errno-inprogress
          make-nonblocking-socket sys-bind sys-listen sys-accept sys-connect
          socket-error sys-set-socket-option! socket-local-address socket-peer-address
          make-inet-address make-inet6-address make-unix-address parse-address
          address-family address->string address-port unix-path-max
          af-inet af-inet6 af-unix
          make-eventfd eventfd-signal! eventfd-drain!
          epoll-wait/timeout epoll-watch-edges! epoll-unwatch! epoll-watch-level! epoll-change-level!
          make-nonblocking-pipe set-descriptor-blocking! set-pipe-capacity! lookup-host
          descriptor-writable? descriptor-output-room)
  (import (chezscheme) (only (spindle private os unix) c-string free))

  (define libc-loaded (begin (load-shared-object "libc.so.6") #t))

  (define c-errno-location (foreign-procedure "__errno_location" () uptr))
  (define (errno) (foreign-ref 'int (c-errno-location) 0))

  (define errno-again 11)
  (define errno-intr 4)
  (define errno-inprogress 115)

  ;; A call's result, or minus errno when it is negative.
  (define-syntax checked
    (syntax-rules ()
      [(_ call) (with-interrupts-disabled
                  (let ([r call]) (if (fx< r 0) (fx- 0 (errno)) r)))]))

  (define c-read (foreign-procedure "read" (int uptr size_t) ssize_t))
  (define c-write (foreign-procedure "write" (int uptr size_t) ssize_t))
  (define c-send (foreign-procedure "send" (int uptr size_t int) ssize_t))
  (define c-close (foreign-procedure "close" (int) int))
  (define c-shutdown (foreign-procedure "shutdown" (int int) int))
  (define c-strerror (foreign-procedure "strerror" (int) string))

  ;; The address of byte i of bytevector bv; only valid until the next
  ;; interrupt check (a collection may move bv), so used inside `checked`.
  (define-syntax bytes-at
    (syntax-rules () [(_ bv i) (#%$object-address bv (fx+ 9 i))]))

  (define (check-range who bv start n)
    (unless (and (bytevector? bv) (fixnum? start) (fixnum? n) (fx>= start 0) (fx>= n 0)
                 (fx<= (fx+ start n) (bytevector-length bv)))
      (assertion-violation who "bad buffer range" start n)))

  ;; Up to n bytes into bv at start: count, 0 at end of file, or -errno.
  (define (sys-read fd bv start n)
    (check-range 'sys-read bv start n)
    (let retry ()
      (let ([r (checked (c-read fd (bytes-at bv start) n))])
        (if (fx= r (fx- 0 errno-intr)) (retry) r))))

  ;; Up to n bytes of bv from start: count or -errno.  On a socket it never
  ;; raises SIGPIPE (a vanished peer gives -EPIPE).
  (define (sys-write fd bv start n socket?)
    (check-range 'sys-write bv start n)
    (let retry ()
      (let ([r (if socket?
                   (checked (c-send fd (bytes-at bv start) n #x4000))   ; MSG_NOSIGNAL
                   (checked (c-write fd (bytes-at bv start) n)))])
        (if (fx= r (fx- 0 errno-intr)) (retry) r))))

  (define c-memcpy (foreign-procedure "memcpy" (uptr uptr size_t) uptr))

  ;; n bytes between C memory at addr and bv at start.
  (define (foreign->bytevector! addr bv start n)
    (check-range 'foreign->bytevector! bv start n)
    (with-interrupts-disabled (c-memcpy (bytes-at bv start) addr n))
    (void))
  (define (bytevector->foreign! bv start addr n)
    (check-range 'bytevector->foreign! bv start n)
    (with-interrupts-disabled (c-memcpy addr (bytes-at bv start) n))
    (void))

  (define (sys-close fd) (checked (c-close fd)))
  ;; how: 0 read side, 1 write side, 2 both
  (define (sys-shutdown fd how) (checked (c-shutdown fd how)))
  (define (sys-strerror e) (c-strerror (abs e)))

  ;; ---------------------------------------------------------------- sockets
  (define af-unix 1)
  (define af-inet 2)
  (define af-inet6 10)
  (define sock-stream 1)
  (define sock-nonblock #x800)
  (define sock-cloexec #x80000)

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
    (checked (c-socket family (fxior sock-stream sock-nonblock sock-cloexec) 0)))

  ;; Addresses are sockaddr bytevectors (sockaddr_in, _in6 or _un).
  (define (sys-bind fd addr) (checked (c-bind fd addr (bytevector-length addr))))
  (define (sys-listen fd backlog) (checked (c-listen fd backlog)))
  (define (sys-connect fd addr) (checked (c-connect fd addr (bytevector-length addr))))

  ;; A non-blocking, close-on-exec connected socket, or -errno.
  (define (sys-accept fd)
    (let retry ()
      (let ([r (checked (c-accept4 fd #f #f (fxior sock-nonblock sock-cloexec)))])
        (if (fx= r (fx- 0 errno-intr)) (retry) r))))

  ;; The pending error of a socket (SO_ERROR): 0 or an errno.
  (define (socket-error fd)
    (let ([v (make-bytevector 4 0)] [len (make-bytevector 4 0)])
      (bytevector-s32-native-set! len 0 4)
      (c-getsockopt fd 1 4 v len)                     ; SOL_SOCKET, SO_ERROR
      (bytevector-s32-native-ref v 0)))

  ;; option: 'reuse-address, 'no-delay or 'keep-alive; on?: boolean.
  (define (sys-set-socket-option! fd option on?)
    (let ([v (make-bytevector 4 0)])
      (bytevector-s32-native-set! v 0 (if on? 1 0))
      (case option
        [(reuse-address) (checked (c-setsockopt fd 1 2 v 4))]      ; SOL_SOCKET SO_REUSEADDR
        [(keep-alive) (checked (c-setsockopt fd 1 9 v 4))]         ; SO_KEEPALIVE
        [(no-delay) (checked (c-setsockopt fd 6 1 v 4))]           ; IPPROTO_TCP TCP_NODELAY
        [(v6-only) (checked (c-setsockopt fd 41 26 v 4))]          ; IPPROTO_IPV6 IPV6_V6ONLY
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
  (define (make-inet-address ip4 port)
    (let ([a (make-bytevector 16 0)])
      (bytevector-u16-native-set! a 0 af-inet)
      (bytevector-u16-set! a 2 port (endianness big))
      (bytevector-copy! ip4 0 a 4 4)
      a))

  ;; sockaddr_in6: family, port, flowinfo (4), address (16), scope id (4)
  (define (make-inet6-address ip6 port)
    (let ([a (make-bytevector 28 0)])
      (bytevector-u16-native-set! a 0 af-inet6)
      (bytevector-u16-set! a 2 port (endianness big))
      (bytevector-copy! ip6 0 a 8 16)
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
      (foreign-set! 'int hints 8 0)                  ; ai_family AF_UNSPEC
      (foreign-set! 'int hints 12 sock-stream)       ; ai_socktype
      (let ([r (c-getaddrinfo cname 0 hints res)])
        (free cname) (foreign-free hints)
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

  ;; ---------------------------------------------------------------- pipes
  (define c-pipe2 (foreign-procedure "pipe2" (u8* int) int))
  (define c-fcntl (foreign-procedure "fcntl" (int int int) int))

  ;; (values read-end write-end), both non-blocking and close-on-exec; or
  ;; (values -errno #f).
  (define (make-nonblocking-pipe)
    (let* ([fds (make-bytevector 8 0)] [r (checked (c-pipe2 fds (fxior #x800 #x80000)))])
      (if (fx< r 0)
          (values r #f)
          (values (bytevector-s32-native-ref fds 0) (bytevector-s32-native-ref fds 4)))))

  ;; Makes the pipe hold at least n bytes (F_SETPIPE_SZ; the kernel rounds
  ;; up to a power of two pages): the capacity, or -errno.
  (define (set-pipe-capacity! fd n) (checked (c-fcntl fd 1031 n)))

  (define (set-descriptor-blocking! fd blocking?)
    (let ([flags (c-fcntl fd 3 0)])                  ; F_GETFL
      (c-fcntl fd 4 (if blocking? (fxand flags (fxnot #x800)) (fxior flags #x800)))
      (void)))

  ;; ---------------------------------------------------------------- output readiness
  (define c-poll (foreign-procedure "poll" (u8* unsigned-long int) int))
  (define c-ioctl-int (foreign-procedure "ioctl" (int unsigned-long u8*) int))

  ;; #t if a write to fd would take bytes now, or would fail at once (an
  ;; error or hang-up): poll(2) with no timeout, not the last epoll edge.
  (define (descriptor-writable? fd)
    (let ([pfd (make-bytevector 8 0)])
      (bytevector-s32-native-set! pfd 0 fd)
      (bytevector-s16-native-set! pfd 4 4)                  ; POLLOUT
      (and (fx= 1 (checked (c-poll pfd 1 0)))
           (fxlogtest (bytevector-s16-native-ref pfd 6) (fxior 4 8 16 32)))))  ; OUT ERR HUP NVAL

  (define (int-ioctl fd request)
    (let ([v (make-bytevector 4 0)])
      (and (fx= 0 (checked (c-ioctl-int fd request v))) (bytevector-s32-native-ref v 0))))

  ;; A lower bound on the bytes a non-blocking write to fd takes now
  ;; (kind 'pipe or 'socket), estimated from the kernel's counts: the free
  ;; space of its buffer (a pipe: F_GETPIPE_SZ less FIONREAD; a socket:
  ;; SO_SNDBUF less SIOCOUTQ), less what the kernel's own bookkeeping may
  ;; take (two partly used pages of a pipe; half of a socket's free space,
  ;; for the buffers' overhead).  An empty buffer gives its whole size.
  ;; #f if the counts cannot be read.
  (define (descriptor-output-room fd kind)
    (if (eq? kind 'pipe)
        (let ([cap (checked (c-fcntl fd 1032 0))] [used (int-ioctl fd #x541B)])   ; F_GETPIPE_SZ, FIONREAD
          (and (fx> cap 0) used
               (if (fx= used 0) cap (fxmax 0 (fx- (fx- cap used) 8192)))))
        (let ([v (make-bytevector 4 0)] [len (make-bytevector 4 0)] [queued (int-ioctl fd #x5411)])  ; SIOCOUTQ
          (bytevector-s32-native-set! len 0 4)
          (and queued
               (fx= 0 (checked (c-getsockopt fd 1 7 v len)))      ; SOL_SOCKET, SO_SNDBUF
               (let ([size (bytevector-s32-native-ref v 0)])
                 (if (fx= queued 0) size (fxmax 0 (fxquotient (fx- size queued) 2))))))))

  ;; ---------------------------------------------------------------- eventfd, epoll
  (define c-eventfd (foreign-procedure "eventfd" (unsigned int) int))

  ;; A non-blocking, close-on-exec eventfd.
  (define (make-eventfd)
    (let ([fd (c-eventfd 0 (fxior #x800 #x80000))])
      (when (fx< fd 0) (error 'make-eventfd "eventfd failed"))
      fd))

  (define one (let ([b (make-bytevector 8 0)]) (bytevector-u64-native-set! b 0 1) b))
  (define (eventfd-signal! fd) (with-interrupts-disabled (c-write fd (bytes-at one 0) 8)) (void))
  (define (eventfd-drain! fd)
    (let ([b (make-bytevector 8)]) (with-interrupts-disabled (c-read fd (bytes-at b 0) 8)) (void)))

  (define c-epoll-ctl (foreign-procedure "epoll_ctl" (int int int u8*) int))
  (define c-epoll-pwait2 (foreign-procedure __collect_safe "epoll_pwait2" (int uptr int uptr uptr) int))

  ;; epoll_event is packed: 4 bytes of events, 8 of data (the fd here).
  (define (epoll-ctl! ep op fd mask)
    (let ([ev (make-bytevector 12 0)])
      (bytevector-u32-native-set! ev 0 mask)
      (bytevector-s32-native-set! ev 4 fd)
      (checked (c-epoll-ctl ep op fd ev))))

  ;; EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET: both directions, reported when
  ;; they become ready.  -errno if fd cannot be watched (a regular file:
  ;; -EPERM).
  (define (epoll-watch-edges! ep fd) (epoll-ctl! ep 1 fd (fxior 1 4 #x2000 #x80000000)))
  ;; Level-triggered, for mask (EPOLLIN 1, EPOLLOUT 4; errors and hang-ups
  ;; are always reported).
  (define (epoll-watch-level! ep fd mask) (epoll-ctl! ep 1 fd mask))
  (define (epoll-change-level! ep fd mask) (epoll-ctl! ep 3 fd mask))
  (define (epoll-unwatch! ep fd) (epoll-ctl! ep 2 fd 0))

  ;; Waits at most ms milliseconds (a flonum; #f = no limit) with the
  ;; collector released; buf holds max events.  Returns a list of
  ;; (fd . mask).
  (define (epoll-wait/timeout ep buf max ms)
    (let ([n (if ms
                 (let ([ts (foreign-alloc 16)] [ns (flonum->fixnum (flceiling (fl* (flmin ms 1e9) 1e6)))])
                   (foreign-set! 'long ts 0 (fxquotient ns 1000000000))
                   (foreign-set! 'long ts 8 (fxremainder ns 1000000000))
                   (let ([n (c-epoll-pwait2 ep buf max ts 0)]) (foreign-free ts) n))
                 (c-epoll-pwait2 ep buf max 0 0))])
      (let loop ([i (fx- n 1)] [acc '()])
        (if (fx< i 0)
            acc
            (loop (fx- i 1)
                  (cons (cons (foreign-ref 'int buf (fx+ (fx* i 12) 4))
                              (foreign-ref 'unsigned-32 buf (fx* i 12)))
                        acc)))))))
