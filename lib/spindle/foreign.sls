#!chezscheme
;;; define-blocking-foreign: a foreign procedure that may block, declared
;;; __collect_safe (its OS thread is deactivated during the call, so it
;;; never holds a collection up) and, called from a green thread, run on a
;;; helper OS thread of call-blocking while the caller parks, so the other
;;; threads of its worker keep running.  Called from an OS thread that
;;; runs no green thread (a call-blocking helper, a thread made with
;;; fork-thread), or with interrupts disabled, it calls directly.
;;;
;;; A __collect_safe call must not receive movable Scheme objects as
;;; pointers (a bytevector for u8*, a string): a collection may move them
;;; during the call.  Pass foreign memory (foreign-alloc) or locked objects.
(library (spindle foreign)
  (export define-blocking-foreign)
  (import (chezscheme) (spindle blocking) (only (spindle private core atomic) interrupt-depth)
          (only (spindle private core pools) all-workers worker-tid worker-current))

  ;; (define-blocking-foreign name entry (arg-type ...) result-type): entry
  ;; and the types as for Chez's foreign-procedure.
  (define-syntax define-blocking-foreign
    (lambda (x)
      (syntax-case x ()
        [(_ name entry (arg-type ...) result-type)
         (identifier? #'name)
         #'(define name
             (blocking-foreign 'name (foreign-procedure __collect_safe entry (arg-type ...) result-type)))])))

  (define (blocking-foreign who proc)
    (lambda args
      (if (and (fx= (interrupt-depth) 0) (green-thread-here?))
          (apply call-blocking proc args)
          (apply proc args))))

  ;; #t if this OS thread is a spindle worker running a green thread
  ;; (without adopting it, as current-thread would).  Workers are few; a
  ;; blocking call costs a helper hand-off, far more than the scan.
  (define (green-thread-here?)
    (let ([id (get-thread-id)])
      (exists (lambda (wp)
                (let ([w (car wp)])
                  (and (not (bwp-object? w)) (fx= (worker-tid w) id) (worker-current w) #t)))
              (unbox all-workers)))))
