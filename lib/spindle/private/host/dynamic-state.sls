#!chezscheme
;;; A thread's dynamic state as Chez keeps it: its winders (the
;;; dynamic-wind entries it is inside) and its exception state (the stack
;;; of handlers).  The scheduler saves and restores both at every switch;
;;; the deadlock watch reads them.
;;;
;;; 9.5.8: a winder is #(critical? before after); an exception state's one
;;; field is the handler list, which ends in a cyclic pair of Chez's
;;; default handler.  10.x: a winder is a record (in out attachments); the
;;; handler list ends in #f.  create-exception-state is declared in 10.0
;;; as returning void, so a compiled call yields #<void>: it is called
;;; through its top-level value here, on both.
(library (spindle private host dynamic-state)
  (export current-winders winder-exit make-exception-state exception-state-handlers)
  (import (chezscheme))

  ;; (current-winders): the current winders; (current-winders ws): sets
  ;; them, with no winding (the scheduler's switch).
  (define-syntax current-winders
    (syntax-rules ()
      [(_) (#%$current-winders)]
      [(_ ws) (#%$current-winders ws)]))

  ;; The procedure a winder runs on the way out, or #f if w is no winder.
  (define (winder-exit w)
    (cond
      [(and (vector? w) (fx= (vector-length w) 3)) (vector-ref w 2)]
      [(and (record? w) (winder-out w)) => (lambda (out) (and (procedure? out) out))]
      [else #f]))

  ;; The field of a winder record named `out`, found by name.
  (define winder-out
    (let ([cache #f])                    ; (rtd . accessor-or-#f)
      (lambda (w)
        (let* ([rtd (#%$record-type-descriptor w)]
               [c (if (and cache (eq? (car cache) rtd))
                      cache
                      (let ([names (vector->list (record-type-field-names rtd))])
                        (let ([i (and (memq 'out names) (- (length names) (length (memq 'out names))))])
                          (set! cache (cons rtd (and i (eq? (record-type-name rtd) 'winder)
                                                     (record-accessor rtd i))))
                          cache)))])
          (and (cdr c) ((cdr c) w))))))

  ;; A fresh exception state whose only handler (above Chez's default) is
  ;; handler.
  (define create (#%$top-level-value 'create-exception-state))
  (define (make-exception-state handler) (create handler))

  ;; The handlers an exception state holds above Chez's default one,
  ;; innermost first, or #f if its shape is not one of the above.
  (define (exception-state-handlers s)
    (guard (c [#t #f])
      (let ([stack ((record-accessor (#%$record-type-descriptor s) 0) s)])
        (let loop ([l stack] [acc '()] [seen 0])
          (cond
            [(fx> seen 100000) #f]
            [(and (pair? l) (eq? (cdr l) l)) (reverse acc)]      ; 9.5.8's default
            [(and (pair? l) (not (cdr l))) (reverse acc)]        ; 10.x: the default, then #f
            [(pair? l) (loop (cdr l) (cons (car l) acc) (fx+ seen 1))]
            [else #f]))))))
