#!chezscheme
;;; Console ports over descriptors 0, 1 and 2 that park the green thread
;;; instead of blocking its OS thread; loading this library makes them the
;;; console and current ports.
;;;
;;; Why: Chez's console input port holds off every collection while it
;;; waits in read(2), so a thread reading stdin the default way stopped
;;; every other thread that allocates, parallel ones included.
;;;
;;; The descriptors are shared with the parent shell, so they keep their
;;; blocking mode (O_NONBLOCK is never set).  Instead a read first asks
;;; poll(2) with a zero timeout whether a read would return at once, and
;;; parks on the poller until it would; then a plain read(2).  A write
;;; waits for writability the same way and writes at most PIPE_BUF bytes,
;;; which a writable pipe always takes without blocking.  A regular file
;;; or /dev/null is always ready: its reads and writes are plain calls.
;;; (If another process drains the same tty or pipe between the poll and
;;; the read, the read blocks its OS thread until data comes: the
;;; descriptor is shared, and that cannot be helped without O_NONBLOCK.)
;;;
;;; Invariants:
;;; - The poller's record of a descriptor is made on the first wait, per
;;;   process: the place template loads this library and forks places, and
;;;   must hold no epoll instance; a fork makes its own records.
;;; - A thread that cannot park (interrupts disabled: a poller handler
;;;   reporting an error) and the exit hook wait in a blocking poll(2)
;;;   instead.  The exit hook runs inside a C atexit call, where a switch
;;;   to another thread's continuation would leave that C frame.
;;; - The textual ports are UTF-8 and synchronized ('parking): threads on
;;;   several OS threads may share them, one operation is atomic, and
;;;   with-port-lock keeps a line together.  Output is flushed after each
;;;   newline, as Chez's console does, and reading stdin first flushes
;;;   stdout and stderr; at exit the hook below flushes what is left.
(library (spindle private impl console)
  (export stdin-port stdout-port stderr-port binary-console-port
          install-console-ports! console-port-descriptor)
  (import (chezscheme) (only (spindle private core atomic) with-os-mutex) (spindle private io poller)
          (only (spindle private os descriptors) sys-read sys-write)
          (only (spindle private os libc) errno-again)
          (only (spindle private os processes) own-pid)
          (only (spindle private core exit-hooks) add-exit-hook!)
          (only (spindle private os polling) poll-in poll-out poll-now poll-wait-blocking)
          
          (only (spindle private io fd-port) raise-os-error)
          (only (spindle private impl synchronized-port) make-synchronized-console-port))

  (define (poll-events dir) (if (eq? dir 'read) poll-in poll-out))

  ;; #t if fd is ready now for dir (an error or hang-up counts as ready:
  ;; the call then reports it).
  (define (ready-now? fd dir) (not (fx= 0 (poll-now fd (poll-events dir)))))

  ;; Waits in poll(2) with the collector released.
  (define (wait-blocking fd dir) (poll-wait-blocking fd (poll-events dir)))

  ;; ---------------------------------------------------------------- records
  ;; The poller's records of 0, 1 and 2, made on first need in this process.
  (define records (make-vector 3 #f))
  (define records-pid #f)
  (define records-lock (make-mutex))

  (define (record-of fd)
    (with-os-mutex records-lock
      (let ([pid (own-pid)])
        (unless (eqv? pid records-pid)
          (set! records (make-vector 3 #f))
          (set! records-pid pid))
        (or (vector-ref records fd)
            (let ([rec (fd-watch fd)])
              (vector-set! records fd rec)
              rec)))))

  (define exiting? #f)

  (define (can-park?)
    (and (not exiting?)
         (let ([depth (disable-interrupts)])
           (enable-interrupts)
           (fx= depth 1))))

  ;; The seq is read before the second readiness check, so an edge that
  ;; comes between that check and the wait is never lost (see the poller).
  (define (wait-ready fd dir)
    (unless (ready-now? fd dir)
      (if (can-park?)
          (let ([rec (record-of fd)])
            (let loop ()
              (let ([seq (fd-seq rec dir)])
                (unless (ready-now? fd dir)
                  (fd-idle! rec dir seq)
                  (fd-wait! rec dir)
                  (loop)))))
          (wait-blocking fd dir))))

  (define pipe-buf 4096)

  (define (console-read! who fd bv start n)
    (let loop ()
      (wait-ready fd 'read)
      (let ([r (sys-read fd bv start n)])
        (cond
          [(fx>= r 0) r]
          [(fx= r (fx- 0 errno-again)) (loop)]   ; a non-blocking tty set by someone else
          [else (raise-os-error who r 'read fd)]))))

  (define (console-write! who fd bv start n)
    (let loop ()
      (wait-ready fd 'write)
      (let ([r (sys-write fd bv start (fxmin n pipe-buf) #f)])
        (cond
          [(fx> r 0) r]
          [(or (fx= r 0) (fx= r (fx- 0 errno-again))) (loop)]
          [else (raise-os-error who r 'write fd)]))))

  ;; ---------------------------------------------------------------- ports
  (define lock (make-mutex))
  (define binary-ports (make-vector 3 #f))
  (define textual-ports (make-vector 3 #f))
  (define descriptors (make-weak-eq-hashtable))   ; port -> fd

  (define (make-binary fd)
    (let ([name (vector-ref '#("stdin" "stdout" "stderr") fd)])
      (if (fx= fd 0)
          (make-custom-binary-input-port name
            (lambda (bv start n) (console-read! 'read fd bv start n)) #f #f #f)
          (make-custom-binary-output-port name
            (lambda (bv start n) (console-write! 'write fd bv start n)) #f #f #f))))

  ;; The binary console port of descriptor 0, 1 or 2 (made once; not the
  ;; one under the textual port, which transcoded-port closes).
  (define (binary-console-port fd)
    (unless (memv fd '(0 1 2)) (assertion-violation 'binary-console-port "expected 0, 1 or 2" fd))
    (with-os-mutex lock
      (or (vector-ref binary-ports fd)
          (let ([p (make-binary fd)])
            (vector-set! binary-ports fd p)
            (hashtable-set! descriptors p fd)
            p))))

  (define (transcoded fd)
    (transcoded-port (make-binary fd)
                     (make-transcoder (utf-8-codec) (eol-style lf) (error-handling-mode replace))))

  ;; All three are made together: stdin flushes the other two.
  (define (textual fd)
    (with-os-mutex lock
      (unless (vector-ref textual-ports 0)
        (let* ([out (make-synchronized-console-port (transcoded 1) '())]
               [err (make-synchronized-console-port (transcoded 2) '())]
               [in (make-synchronized-console-port (transcoded 0) (list out err))])
          (for-each (lambda (i p) (vector-set! textual-ports i p) (hashtable-set! descriptors p i))
                    '(0 1 2) (list in out err))))
      (vector-ref textual-ports fd)))

  ;; UTF-8 textual ports over 0, 1, 2.
  (define (stdin-port) (textual 0))
  (define (stdout-port) (textual 1))
  (define (stderr-port) (textual 2))

  ;; Makes them the current input, output and error ports of the calling
  ;; thread, and the console ports.
  (define (install-console-ports!)
    (current-input-port (stdin-port))
    (current-output-port (stdout-port))
    (current-error-port (stderr-port))
    (console-input-port (stdin-port))
    (console-output-port (stdout-port))
    (console-error-port (stderr-port)))

  ;; 0, 1 or 2 for a port of this library, else #f.
  (define (console-port-descriptor p)
    (with-os-mutex lock (hashtable-ref descriptors p #f)))

  ;; ---------------------------------------------------------------- loading
  ;; Chez's console and current ports are replaced (those a program has
  ;; replaced itself are left alone), after flushing what Chez's hold.
  (define console-ports-installed
    (let ([out (console-output-port)] [err (console-error-port)] [in (console-input-port)])
      (flush-output-port out)
      (flush-output-port err)
      (when (eq? (current-output-port) out) (current-output-port (stdout-port)))
      (when (eq? (current-error-port) err) (current-error-port (stderr-port)))
      (when (eq? (current-input-port) in) (current-input-port (stdin-port)))
      (console-output-port (stdout-port))
      (console-error-port (stderr-port))
      (console-input-port (stdin-port))
      #t))

  ;; Chez 9.5.8 flushes no port at exit while other OS threads live; this
  ;; hook (added after the scheduler's, so it runs before it) flushes the
  ;; console ports without parking.
  (define flush-at-exit
    (begin
      (add-exit-hook!
        (lambda ()
          (set! exiting? #t)
          (for-each (lambda (p) (guard (c [#t (void)]) (flush-output-port p)))
                    (list (stdout-port) (stderr-port)))))
      #t)))
