#!chezscheme
;;; Parameters whose values belong to green threads.
;;;
;;; A thread's parameterization is a pair (dynamic . root): two alists from
;;; parameter records to boxes.  parameterize extends the dynamic list for
;;; its body; setting a parameter that no parameterize binds writes the
;;; thread's own root binding.  A new thread copies both into fresh boxes,
;;; so creator and child never see each other's later changes.
(library (spindle private impl parameter)
  (export (rename (make-spindle-parameter make-parameter) (spindle-parameterize parameterize))
          make-thread-parameter
          ;; for impl/thread ((spindle parameter) leaves them out)
          snapshot-parameterization empty-parameterization)
  (import (chezscheme) (only (spindle private core atomic) with-os-mutex) (spindle private core scheduler))

  (define-record-type param
    (fields default filter name)
    (nongenerative spindle-param-v1) (sealed #t))

  (define empty-parameterization '(() . ()))

  ;; procedure -> param, for parameterize to tell ours from Chez's
  (define registry (make-weak-eq-hashtable))
  (define registry-lock (make-mutex))

  (define (binding p)
    (let ([ps (gthread-params (current-gthread))])
      (or (assq p (car ps)) (assq p (cdr ps)))))

  (define make-spindle-parameter
    (case-lambda
      [(v) (make-spindle-parameter v #f #f)]
      [(v filter) (make-spindle-parameter v filter #f)]
      [(v filter name)
       (unless (or (not filter) (procedure? filter))
         (assertion-violation 'make-parameter "expected a procedure or #f as filter" filter))
       (let* ([p (make-param (box (if filter (filter v) v)) filter name)]
              [proc (case-lambda
                      [() (let ([b (binding p)]) (unbox (if b (cdr b) (param-default p))))]
                      [(x)
                       (let ([x (if filter (filter x) x)] [b (binding p)])
                         (if b
                             (set-box! (cdr b) x)
                             (let* ([t (current-gthread)] [ps (gthread-params t)])
                               (gthread-params-set! t (cons (car ps) (cons (cons p (box x)) (cdr ps)))))))])])
         (with-os-mutex registry-lock (hashtable-set! registry proc p))
         proc)]))

  (define (lookup proc) (with-os-mutex registry-lock (hashtable-ref registry proc #f)))

  (define (copy-alist al) (map (lambda (b) (cons (car b) (box (unbox (cdr b))))) al))

  (define (snapshot-parameterization ps)
    (if (and (null? (car ps)) (null? (cdr ps)))
        empty-parameterization
        (cons (copy-alist (car ps)) (copy-alist (cdr ps)))))

  ;; Binds spindle parameters per thread; other procedures are taken as Chez
  ;; parameters and bound the Chez way (global or per OS thread).
  (define (call-with-parameterization procs vals body)
    (let loop ([procs procs] [vals vals] [ours '()] [chez '()])
      (cond
        [(pair? procs)
         (let ([p (lookup (car procs))])
           (cond
             [p (loop (cdr procs) (cdr vals)
                      (cons (cons p (box (let ([f (param-filter p)]) (if f (f (car vals)) (car vals))))) ours)
                      chez)]
             [(procedure? (car procs))
              (loop (cdr procs) (cdr vals) ours (cons (cons (car procs) (car vals)) chez))]
             [else (assertion-violation 'parameterize "expected a parameter" (car procs))]))]
        [else
         (let ([t (current-gthread)] [saved #f])
           (define (swap-chez!)
             (for-each (lambda (b) (let ([old ((car b))]) ((car b) (cdr b)) (set-cdr! b old))) chez))
           (dynamic-wind
             (lambda ()
               (let ([ps (gthread-params t)])
                 (set! saved (car ps))
                 (gthread-params-set! t (cons (append ours saved) (cdr ps))))
               (swap-chez!))
             body
             (lambda ()
               (swap-chez!)
               (let ([ps (gthread-params t)])
                 (gthread-params-set! t (cons saved (cdr ps)))))))])))

  (define-syntax spindle-parameterize
    (syntax-rules ()
      [(_ () body1 body ...) (let () body1 body ...)]
      [(_ ([p e] ...) body1 body ...)
       (call-with-parameterization (list p ...) (list e ...) (lambda () body1 body ...))])))
