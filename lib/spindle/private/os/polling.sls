#!chezscheme
;;; libc for readiness: epoll (the poller's, (spindle private io poller)),
;;; eventfd (its kick, and a place ring's signals), and poll(2) for one
;;; look at a descriptor or a blocking wait outside the poller.
(library (spindle private os polling)
  (export epoll-in epoll-out epoll-rdhup epoll-hangup-mask make-epoll
          epoll-wait/timeout epoll-watch-edges! epoll-unwatch! epoll-watch-level! epoll-change-level!
          make-eventfd eventfd-signal! eventfd-drain! ppoll-readable
          poll-in poll-out poll-now poll-wait-blocking poll-readable
          descriptor-writable? descriptor-output-room)
  (import (chezscheme) (spindle private os libc)
          (only (spindle private os descriptors) pipe-capacity queued-input-count queued-output-count)
          (only (spindle private os sockets) socket-send-buffer-size))

  (define loaded libc-loaded)   ; libc is loaded before the bindings below

  (define c-read (foreign-procedure "read" (int uptr size_t) ssize_t))
  (define c-write (foreign-procedure "write" (int uptr size_t) ssize_t))

  ;; ---------------------------------------------------------------- event bits
  (define epoll-in 1)                 ; EPOLLIN
  (define epoll-out 4)                ; EPOLLOUT
  (define epoll-err 8)                ; EPOLLERR
  (define epoll-hup #x10)             ; EPOLLHUP
  (define epoll-rdhup #x2000)         ; EPOLLRDHUP
  (define epoll-et #x80000000)        ; EPOLLET
  (define epoll-hangup-mask (fxior epoll-err epoll-hup))
  (define epoll-ctl-add 1)
  (define epoll-ctl-del 2)
  (define epoll-ctl-mod 3)

  (define poll-in 1)                  ; POLLIN
  (define poll-out 4)                 ; POLLOUT
  (define poll-err 8)
  (define poll-hup 16)
  (define poll-nval 32)

  (define c-epoll-create1 (foreign-procedure "epoll_create1" (int) int))

  ;; A close-on-exec epoll instance, or -errno.
  (define (make-epoll) (checked (c-epoll-create1 o-cloexec)))

  ;; ---------------------------------------------------------------- poll
  (define c-poll (foreign-procedure "poll" (u8* unsigned-long int) int))
  (define c-poll-blocking (foreign-procedure __collect_safe "poll" (uptr unsigned-long int) int))

  ;; One look, no waiting: the events of mask (poll-in, poll-out) that fd
  ;; has now, with poll-err, poll-hup or poll-nval if they hold; 0 if none.
  (define (poll-now fd mask)
    (let ([pfd (make-bytevector 8 0)])
      (bytevector-s32-native-set! pfd 0 fd)
      (bytevector-s16-native-set! pfd 4 mask)
      (if (fx> (c-poll pfd 1 0) 0)
          (bytevector-s16-native-ref pfd 6)
          0)))

  ;; Waits in poll(2), with the collector released, until fd has one of
  ;; mask (or an error or hang-up).
  (define (poll-wait-blocking fd mask)
    (let ([pfd (foreign-alloc 8)])
      (foreign-set! 'int pfd 0 fd)
      (foreign-set! 'short pfd 4 mask)
      (foreign-set! 'short pfd 6 0)
      (c-poll-blocking pfd 1 -1)
      (foreign-free pfd)))

  ;; Blocks, with the collector released, until one of fds is readable (or hung up); returns those fds.
  (define (poll-readable fds)
    (let* ([n (length fds)] [a (foreign-alloc (max 8 (* 8 n)))])
      (let loop ([l fds] [i 0])
        (unless (null? l)
          (foreign-set! 'int a (* 8 i) (car l))
          (foreign-set! 'short a (+ (* 8 i) 4) poll-in)
          (foreign-set! 'short a (+ (* 8 i) 6) 0)
          (loop (cdr l) (+ i 1))))
      (c-poll-blocking a n -1)
      (let loop ([l fds] [i 0] [acc '()])
        (if (null? l)
            (begin (foreign-free a) (reverse acc))
            (loop (cdr l) (+ i 1)
                  (if (fx= 0 (foreign-ref 'short a (+ (* 8 i) 6))) acc (cons (car l) acc)))))))

  ;; ---------------------------------------------------------------- output readiness
  ;; #t if a write to fd would take bytes now, or would fail at once (an
  ;; error or hang-up): poll(2) with no timeout, not the last epoll edge.
  (define (descriptor-writable? fd)
    (fxlogtest (poll-now fd poll-out) (fxior poll-out poll-err poll-hup poll-nval)))

  ;; A lower bound on the bytes a non-blocking write to fd takes now
  ;; (kind 'pipe or 'socket), estimated from the kernel's counts: the free
  ;; space of its buffer (a pipe: its capacity less the bytes queued; a
  ;; socket: SO_SNDBUF less SIOCOUTQ), less what the kernel's own
  ;; bookkeeping may take (two partly used pages of a pipe; half of a
  ;; socket's free space, for the buffers' overhead).  An empty buffer
  ;; gives its whole size.  #f if the counts cannot be read.
  (define pipe-bookkeeping 8192)
  (define (descriptor-output-room fd kind)
    (if (eq? kind 'pipe)
        (let ([cap (pipe-capacity fd)] [used (queued-input-count fd)])
          (and (fx> cap 0) used
               (if (fx= used 0) cap (fxmax 0 (fx- (fx- cap used) pipe-bookkeeping)))))
        (let ([queued (queued-output-count fd)])
          (and queued
               (let ([size (socket-send-buffer-size fd)])
                 (and size
                      (if (fx= queued 0) size (fxmax 0 (fxquotient (fx- size queued) 2)))))))))

  ;; ---------------------------------------------------------------- eventfd, epoll
  (define c-eventfd (foreign-procedure "eventfd" (unsigned int) int))

  ;; A non-blocking, close-on-exec eventfd.
  ;; A non-blocking eventfd; semaphore?: each read takes one from its count
  ;; (EFD_SEMAPHORE) instead of all of it.
  (define make-eventfd
    (case-lambda
      [() (make-eventfd #f)]
      [(semaphore?)
       (let ([fd (c-eventfd 0 (fxior o-nonblock o-cloexec (if semaphore? 1 0)))])
         (when (fx< fd 0) (error 'make-eventfd "eventfd failed"))
         fd)]))

  (define eventfd-one (let ([b (make-bytevector 8 0)]) (bytevector-u64-native-set! b 0 1) b))
  (define (eventfd-signal! fd) (with-interrupts-disabled (c-write fd (bytes-at eventfd-one 0) 8)) (void))
  ;; #t if it took something (a count, or one of it in semaphore mode).
  (define (eventfd-drain! fd)
    (let ([b (make-bytevector 8)]) (eqv? 8 (with-interrupts-disabled (c-read fd (bytes-at b 0) 8)))))

  ;; A struct timespec of ms milliseconds (a flonum, at most 1e9 s), in
  ;; foreign memory for the caller to free.
  (define (relative-timespec ms)
    (let ([ts (foreign-alloc 16)] [ns (flonum->fixnum (flceiling (fl* (flmin ms 1e9) 1e6)))])
      (foreign-set! 'long ts 0 (fxquotient ns 1000000000))
      (foreign-set! 'long ts 8 (fxremainder ns 1000000000))
      ts))

  ;; Waits until fd is readable, at most ms milliseconds (#f = no limit),
  ;; with the collector released and the signal mask at sigmask for the
  ;; wait.  #t if fd is readable.
  (define (ppoll-readable fd ms sigmask)
    (let ([pfd (foreign-alloc 8)] [ts (if ms (relative-timespec ms) 0)])
      (foreign-set! 'int pfd 0 fd)
      (foreign-set! 'short pfd 4 poll-in)
      (foreign-set! 'short pfd 6 0)
      (let ([n (c-ppoll pfd 1 ts sigmask)])
        (foreign-free pfd)
        (unless (eqv? ts 0) (foreign-free ts))
        (fx> n 0))))
  (define c-ppoll (foreign-procedure __collect_safe "ppoll" (uptr unsigned-long uptr uptr) int))

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
  (define (epoll-watch-edges! ep fd)
    (epoll-ctl! ep epoll-ctl-add fd (fxior epoll-in epoll-out epoll-rdhup epoll-et)))
  ;; Level-triggered, for mask (epoll-in, epoll-out; errors and hang-ups
  ;; are always reported).
  (define (epoll-watch-level! ep fd mask) (epoll-ctl! ep epoll-ctl-add fd mask))
  (define (epoll-change-level! ep fd mask) (epoll-ctl! ep epoll-ctl-mod fd mask))
  (define (epoll-unwatch! ep fd) (epoll-ctl! ep epoll-ctl-del fd 0))

  ;; Waits at most ms milliseconds (a flonum; #f = no limit) with the
  ;; collector released; buf holds max events; sigmask is the address of
  ;; the signal mask to wait with, or 0 for the thread's own.  Returns a
  ;; list of (fd . mask) (empty when a signal interrupted the wait).
  (define (epoll-wait/timeout ep buf max ms sigmask)
    (let ([n (if ms
                 (let ([ts (relative-timespec ms)])
                   (let ([n (c-epoll-pwait2 ep buf max ts sigmask)]) (foreign-free ts) n))
                 (c-epoll-pwait2 ep buf max 0 sigmask))])
      (let loop ([i (fx- n 1)] [acc '()])
        (if (fx< i 0)
            acc
            (loop (fx- i 1)
                  (cons (cons (foreign-ref 'int buf (fx+ (fx* i 12) 4))
                              (foreign-ref 'unsigned-32 buf (fx* i 12)))
                        acc)))))))
