#!chezscheme
;;; Console ports over descriptors 0, 1 and 2 that park the green thread
;;; instead of blocking its OS thread.
;;;
;;; The descriptors are shared with the parent shell, so they keep their
;;; blocking mode (O_NONBLOCK is never set).  Instead the poller watches
;;; their readiness (epoll works on pipes, sockets and ttys): a read first
;;; asks poll(2) with a zero timeout whether a read would return at once,
;;; and parks on the poller until it would; then a plain read(2).  A write
;;; waits for writability the same way and writes at most PIPE_BUF bytes,
;;; which a writable pipe always takes without blocking.  A regular file
;;; or /dev/null (which epoll refuses) is always ready: its reads and
;;; writes are plain calls.  (If another process drains the same tty or
;;; pipe between the poll and the read, the read blocks its OS thread
;;; until data comes: the descriptor is shared, and that cannot be helped
;;; without O_NONBLOCK.)
;;;
;;; The textual ports are UTF-8, synchronized and buffered: flush them (flush-output-port)
;;; before exiting, as Chez flushes only its own console ports at exit.
(library (spindle console)
  (export stdin-port stdout-port stderr-port binary-console-port
          install-console-ports! console-port-descriptor)
  (import (chezscheme) (spindle private poller) (spindle private posix-io)
          (only (spindle private fd-port) raise-os-error)
          (only (spindle synchronized-port) make-synchronized-port))

  (define libc-loaded (begin (load-shared-object "libc.so.6") #t))
  (define c-poll (foreign-procedure "poll" (u8* unsigned-long int) int))

  ;; #t if fd is ready now for dir ('read: POLLIN; 'write: POLLOUT; an
  ;; error or hang-up counts as ready, the call then reports it).
  (define (ready-now? fd dir)
    (let ([pfd (make-bytevector 8 0)])
      (bytevector-s32-native-set! pfd 0 fd)
      (bytevector-s16-native-set! pfd 4 (if (eq? dir 'read) 1 4))
      (and (fx> (c-poll pfd 1 0) 0)
           (not (fx= 0 (bytevector-s16-native-ref pfd 6))))))

  (define pipe-buf 4096)

  (define (wait-ready rec fd dir)
    (let loop ()
      (let ([seq (fd-seq rec dir)])
        (unless (ready-now? fd dir)
          (fd-idle! rec dir seq)
          (fd-wait! rec dir)
          (loop)))))

  (define (console-read! who rec fd bv start n)
    (let loop ()
      (wait-ready rec fd 'read)
      (let ([r (sys-read fd bv start n)])
        (cond
          [(fx>= r 0) r]
          [(fx= r (fx- 0 errno-again)) (loop)]   ; a non-blocking tty set by someone else
          [else (raise-os-error who r 'read fd)]))))

  (define (console-write! who rec fd bv start n)
    (let loop ()
      (wait-ready rec fd 'write)
      (let ([r (sys-write fd bv start (fxmin n pipe-buf) #f)])
        (cond
          [(fx> r 0) r]
          [(or (fx= r 0) (fx= r (fx- 0 errno-again))) (loop)]
          [else (raise-os-error who r 'write fd)]))))

  (define lock (make-mutex))
  (define binary-ports (make-vector 3 #f))
  (define textual-ports (make-vector 3 #f))
  (define descriptors (make-weak-eq-hashtable))   ; port -> fd

  ;; The binary console port of descriptor 0, 1 or 2 (made once).
  (define (binary-console-port fd)
    (unless (memv fd '(0 1 2)) (assertion-violation 'binary-console-port "expected 0, 1 or 2" fd))
    (with-interrupts-disabled
      (with-mutex lock
        (or (vector-ref binary-ports fd)
            (let* ([rec (fd-watch fd)]
                   [name (vector-ref '#("stdin" "stdout" "stderr") fd)]
                   [p (if (fx= fd 0)
                          (make-custom-binary-input-port name
                            (lambda (bv start n) (console-read! 'read rec fd bv start n)) #f #f #f)
                          (make-custom-binary-output-port name
                            (lambda (bv start n) (console-write! 'write rec fd bv start n)) #f #f #f))])
              (vector-set! binary-ports fd p)
              (hashtable-set! descriptors p fd)
              p)))))

  (define (textual fd)
    (let ([b (binary-console-port fd)])
      (with-interrupts-disabled
        (with-mutex lock
          (or (vector-ref textual-ports fd)
              ;; synchronized ('parking: the binary port parks), so that
              ;; threads on several OS threads may share it and
              ;; with-port-lock keeps a line together
              (let ([p (make-synchronized-port
                         (transcoded-port b (make-transcoder (utf-8-codec) (eol-style lf)
                                                             (error-handling-mode replace)))
                         'parking)])
                (vector-set! textual-ports fd p)
                (hashtable-set! descriptors p fd)
                p))))))

  ;; UTF-8 textual ports over 0, 1, 2.
  (define (stdin-port) (textual 0))
  (define (stdout-port) (textual 1))
  (define (stderr-port) (textual 2))

  ;; Makes them the current input, output and error ports (Chez's console
  ;; ports are flushed first).
  (define (install-console-ports!)
    (flush-output-port (console-output-port))
    (flush-output-port (console-error-port))
    (current-input-port (stdin-port))
    (current-output-port (stdout-port))
    (current-error-port (stderr-port)))

  ;; 0, 1 or 2 for a port of this library, else #f.
  (define (console-port-descriptor p)
    (with-interrupts-disabled (with-mutex lock (hashtable-ref descriptors p #f)))))
