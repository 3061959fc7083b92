#!chezscheme
;;; The kernel's view of OS threads, for the watchdog: each spindle OS
;;; thread's Linux thread id, recorded as it starts (Chez numbers its
;;; threads itself and keeps no kernel id), and what a thread is doing now
;;; according to /proc: its scheduler state and the system call it sits
;;; in.  The program's main OS thread (Chez's 0) has the process id.
(library (spindle private os kernel-threads)
  (export note-kernel-thread! forget-kernel-thread! kernel-thread-id kernel-thread-activity)
  (import (chezscheme) (spindle private os libc))

  (define loaded libc-loaded)   ; libc is loaded before the bindings below

  (define c-gettid (foreign-procedure "gettid" () int))
  (define c-getpid (foreign-procedure "getpid" () int))

  ;; Chez thread number -> Linux thread id, for threads spindle started.
  ;; Written as each starts and ends (rare), read by the watchdog.
  (define ids (make-eqv-hashtable))
  (define lock (make-mutex))
  (define-syntax locked
    (syntax-rules () [(_ e ...) (with-interrupts-disabled (with-mutex lock e ...))]))

  (define (note-kernel-thread!) (let ([tid (c-gettid)]) (locked (hashtable-set! ids (get-thread-id) tid))))
  (define (forget-kernel-thread!) (locked (hashtable-delete! ids (get-thread-id))))

  ;; The Linux thread id of Chez thread n, or #f if spindle did not start it.
  (define (kernel-thread-id n)
    (if (eqv? n 0) (c-getpid) (locked (hashtable-ref ids n #f))))

  ;; What Linux thread tid does now: "in the system call NAME" (blocked in
  ;; it, or just entering or leaving), "running outside system calls", or
  ;; #f if /proc cannot say.
  (define (kernel-thread-activity tid)
    (guard (c [#t #f])
      (let* ([dir (format "/proc/self/task/~a/" tid)]
             [syscall (call-with-input-file (string-append dir "syscall") get-line)]
             [stat (call-with-input-file (string-append dir "stat") get-line)]
             [state (let ([i (last-paren stat)]) (and i (< (+ i 2) (string-length stat)) (string-ref stat (+ i 2))))]
             [first (let ([p (open-string-input-port syscall)]) (read p))])
        (cond
          [(eq? first 'running) "running outside system calls"]
          [(and (fixnum? first) (fx>= first 0))
           (format "in the system call ~a (Linux thread ~a, ~a)"
                   (syscall-name first) tid (if (memv state '(#\S #\D)) "waiting" "running"))]
          [else #f]))))

  (define (last-paren s)
    (let loop ([i (fx- (string-length s) 1)])
      (cond [(fx< i 0) #f] [(char=? (string-ref s i) #\)) i] [else (loop (fx- i 1))])))

  ;; The blocking system calls of x86-64 Linux; others by number.
  (define syscall-names
    '((0 . read) (1 . write) (2 . open) (7 . poll) (17 . pread64) (18 . pwrite64) (19 . readv)
      (20 . writev) (23 . select) (34 . pause) (35 . nanosleep) (42 . connect) (43 . accept)
      (44 . sendto) (45 . recvfrom) (46 . sendmsg) (47 . recvmsg) (61 . wait4) (72 . fcntl)
      (73 . flock) (74 . fsync) (128 . rt_sigtimedwait) (130 . rt_sigsuspend) (202 . futex)
      (230 . clock_nanosleep) (232 . epoll_wait) (247 . waitid) (257 . openat) (270 . pselect6)
      (271 . ppoll) (281 . epoll_pwait) (288 . accept4) (441 . epoll_pwait2)))
  (define (syscall-name n)
    (let ([e (and (eq? (machine-type) 'ta6le) (assv n syscall-names))])
      (if e (symbol->string (cdr e)) (format "number ~a" n)))))
