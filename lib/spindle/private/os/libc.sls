#!chezscheme
;;; What every libc binding shares: loading libc, errno, and the named
;;; errno values spindle tests for.  The other libraries of this folder
;;; bind libc by OS concept (descriptors, sockets, processes, memory,
;;; signals, polling, OS threads, the clock); no library outside it names
;;; a libc function.  Layouts are those of x86-64 and aarch64 Linux with
;;; glibc (64-bit pointers, size_t and long).
;;;
;;; errno is read right after the failing call, before anything else can
;;; allocate, with interrupts disabled (a collection could overwrite it):
;;; `checked` does both.
(library (spindle private os libc)
  (export libc-loaded errno checked bytes-at check-range sys-strerror
          errno-intr errno-again errno-inprogress errno-connrefused
          o-nonblock o-cloexec)
  (import (chezscheme) (only (spindle private host objects) bytevector-data-address))

  (define libc-loaded (begin (load-shared-object "libc.so.6") #t))

  (define c-errno-location (foreign-procedure "__errno_location" () uptr))
  (define (errno) (foreign-ref 'int (c-errno-location) 0))

  (define errno-intr 4)               ; EINTR
  (define errno-again 11)             ; EAGAIN (= EWOULDBLOCK)
  (define errno-connrefused 111)      ; ECONNREFUSED
  (define errno-inprogress 115)       ; EINPROGRESS

  ;; Open-file flags, shared by the calls that take them (pipe2, socket,
  ;; accept4, eventfd, signalfd: their NONBLOCK and CLOEXEC are these).
  (define o-nonblock #x800)           ; O_NONBLOCK
  (define o-cloexec #x80000)          ; O_CLOEXEC

  ;; A call's result, or minus errno when it is negative.
  (define-syntax checked
    (syntax-rules ()
      [(_ call) (with-interrupts-disabled
                  (let ([r call]) (if (fx< r 0) (fx- 0 (errno)) r)))]))

  ;; The address of byte i of bytevector bv; only valid until the next
  ;; interrupt check (a collection may move bv), so used inside `checked`
  ;; or with interrupts disabled.
  (define-syntax bytes-at
    (syntax-rules () [(_ bv i) (bytevector-data-address bv i)]))

  (define (check-range who bv start n)
    (unless (and (bytevector? bv) (fixnum? start) (fixnum? n) (fx>= start 0) (fx>= n 0)
                 (fx<= (fx+ start n) (bytevector-length bv)))
      (assertion-violation who "bad buffer range" start n)))

  (define c-strerror (foreign-procedure "strerror" (int) string))

  ;; The OS text of errno e (or of -e).
  (define (sys-strerror e) (c-strerror (abs e))))
