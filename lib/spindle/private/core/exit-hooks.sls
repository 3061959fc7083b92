;;; Work to do when the process exits: one C exit hook (__cxa_atexit) runs
;;; every registered thunk, the newest first (as atexit does).  It runs
;;; in the exiting OS thread, whichever that is, with the heap still in
;;; place (checked: it can allocate and collect), when the program calls
;;; `exit` or falls off its end.  Places end with _exit and never run it.
;;; Also how a worker OS thread ends the process.
(library (spindle private core exit-hooks)
  (export add-exit-hook! exit-process exit-process-code flush-exit-ports)
  (import (chezscheme) (only (spindle private os processes) register-c-exit-entry! os-exit))

  (define hooks (box '()))

  (define (add-exit-hook! thunk)
    (let loop ()
      (let ([old (unbox hooks)])
        (unless (box-cas! hooks old (cons thunk old)) (loop)))))

  (define c-hook
    (let ([hook (foreign-callable (lambda (arg) (for-each (lambda (h) (h)) (unbox hooks))) (uptr) void)])
      (lock-object hook)
      (register-c-exit-entry! (foreign-callable-entry-point hook))
      hook))

  ;; Chez gives a forked OS thread an exit handler that ends only that
  ;; thread (the main thread's own cannot run elsewhere), so the scheduler
  ;; gives every worker this one.  The status is Chez's: 0 for (exit), a
  ;; fixnum's low 8 bits, else 1.  Output is flushed as at the main
  ;; thread's exit: the current and console ports here, then C's exit runs
  ;; the exit hooks in this thread.
  (define (exit-process . args)
    (let ([code (cond
                  [(null? args) 0]
                  [(fixnum? (car args)) (fxlogand (car args) 255)]
                  [else 1])])
      (set-box! exiting code)
      (flush-exit-ports)
      (os-exit code)))

  ;; The status exit-process is ending the process with, for the exit
  ;; hooks (C's exit does not give it to them); #f before.
  (define exiting (box #f))
  (define (exit-process-code) (unbox exiting))

  ;; Chez 9.5.8 flushes no port at exit while other OS threads live (pool
  ;; workers, futures): a program that printed a last line without a
  ;; newline lost it, whether it called `exit` or simply ended.  The
  ;; scheduler registers this as an exit hook, so it runs also when Chez
  ;; has flushed them itself.  Places end with _exit and flush on their own.
  (define (flush-exit-ports)
    (for-each (lambda (p) (guard (c [#t (void)]) (flush-output-port p)))
              (list (current-output-port) (console-output-port) (console-error-port)))))
