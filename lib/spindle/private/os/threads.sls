#!chezscheme
;;; libc for OS threads: semaphores and yielding the CPU.
;;;
;;; OS semaphores (POSIX sem_t in foreign memory, or an eventfd for one
;;; that is waited on with a signal mask) are how idle workers sleep.  The wait is a __collect_safe call, so the sleeping OS thread is
;;; deactivated even with interrupts disabled: Chez's condition-wait does not
;;; deactivate a thread whose interrupts are disabled, and one such sleeper
;;; stops every collection of the process (all threads then hang in the
;;; collect rendezvous).
(library (spindle private os threads)
  (export make-os-semaphore os-semaphore-post! os-semaphore-wait! os-yield! os-nap!)
  (import (chezscheme) (spindle private os libc) (spindle private os monotonic-clock)
          (only (spindle private os descriptors) close-fd)
          (only (spindle private os polling) make-eventfd eventfd-signal! eventfd-drain! ppoll-readable)
          (only (spindle private os processes) own-pid))

  (define loaded libc-loaded)   ; libc is loaded before the bindings below

  (define sem-size 32)          ; sizeof(sem_t) on 64-bit glibc

  (define sem-init (foreign-procedure "sem_init" (uptr int unsigned) int))
  (define sem-destroy (foreign-procedure "sem_destroy" (uptr) int))
  (define sem-post (foreign-procedure "sem_post" (uptr) int))
  (define sched-yield (foreign-procedure "sched_yield" () int))
  (define sem-wait (foreign-procedure __collect_safe "sem_wait" (uptr) int))
  (define sem-clockwait (foreign-procedure __collect_safe "sem_clockwait" (uptr int uptr) int))
  (define c-usleep (foreign-procedure __collect_safe "usleep" (unsigned) int))

  ;; address: the sem_t, or #f for an eventfd semaphore, whose descriptor
  ;; fd belongs to process pid: made at once (no descriptor appears later in
  ;; a running program), and by a forked process at its first use (the
  ;; inherited one is shared with the parent).
  (define-record-type (os-semaphore new-os-semaphore os-semaphore?)
    (fields address (mutable fd) (mutable pid))
    (nongenerative spindle-os-semaphore-v1) (sealed #t))

  ;; sem_t memory is released once its record is unreachable.  Pools are
  ;; made on any OS thread, so the guardian is used under a lock (held, like
  ;; every Chez mutex in spindle, with interrupts disabled).
  (define reclaim (make-guardian))
  (define reclaim-lock (make-mutex))

  ;; (make-os-semaphore): a sem_t.  (make-os-semaphore #t): an eventfd,
  ;; which its one waiter can wait on with a signal mask (the main pool's:
  ;; see hold-main-signals!); never freed.
  (define make-os-semaphore
    (case-lambda
      [() (make-os-semaphore #f)]
      [(signal-mask?)
       (if signal-mask?
           (new-os-semaphore #f (make-eventfd #t) (own-pid))
           (let ([a (foreign-alloc sem-size)])
             (unless (eqv? 0 (sem-init a 0 0))
               (foreign-free a)
               (error 'make-os-semaphore "sem_init failed"))
             (let ([s (new-os-semaphore a #f #f)])
               (with-interrupts-disabled
                 (with-mutex reclaim-lock
                   (let loop ()
                     (let ([dead (reclaim)])
                       (when dead
                         (sem-destroy (os-semaphore-address dead))
                         (foreign-free (os-semaphore-address dead))
                         (loop))))
                   (reclaim s)))
               s)))]))

  (define fd-lock (make-mutex))
  (define (semaphore-fd s)
    (let ([pid (own-pid)])
      (if (eqv? (os-semaphore-pid s) pid)
          (os-semaphore-fd s)
          (with-interrupts-disabled
            (with-mutex fd-lock
              (unless (eqv? (os-semaphore-pid s) pid)
                (let ([old (os-semaphore-fd s)]) (when old (close-fd old)))
                (os-semaphore-fd-set! s (make-eventfd #t))
                (os-semaphore-pid-set! s pid))
              (os-semaphore-fd s))))))

  (define (os-semaphore-post! s)
    (let ([a (os-semaphore-address s)])
      (if a (sem-post a) (eventfd-signal! (semaphore-fd s))))
    (void))

  ;; Gives the CPU to another OS thread (a spin lock's holder, say).
  (define (os-yield!) (sched-yield) (void))

  ;; Sleeps us microseconds, deactivated (a collect-safe call): a thread
  ;; that waits with interrupts disabled naps so, and no collection waits
  ;; for it.
  (define (os-nap! us) (c-usleep us) (void))

  ;; Waits for a post, at most ms milliseconds (a flonum) unless ms is #f;
  ;; an eventfd semaphore with the signal mask at address sigmask (0: the
  ;; thread's own).  #t if a post was consumed; #f on timeout or
  ;; interruption by a signal.
  (define os-semaphore-wait!
    (case-lambda
      [(s ms) (os-semaphore-wait! s ms 0)]
      [(s ms sigmask)
       (let ([a (os-semaphore-address s)])
         (cond
           [(not a) (let ([fd (semaphore-fd s)]) (and (ppoll-readable fd ms sigmask) (eventfd-drain! fd)))]
           [ms
            (let ([ts (foreign-alloc 16)])
              (clock-gettime! clock-monotonic ts)
              (let* ([ns (fx+ (foreign-ref 'long ts 8)
                              (flonum->fixnum (flceiling (fl* (flmin (flmax ms 0.) 1e9) 1e6))))]
                     [sec (fx+ (foreign-ref 'long ts 0) (fxquotient ns 1000000000))])
                (foreign-set! 'long ts 0 sec)
                (foreign-set! 'long ts 8 (fxremainder ns 1000000000))
                (let ([r (sem-clockwait a clock-monotonic ts)])
                  (foreign-free ts)
                  (eqv? r 0))))]
           [else (eqv? (sem-wait a) 0)]))])))
