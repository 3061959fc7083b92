#!chezscheme
;;; libc for descriptors: reads and writes into bytevectors, closing,
;;; pipes, descriptor flags, what a descriptor refers to, and directory
;;; locks.
;;;
;;; Calls that can fail return a negative errno instead of raising (see
;;; (spindle private os libc) `checked`).  sys-read and sys-write never
;;; block: the descriptors they are given are non-blocking, so they need
;;; not release the collector and a bytevector's address stays valid for
;;; the call.  The blocking-* calls are __collect_safe, for call-blocking's
;;; helpers, and see only C memory.
(library (spindle private os descriptors)
  (export sys-read sys-write sys-close close-fd
          blocking-open blocking-read blocking-write blocking-close
          o-rdonly o-wronly o-creat o-excl o-trunc o-append
          make-pipe make-nonblocking-pipe set-nonblocking! set-descriptor-blocking!
          set-pipe-capacity! pipe-capacity queued-input-count queued-output-count
          write-octet read-octet descriptor-inode try-lock-directory)
  (import (chezscheme) (spindle private os libc))

  (define loaded libc-loaded)   ; libc is loaded before the bindings below

  (define c-read (foreign-procedure "read" (int uptr size_t) ssize_t))
  (define c-write (foreign-procedure "write" (int uptr size_t) ssize_t))
  (define c-send (foreign-procedure "send" (int uptr size_t int) ssize_t))
  (define c-close (foreign-procedure "close" (int) int))
  (define c-pipe2 (foreign-procedure "pipe2" (u8* int) int))
  (define c-fcntl (foreign-procedure "fcntl" (int int int) int))
  (define c-ioctl-int (foreign-procedure "ioctl" (int unsigned-long u8*) int))
  (define c-fstat (foreign-procedure "fstat" (int uptr) int))
  (define c-open-path (foreign-procedure "open" (string int int) int))
  (define c-flock (foreign-procedure "flock" (int int) int))

  (define msg-nosignal #x4000)        ; MSG_NOSIGNAL
  (define f-getfl 3)                  ; F_GETFL
  (define f-setfl 4)                  ; F_SETFL
  (define f-setpipe-sz 1031)          ; F_SETPIPE_SZ
  (define f-getpipe-sz 1032)          ; F_GETPIPE_SZ
  (define fionread #x541B)            ; FIONREAD
  (define siocoutq #x5411)            ; SIOCOUTQ (= TIOCOUTQ)

  ;; open(2) flags (O_NONBLOCK and O_CLOEXEC are in libc).
  (define o-rdonly 0)
  (define o-wronly 1)
  (define o-creat #x40)
  (define o-excl #x80)
  (define o-trunc #x200)
  (define o-append #x400)
  (define o-directory #x10000)

  (define lock-ex 2)                  ; LOCK_EX
  (define lock-nb 4)                  ; LOCK_NB

  ;; ---------------------------------------------------------------- reading, writing
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
                   (checked (c-send fd (bytes-at bv start) n msg-nosignal))
                   (checked (c-write fd (bytes-at bv start) n)))])
        (if (fx= r (fx- 0 errno-intr)) (retry) r))))

  (define (sys-close fd) (checked (c-close fd)))
  (define (close-fd fd) (c-close fd) (void))

  ;; For call-blocking's helpers: the collector may run during them.
  (define blocking-open (foreign-procedure __collect_safe "open" (uptr int int) int))
  (define blocking-read (foreign-procedure __collect_safe "read" (int uptr size_t) ssize_t))
  (define blocking-write (foreign-procedure __collect_safe "write" (int uptr size_t) ssize_t))
  (define blocking-close (foreign-procedure __collect_safe "close" (int) int))

  ;; One byte to a descriptor (it may block: from C memory).
  (define (write-octet fd b)
    (let ([buf (foreign-alloc 1)])
      (foreign-set! 'unsigned-8 buf 0 b)
      (c-write fd buf 1)
      (foreign-free buf)
      (void)))

  ;; The next byte, or #f at end of file or on error.  It may block: it
  ;; reads C memory, which the collector does not move.
  (define (read-octet fd)
    (let* ([buf (foreign-alloc 1)] [r (c-read fd buf 1)] [b (and (eqv? r 1) (foreign-ref 'unsigned-8 buf 0))])
      (foreign-free buf)
      b))

  ;; ---------------------------------------------------------------- pipes, flags
  ;; A pipe (values read-end write-end), close-on-exec, blocking.
  (define (make-pipe who)
    (let* ([fds (make-bytevector 8 0)] [r (c-pipe2 fds o-cloexec)])
      (unless (eqv? r 0) (error who "pipe failed"))
      (values (bytevector-s32-native-ref fds 0) (bytevector-s32-native-ref fds 4))))

  ;; (values read-end write-end), both non-blocking and close-on-exec; or
  ;; (values -errno #f).
  (define (make-nonblocking-pipe)
    (let* ([fds (make-bytevector 8 0)] [r (checked (c-pipe2 fds (fxior o-nonblock o-cloexec)))])
      (if (fx< r 0)
          (values r #f)
          (values (bytevector-s32-native-ref fds 0) (bytevector-s32-native-ref fds 4)))))

  (define (set-descriptor-blocking! fd blocking?)
    (let ([flags (c-fcntl fd f-getfl 0)])
      (c-fcntl fd f-setfl (if blocking? (fxand flags (fxnot o-nonblock)) (fxior flags o-nonblock)))
      (void)))

  (define (set-nonblocking! fd) (set-descriptor-blocking! fd #f))

  ;; Makes the pipe hold at least n bytes (the kernel rounds up to a power
  ;; of two pages): the capacity, or -errno.
  (define (set-pipe-capacity! fd n) (checked (c-fcntl fd f-setpipe-sz n)))
  (define (pipe-capacity fd) (checked (c-fcntl fd f-getpipe-sz 0)))

  (define (int-ioctl fd request)
    (let ([v (make-bytevector 4 0)])
      (and (fx= 0 (checked (c-ioctl-int fd request v))) (bytevector-s32-native-ref v 0))))

  ;; Bytes waiting to be read from fd (a pipe or socket); #f if unknown.
  (define (queued-input-count fd) (int-ioctl fd fionread))
  ;; Bytes a socket has not sent yet; #f if unknown.
  (define (queued-output-count fd) (int-ioctl fd siocoutq))

  ;; The inode of what fd refers to: two descriptors of one socket share it.
  (define (descriptor-inode fd)
    (let* ([st (foreign-alloc 256)] [r (c-fstat fd st)] [ino (and (eqv? r 0) (foreign-ref 'unsigned-64 st 8))])
      (foreign-free st)
      ino))

  ;; An exclusive flock(2) on directory dir, not waiting: its descriptor
  ;; (close it to unlock; the kernel unlocks when the process ends), #f
  ;; while another descriptor holds the lock, or -errno.
  (define (try-lock-directory dir)
    (let ([fd (checked (c-open-path dir (fxior o-rdonly o-directory o-cloexec) 0))])
      (if (fx< fd 0)
          fd
          (let ([r (checked (c-flock fd (fxior lock-ex lock-nb)))])
            (cond
              [(fx= r 0) fd]
              [else (c-close fd) (if (fx= r (fx- 0 errno-again)) #f r)]))))))
