#!chezscheme
;;; The only library that names libc.
;;;
;;; OS semaphores (POSIX sem_t in foreign memory) are how idle workers
;;; sleep.  The wait is a __collect_safe call, so the sleeping OS thread is
;;; deactivated even with interrupts disabled: Chez's condition-wait does not
;;; deactivate a thread whose interrupts are disabled, and one such sleeper
;;; stops every collection of the process (all threads then hang in the
;;; collect rendezvous).
(library (spindle private os ffi)
  (export make-os-semaphore os-semaphore? os-semaphore-post! os-semaphore-wait! os-yield! os-exit
          fork-os-thread)
  (import (chezscheme))

  (define libc-loaded (begin (load-shared-object "libc.so.6") #t))

  (define sem-size 32)          ; sizeof(sem_t) on 64-bit glibc
  (define clock-monotonic 1)

  (define sem-init (foreign-procedure "sem_init" (uptr int unsigned) int))
  (define sem-destroy (foreign-procedure "sem_destroy" (uptr) int))
  (define sem-post (foreign-procedure "sem_post" (uptr) int))
  (define sched-yield (foreign-procedure "sched_yield" () int))
  (define sem-wait (foreign-procedure __collect_safe "sem_wait" (uptr) int))
  (define sem-clockwait (foreign-procedure __collect_safe "sem_clockwait" (uptr int uptr) int))
  (define clock-gettime (foreign-procedure "clock_gettime" (int uptr) int))
  (define c-exit (foreign-procedure "exit" (int) void))
  (define c-pthread-sigmask (foreign-procedure "pthread_sigmask" (int uptr uptr) int))

  ;; (fork-os-thread thunk): fork-thread with SIGINT blocked in the new OS
  ;; thread from its first instruction (the mask is inherited; the
  ;; caller's own mask is put back at once).  Every OS thread spindle
  ;; starts is made so, and the kernel then delivers Ctrl-C to the
  ;; program's main OS thread, whose handler breaks the main green thread
  ;; (see the scheduler): taken by a worker, it was marked pending in that
  ;; worker alone, and one just forked could take it before blocking it.
  (define (fork-os-thread thunk)
    (let ([set (foreign-alloc 128)] [old (foreign-alloc 128)])
      (do ([i 0 (fx+ i 8)]) ((fx= i 128)) (foreign-set! 'unsigned-64 set i 0))
      (foreign-set! 'unsigned-64 set 0 (fxsll 1 1))     ; signal 2 (SIGINT) is bit 1
      (c-pthread-sigmask 0 set old)                      ; SIG_BLOCK
      (let ([t (fork-thread thunk)])
        (c-pthread-sigmask 2 old 0)                      ; SIG_SETMASK
        (foreign-free set)
        (foreign-free old)
        t)))

  (define-record-type (os-semaphore new-os-semaphore os-semaphore?)
    (fields address)
    (nongenerative spindle-os-semaphore-v1) (sealed #t))

  ;; sem_t memory is released once its record is unreachable.  Pools are
  ;; made on any OS thread, so the guardian is used under a lock (held, like
  ;; every Chez mutex in spindle, with interrupts disabled).
  (define reclaim (make-guardian))
  (define reclaim-lock (make-mutex))

  (define (make-os-semaphore)
    (let ([a (foreign-alloc sem-size)])
      (unless (eqv? 0 (sem-init a 0 0))
        (foreign-free a)
        (error 'make-os-semaphore "sem_init failed"))
      (let ([s (new-os-semaphore a)])
        (with-interrupts-disabled
          (with-mutex reclaim-lock
            (let loop ()
              (let ([dead (reclaim)])
                (when dead
                  (sem-destroy (os-semaphore-address dead))
                  (foreign-free (os-semaphore-address dead))
                  (loop))))
            (reclaim s)))
        s)))

  (define (os-semaphore-post! s) (sem-post (os-semaphore-address s)) (void))

  ;; Ends the process with code from any OS thread, after the C exit hooks
  ;; (atexit) have run in the calling thread.
  (define (os-exit code) (c-exit code))

  ;; Gives the CPU to another OS thread (a spin lock's holder, say).
  (define (os-yield!) (sched-yield) (void))

  ;; Waits for a post, at most ms milliseconds (a flonum) unless ms is #f.
  ;; #t if a post was consumed; #f on timeout or interruption by a signal.
  (define (os-semaphore-wait! s ms)
    (let ([a (os-semaphore-address s)])
      (if ms
          (let ([ts (foreign-alloc 16)])
            (clock-gettime clock-monotonic ts)
            (let* ([ns (fx+ (foreign-ref 'long ts 8)
                            (flonum->fixnum (flceiling (fl* (flmin (flmax ms 0.) 1e9) 1e6))))]
                   [sec (fx+ (foreign-ref 'long ts 0) (fxquotient ns 1000000000))])
              (foreign-set! 'long ts 0 sec)
              (foreign-set! 'long ts 8 (fxremainder ns 1000000000))
              (let ([r (sem-clockwait a clock-monotonic ts)])
                (foreign-free ts)
                (eqv? r 0))))
          (eqv? (sem-wait a) 0)))))
