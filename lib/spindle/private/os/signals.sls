#!chezscheme
;;; libc for signals: their numbers, signal sets, blocking them in a thread
;;; (and the threads and processes it starts), and reading blocked ones
;;; from a signalfd.
(library (spindle private os signals)
  (export sigint sigquit sigkill signal-set-size fill-signal-set!
          fork-os-thread hold-main-signals! release-main-signals!
          place-signals block-place-signals!
          signals->descriptor read-signal signal-number signal-break-kind
          signal-handlers)
  (import (chezscheme) (spindle private os libc)
          (only (spindle private os kernel-threads) note-kernel-thread! forget-kernel-thread!))

  (define loaded libc-loaded)   ; libc is loaded before the bindings below

  (define sighup 1)
  (define sigint 2)
  (define sigquit 3)
  (define sigkill 9)
  (define sigterm 15)

  (define sig-block 0)                ; SIG_BLOCK
  (define signal-set-size 128)        ; sizeof(sigset_t)
  (define signalfd-info-size 128)     ; sizeof(struct signalfd_siginfo)

  (define c-sigemptyset (foreign-procedure "sigemptyset" (uptr) int))
  (define c-sigaddset (foreign-procedure "sigaddset" (uptr int) int))
  (define c-sigprocmask (foreign-procedure "sigprocmask" (int uptr uptr) int))
  (define c-pthread-sigmask (foreign-procedure "pthread_sigmask" (int uptr uptr) int))
  (define c-signalfd (foreign-procedure "signalfd" (int uptr int) int))
  (define c-read (foreign-procedure "read" (int uptr size_t) ssize_t))

  ;; Makes the set at address set (signal-set-size bytes) hold signos.
  (define (fill-signal-set! set signos)
    (c-sigemptyset set)
    (for-each (lambda (n) (c-sigaddset set n)) signos))

  (define (signal-set signos)
    (let ([set (foreign-alloc signal-set-size)])
      (fill-signal-set! set signos)
      set))

  (define sig-setmask 2)              ; SIG_SETMASK

  ;; (fork-os-thread thunk): fork-thread with SIGINT and SIGQUIT blocked in the new OS
  ;; thread from its first instruction (the mask is inherited; the
  ;; caller's own mask is put back at once).  Every OS thread spindle
  ;; starts is made so, and the kernel then delivers Ctrl-C to the
  ;; program's main OS thread, whose handler breaks the main green thread
  ;; (SIGQUIT: prints dump-threads)
  ;; (see the scheduler): taken by a worker, it was marked pending in that
  ;; worker alone, and one just forked could take it before blocking it.
  ;; Each records its Linux thread id while it runs (see
  ;; (spindle private os kernel-threads)).
  (define (fork-os-thread thunk)
    (let ([set (signal-set (list sigint sigquit))] [old (foreign-alloc signal-set-size)])
      (c-pthread-sigmask sig-block set old)
      (let ([t (fork-thread (lambda () (note-kernel-thread!) (thunk) (forget-kernel-thread!)))])
        (c-pthread-sigmask sig-setmask old 0)
        (foreign-free set)
        (foreign-free old)
        t)))

  ;; The main OS thread's idle wait.  Chez's C handler for SIGINT (and the
  ;; one for a registered SIGQUIT) only marks the interrupt pending; the
  ;; Scheme handler runs at the next interrupt check.  A worker sleeps with
  ;; interrupts disabled, so a signal taken between its last interrupt
  ;; window and the blocking call would wait until something else woke it.
  ;; So the main OS thread holds these signals (blocked: they stay pending
  ;; in the kernel) from just before its last window to the wait, and waits
  ;; with a call that puts the old mask back for its duration (epoll_pwait2,
  ;; ppoll): a signal that came meanwhile interrupts the wait at once.
  ;; Main OS thread only: held-mask is its own.
  (define main-signals (signal-set (list sigint sigquit)))
  (define held-mask (foreign-alloc signal-set-size))

  ;; Returns the address of the mask to wait with.
  (define (hold-main-signals!) (c-pthread-sigmask sig-block main-signals held-mask) held-mask)
  (define (release-main-signals!) (c-pthread-sigmask sig-setmask held-mask 0) (void))

  ;; The signals of place-break: SIGHUP, SIGINT, SIGTERM.
  (define place-signals (list sighup sigint sigterm))

  ;; Blocks them in this thread and the threads and processes it will
  ;; start: they stay pending until a signalfd reads them.
  (define (block-place-signals!)
    (let ([set (signal-set place-signals)])
      (c-sigprocmask sig-block set 0)
      (foreign-free set)))

  ;; Returns a non-blocking descriptor that reads the (blocked) signals:
  ;; they then reach the process even while every thread sleeps outside
  ;; Scheme, and one sent before the descriptor existed is not lost.
  (define (signals->descriptor signos)
    (let ([set (signal-set signos)])
      (c-sigprocmask sig-block set 0)
      (let ([fd (c-signalfd -1 set (fxior o-nonblock o-cloexec))])   ; SFD_NONBLOCK | SFD_CLOEXEC
        (foreign-free set)
        fd)))

  ;; The number of the next pending signal on a signalfd, or #f.
  (define (read-signal fd)
    (let* ([info (foreign-alloc signalfd-info-size)] [r (c-read fd info signalfd-info-size)])
      (let ([signo (and (eqv? r signalfd-info-size) (foreign-ref 'unsigned-32 info 0))])
        (foreign-free info)
        signo)))

  ;; The handler of every signal 1-64 as sigaction reports it, a vector
  ;; indexed by signal number (0: SIG_DFL, 1: SIG_IGN, else an address;
  ;; #f where sigaction refuses the number).  The deadlock watch compares
  ;; it with the one it took at start: a handler installed since (by
  ;; register-signal-handler, say) may wake a thread.
  (define sigaction-size 152)         ; sizeof(struct sigaction); sa_handler first
  (define c-sigaction (foreign-procedure "sigaction" (int uptr uptr) int))
  (define (signal-handlers)
    (let ([buf (foreign-alloc sigaction-size)] [v (make-vector 65 #f)])
      (do ([n 1 (fx+ n 1)]) ((fx= n 65))
        (when (fx= 0 (c-sigaction n 0 buf))
          (vector-set! v n (foreign-ref 'uptr buf 0))))
      (foreign-free buf)
      v))

  ;; The signal of a break kind (place-kill, subprocess-kill).
  (define (signal-number kind)
    (case kind [(#f) sigint] [(hang-up) sighup] [(terminate) sigterm] [(kill) sigkill] [else #f]))

  ;; The break kind of one of place-signals.
  (define (signal-break-kind signo)
    (cond [(eqv? signo sighup) 'hang-up] [(eqv? signo sigterm) 'terminate] [else #f])))
