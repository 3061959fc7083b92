#!chezscheme
;;; fork-join's loop forms, CGfor and CGfor/stride: a range of iterations
;;; split among the members of a communication group, in blocks or
;;; cyclically.
(library (spindle private groups cg-loops)
  (export CGfor CGfor/stride)
  (import (chezscheme) (spindle private groups cg-record))

  ;; Iterations start, start+step, ... before end: how many.
  (define (iteration-count who start end step)
    (unless (real? start) (assertion-violation who "expected a real number" start))
    (unless (real? end) (assertion-violation who "expected a real number" end))
    (unless (and (real? step) (not (zero? step))) (assertion-violation who "expected a nonzero real number" step))
    (let ([q (/ (- end start) step)])
      (if (> q 0) (exact (ceiling q)) 0)))

  ;; -> first iteration index and count of member (CG-id c)'s block
  (define (block-range c start end step)
    (check-cg 'CGfor c)
    (let* ([k (iteration-count 'CGfor start end step)] [np (cg-np c)] [m (cg-id c)]
           [q (quotient k np)] [r (remainder k np)])
      (values (+ (* m q) (min m r)) (if (< m r) (+ q 1) q))))

  (define (stride-range c start end step)
    (check-cg 'CGfor/stride c)
    (values (iteration-count 'CGfor/stride start end step) (cg-id c) (cg-np c)))

  (meta define (in-range? id) (and (identifier? id) (eq? (syntax->datum id) 'in-range)))

  ;; [i start end [step]] or [i (in-range [start] end [step])] -> (i start end step)
  (meta define (range-clause who x clause)
    (syntax-case clause ()
      [(i (ir e)) (and (identifier? #'i) (in-range? #'ir)) #'(i 0 e 1)]
      [(i (ir s e)) (and (identifier? #'i) (in-range? #'ir)) #'(i s e 1)]
      [(i (ir s e st)) (and (identifier? #'i) (in-range? #'ir)) #'(i s e st)]
      [(i s e) (identifier? #'i) #'(i s e 1)]
      [(i s e st) (identifier? #'i) #'(i s e st)]
      [_ (syntax-violation who "expected [id start end [step]] or [id (in-range start end [step])]" x clause)]))

  (define-syntax CGfor
    (lambda (x)
      (syntax-case x ()
        [(_ c (clause) body0 body ...)
         (with-syntax ([(i s e st) (range-clause 'CGfor x #'clause)])
           #'(let* ([cv c] [sv s] [ev e] [stv st])
               (let-values ([(first n) (block-range cv sv ev stv)])
                 (let loop ([j 0])
                   (when (< j n)
                     (let ([i (+ sv (* (+ first j) stv))]) body0 body ...)
                     (loop (+ j 1)))))))]
        [_ (syntax-violation 'CGfor "expected (CGfor cg ([id start end [step]]) body ...+)" x)])))

  (define-syntax CGfor/stride
    (lambda (x)
      (syntax-case x ()
        [(_ c (clause) body0 body ...)
         (with-syntax ([(i s e st) (range-clause 'CGfor/stride x #'clause)])
           #'(let* ([cv c] [sv s] [ev e] [stv st])
               (let-values ([(k m np) (stride-range cv sv ev stv)])
                 (let loop ([j m])
                   (when (< j k)
                     (let ([i (+ sv (* j stv))]) body0 body ...)
                     (loop (+ j np)))))))]
        [_ (syntax-violation 'CGfor/stride "expected (CGfor/stride cg ([id start end [step]]) body ...+)" x)]))))
