#!chezscheme
;;; Racket-style keyword arguments for R6RS: Chez reads #:name as a gensym
;;; named "name", so a macro can find keywords among a call's forms.
(library (spindle private core keywords)
  (export define-keyword-procedure)
  (import (chezscheme))

  ;; (define-keyword-procedure name proc (slot-name default) ...)
  ;; A call may give slots positionally (in order) or as #:slot-name value,
  ;; in any mix and order.  Arguments are evaluated once, left to right as
  ;; written.  Used as a variable, name is proc.
  (define-syntax define-keyword-procedure
    (syntax-rules ()
      [(_ name proc (slot default) ...)
       (define-syntax name
         (lambda (x)
           (define slots '(slot ...))
           (define defaults (list #'default ...))
           (define (keyword? stx)
             (let ([d (syntax->datum stx)]) (and (symbol? d) (gensym? d))))
           (define (slot-index who kw)
             (let loop ([s slots] [i 0])
               (cond
                 [(null? s) (syntax-violation 'name "unknown keyword" x kw)]
                 [(string=? (symbol->string (car s)) (symbol->string (syntax->datum kw))) i]
                 [else (loop (cdr s) (fx+ i 1))])))
           (syntax-case x ()
             [id (identifier? #'id) #'proc]
             [(_ arg (... ...))
              (let loop ([args #'(arg (... ...))] [pos 0] [temps '()] [assigned '()])
                ;; assigned: alist slot index -> temp identifier
                (define (assign idx tmp)
                  (when (assv idx assigned)
                    (syntax-violation 'name "argument given twice" x (list-ref slots idx)))
                  (cons (cons idx tmp) assigned))
                (syntax-case args ()
                  [()
                   (let* ([n (if (null? assigned) 0 (fx+ 1 (apply max (map car assigned))))]
                          [actuals (let build ([i 0])
                                     (if (fx= i n)
                                         '()
                                         (cons (cond [(assv i assigned) => cdr]
                                                     [else (list-ref defaults i)])
                                               (build (fx+ i 1)))))])
                     (when (fx> n (length slots))
                       (syntax-violation 'name "too many arguments" x))
                     (with-syntax ([((t e) (... ...)) (reverse temps)]
                                   [(a (... ...)) actuals])
                       #'(let* ([t e] (... ...)) (proc a (... ...)))))]
                  [(k v . rest)
                   (keyword? #'k)
                   (let ([tmp (car (generate-temporaries '(kw)))])
                     (loop #'rest pos (cons (list tmp #'v) temps)
                           (assign (slot-index 'name #'k) tmp)))]
                  [(k)
                   (keyword? #'k)
                   (syntax-violation 'name "keyword without a value" x #'k)]
                  [(e . rest)
                   (let ([tmp (car (generate-temporaries '(arg)))])
                     (loop #'rest (fx+ pos 1) (cons (list tmp #'e) temps)
                           (assign pos tmp)))]))])))])))
