;;; Work to do when the process exits: one C exit hook (__cxa_atexit) runs
;;; every registered thunk, the newest first (as atexit does).  It runs
;;; in the exiting OS thread, whichever that is, with the heap still in
;;; place (checked: it can allocate and collect), when the program calls
;;; `exit` or falls off its end.  Places end with _exit and never run it.
(library (spindle private core exit-hooks)
  (export add-exit-hook!)
  (import (chezscheme) (only (spindle private os processes) register-c-exit-entry!))

  (define hooks (box '()))

  (define (add-exit-hook! thunk)
    (let loop ()
      (let ([old (unbox hooks)])
        (unless (box-cas! hooks old (cons thunk old)) (loop)))))

  (define c-hook
    (let ([hook (foreign-callable (lambda (arg) (for-each (lambda (h) (h)) (unbox hooks))) (uptr) void)])
      (lock-object hook)
      (register-c-exit-entry! (foreign-callable-entry-point hook))
      hook)))
