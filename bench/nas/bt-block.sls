#!chezscheme
;;; The 5x5 block algebra of BT's block-tridiagonal line solves, unrolled
;;; at expansion time.  Chez 9.5.8 boxes every flonum it computes or loads
;;; from memory, but not one held in a variable or a Scheme vector: so one
;;; forward-elimination step is generated as straight-line code over
;;; variables (the blocks A, B and C of its row formed from the Jacobians,
;;; rhs_p - A rhs_p-1, B - A C'_p-1, then Gauss-Jordan elimination of B
;;; applied to C and rhs_p), reading each operand once and skipping the
;;; Jacobians' structural zeros (known per direction), instead of calling
;;; matvec, matmul and binvcrhs over memory.
;;;
;;; Storage (bt-solve): fjac and njac of position p are elements 25p ..
;;; 25p+24 of the Scheme vectors fj and nj, row-major (element (r, c) at
;;; 5r + c), holding only the entries that can be nonzero; the eliminated
;;; upper block C'_p is elements 25p .. of the vector cp; rhs_p is the five
;;; doubles at element ro of the field at address r.
(library (nas bt-block)
  (export block-step back-substitute!)
  (import (chezscheme) (nas bt-grid))

  ;; Defines (name fj nj cp r p ro rom tmp1 tmp2 ntmp2 dtd tmp1x2 bdiag), the
  ;; forward step at position p for direction normal component nm (1 x,
  ;; 2 y, 3 z): A from the Jacobians at p-1 (unless first), B from njac at
  ;; p, C from p+1 (unless last), rhs_p at element ro, rhs_p-1 at rom.
  ;;   A = ntmp2 fjac - tmp1 njac - dtd I (ntmp2 = -tmp2, so that no term
  ;;   is negated), B = I + tmp1x2 njac + 2 dtd I
  ;;   (bdiag = 1 + 2 dtd), C = tmp2 fjac - tmp1 njac - dtd I.
  ;; Stores C'_p = B'^-1 C into cp (unless last) and B'^-1 rhs'_p into rhs_p.
  (define-syntax define-block-step
    (lambda (x)
      (syntax-case x ()
        [(_ name nm-stx first-stx last-stx)
         (let ([nm (syntax->datum #'nm-stx)] [first? (syntax->datum #'first-stx)]
               [last? (syntax->datum #'last-stx)] [binds '()])
           (with-syntax ([(fj nj cp r p ro rom tmp1 tmp2 ntmp2 dtd tmp1x2 bdiag)
                          (generate-temporaries
                            '(fj nj cp r p ro rom tmp1 tmp2 ntmp2 dtd tmp1x2 bdiag))])
             ;; symbolic values: 'zero, 'one, or an identifier bound to a flonum
             (define (emit e)
               (let ([t (car (generate-temporaries '(t)))])
                 (set! binds (cons #`[#,t #,e] binds))
                 t))
             (define (lit s) (case s [(zero) #'0.0] [(one) #'1.0] [else s]))
             (define (mul a b)
               (cond [(or (eq? a 'zero) (eq? b 'zero)) 'zero]
                     [(eq? a 'one) b] [(eq? b 'one) a]
                     [else (emit #`(#3%fl* #,a #,b))]))
             (define (sub a b)
               (cond [(eq? b 'zero) a]
                     [else (emit #`(#3%fl- #,(lit a) #,(lit b)))]))
             (define (add a b)
               (cond [(eq? a 'zero) b] [(eq? b 'zero) a]
                     [else (emit #`(#3%fl+ #,(lit a) #,(lit b)))]))
             ;; which Jacobian entries bt-solve's jacobians! writes
             (define (fj-nonzero? rw c)
               (cond [(fx= rw 0) #f]        ; row 0 is e_nm: the constant 1 below
                     [(or (fx= rw nm) (fx= rw 4)) #t]
                     [else (or (fx= c 0) (fx= c nm) (fx= c rw))]))
             (define (nj-nonzero? rw c)
               (cond [(fx= rw 0) #f] [(fx= rw 4) #t] [else (or (fx= c 0) (fx= c rw))]))
             (define (load-jac vec nonzero? offset rw c)
               (cond [(and (eq? vec 'f) (fx= rw 0) (fx= c nm)) 'one]
                     [(nonzero? rw c)
                      (emit #`(#3%vector-ref #,(if (eq? vec 'f) #'fj #'nj)
                                (#3%fx+ (#3%fx* 25 (#3%fx+ p #,offset)) #,(fx+ (fx* 5 rw) c))))]
                     [else 'zero]))
             (define (block f)
               (let ([b (make-vector 25)])
                 (do ([e 0 (fx+ e 1)]) ((fx= e 25) b)
                   (vector-set! b e (f (fxquotient e 5) (fxremainder e 5))))))
             (define (bref b rw c) (vector-ref b (fx+ (fx* 5 rw) c)))
             (define (bset! b rw c v) (vector-set! b (fx+ (fx* 5 rw) c) v))
             (let* ([a (and (not first?)
                            (block (lambda (rw c)
                                     (sub (sub (mul #'ntmp2 (load-jac 'f fj-nonzero? -1 rw c))
                                               (mul #'tmp1 (load-jac 'n nj-nonzero? -1 rw c)))
                                          (if (fx= rw c) #'dtd 'zero)))))]
                    [b (block (lambda (rw c)
                                (let ([v (mul #'tmp1x2 (load-jac 'n nj-nonzero? 0 rw c))])
                                  (if (fx= rw c) (add v #'bdiag) v))))]
                    [cc (and (not last?)
                             (block (lambda (rw c)
                                      (sub (sub (mul #'tmp2 (load-jac 'f fj-nonzero? 1 rw c))
                                                (mul #'tmp1 (load-jac 'n nj-nonzero? 1 rw c)))
                                           (if (fx= rw c) #'dtd 'zero)))))]
                    [rv (let ([v (make-vector 5)])
                          (do ([m 0 (fx+ m 1)]) ((fx= m 5) v)
                            (vector-set! v m (emit #`(fref r (#3%fx+ ro #,m))))))])
               (unless first?
                 ;; rhs_p - A rhs_p-1 and B - A C'_p-1
                 (let ([rm (let ([v (make-vector 5)])
                             (do ([m 0 (fx+ m 1)]) ((fx= m 5) v)
                               (vector-set! v m (emit #`(fref r (#3%fx+ rom #,m))))))]
                       [cm (block (lambda (rw c)
                                    (emit #`(#3%vector-ref cp (#3%fx+ (#3%fx* 25 (#3%fx- p 1))
                                                                      #,(fx+ (fx* 5 rw) c))))))])
                   (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                     (do ([k 0 (fx+ k 1)]) ((fx= k 5))
                       (vector-set! rv m (sub (vector-ref rv m) (mul (bref a m k) (vector-ref rm k))))))
                   (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                     (do ([n 0 (fx+ n 1)]) ((fx= n 5))
                       (do ([k 0 (fx+ k 1)]) ((fx= k 5))
                         (bset! b m n (sub (bref b m n) (mul (bref a m k) (bref cm k n)))))))))
               ;; Gauss-Jordan elimination of b, applied to cc and rv
               (do ([pv 0 (fx+ pv 1)]) ((fx= pv 5))
                 (let ([pivot (emit #`(#3%fl/ 1.0 #,(lit (bref b pv pv))))])
                   (do ([c (fx+ pv 1) (fx+ c 1)]) ((fx= c 5))
                     (bset! b pv c (mul (bref b pv c) pivot)))
                   (when cc
                     (do ([c 0 (fx+ c 1)]) ((fx= c 5))
                       (bset! cc pv c (mul (bref cc pv c) pivot))))
                   (vector-set! rv pv (mul (vector-ref rv pv) pivot))
                   (do ([q 0 (fx+ q 1)]) ((fx= q 5))
                     (unless (fx= q pv)
                       (let ([coeff (bref b q pv)])
                         (do ([c (fx+ pv 1) (fx+ c 1)]) ((fx= c 5))
                           (bset! b q c (sub (bref b q c) (mul coeff (bref b pv c)))))
                         (when cc
                           (do ([c 0 (fx+ c 1)]) ((fx= c 5))
                             (bset! cc q c (sub (bref cc q c) (mul coeff (bref cc pv c))))))
                         (vector-set! rv q (sub (vector-ref rv q) (mul coeff (vector-ref rv pv)))))))))
               (let ([stores
                      (append
                        (let loop ([m 0])
                          (if (fx= m 5) '()
                              (cons #`(fset! r (#3%fx+ ro #,m) #,(lit (vector-ref rv m))) (loop (fx+ m 1)))))
                        (if cc
                            (let loop ([e 0])
                              (if (fx= e 25) '()
                                  (cons #`(#3%vector-set! cp (#3%fx+ (#3%fx* 25 p) #,e) #,(lit (vector-ref cc e)))
                                        (loop (fx+ e 1)))))
                            '()))])
                 #`(define (name fj nj cp r p ro rom tmp1 tmp2 ntmp2 dtd tmp1x2 bdiag)
                     (let* #,(reverse binds) #,@stores (void)))))))])))

  (define-block-step first-x 1 #t #f)
  (define-block-step middle-x 1 #f #f)
  (define-block-step last-x 1 #f #t)
  (define-block-step first-y 2 #t #f)
  (define-block-step middle-y 2 #f #f)
  (define-block-step last-y 2 #f #t)
  (define-block-step first-z 3 #t #f)
  (define-block-step middle-z 3 #f #f)
  (define-block-step last-z 3 #f #t)

  ;; (block-step d which) -> the step procedure of direction d (0 x, 1 y,
  ;; 2 z) for which = 0 (first position), 1 (middle), 2 (last).
  (define steps
    (vector (vector first-x middle-x last-x) (vector first-y middle-y last-y)
            (vector first-z middle-z last-z)))
  (define (block-step d which) (vector-ref (vector-ref steps d) which))

  ;; rhs_p <- rhs_p - C'_p rhs_p+1 (back substitution); C'_p at element 25p
  ;; of cp, rhs_p at element ro, rhs_p+1 at rop.
  (define (back-substitute! cp p r ro rop)
    (let ([b (fx* 25 p)]
          [x0 (fref r rop)] [x1 (fref r (fx+ rop 1))] [x2 (fref r (fx+ rop 2))]
          [x3 (fref r (fx+ rop 3))] [x4 (fref r (fx+ rop 4))])
      (do ([m 0 (fx+ m 1)]) ((fx= m 5))
        (let ([e (fx+ b (fx* 5 m))] [o (fx+ ro m)])
          (fset! r o (fl- (fl- (fl- (fl- (fl- (fref r o) (fl* (#3%vector-ref cp e) x0))
                                         (fl* (#3%vector-ref cp (fx+ e 1)) x1))
                                    (fl* (#3%vector-ref cp (fx+ e 2)) x2))
                               (fl* (#3%vector-ref cp (fx+ e 3)) x3))
                          (fl* (#3%vector-ref cp (fx+ e 4)) x4))))))))
