#!chezscheme
;;; What a parked thread waits on, as the dump and the deadlock report
;;; name it.  sync describes each branch by its primitive evt (a
;;; semaphore, a channel, a descriptor); a layer whose object waits
;;; through another one (a SRFI-18 mutex through its semaphore) names
;;; the outer object with wait-target-alias!, so the dump says "mutex m,
;;; held by thread 3" and the deadlock report can follow the holder.
(library (spindle private core wait-targets)
  (export wait-target-alias! thread-wait-list)
  (import (chezscheme) (only (spindle private core atomic) with-os-mutex)
          (only (spindle private core sync) thread-wait-descriptions))

  ;; target -> (kind obj . holder): the evt target a thread parks on, the
  ;; name of what it stands for, that object, and (holder obj): the
  ;; thread that holds it now, or #f.  An ephemeron table: an alias dies
  ;; with its target, though obj refers to the target.
  (define aliases (make-ephemeron-eq-hashtable))
  (define aliases-lock (make-mutex))

  (define (wait-target-alias! target kind obj holder)
    (unless (procedure? holder) (assertion-violation 'wait-target-alias! "expected a procedure" holder))
    (with-os-mutex aliases-lock
      (unless (hashtable-contains? aliases target)
        (hashtable-set! aliases target (cons* kind obj holder)))))

  ;; (reason what ...) per branch of t's sync (see thread-wait-descriptions),
  ;; an aliased target's branch as (kind obj held-by holder).
  (define (thread-wait-list t)
    (map (lambda (w)
           (let ([a (and (pair? (cdr w))
                         (with-os-mutex aliases-lock (hashtable-ref aliases (cadr w) #f)))])
             (if a
                 (let ([obj (cadr a)])
                   (list (car a) obj 'held-by (guard (c [#t #f]) ((cddr a) obj))))
                 w)))
         (thread-wait-descriptions t))))
