#!chezscheme
;;; The 5x5 block algebra of BT's block-tridiagonal solves, on raw
;;; addresses (bt-grid): a block is 25 doubles, row-major (element (r, c)
;;; at r*5 + c); a vector is 5 consecutive doubles.
(library (nas bt-block)
  (export matvec-sub! matmul-sub! binvcrhs! binvrhs!)
  (import (chezscheme) (nas bt-grid))

  (define-syntax el
    (syntax-rules () [(_ r c) (fx+ (fx* r 5) c)]))

  ;; b <- b - a v
  (define (matvec-sub! a v b)
    (do ([m 0 (fx+ m 1)]) ((fx= m 5))
      (let loop ([k 0] [acc (fref b m)])
        (if (fx= k 5)
            (fset! b m acc)
            (loop (fx+ k 1) (fl- acc (fl* (fref a (el m k)) (fref v k))))))))

  ;; c <- c - a b
  (define (matmul-sub! a b c)
    (do ([m 0 (fx+ m 1)]) ((fx= m 5))
      (do ([n 0 (fx+ n 1)]) ((fx= n 5))
        (let loop ([k 0] [acc (fref c (el m n))])
          (if (fx= k 5)
              (fset! c (el m n) acc)
              (loop (fx+ k 1) (fl- acc (fl* (fref a (el m k)) (fref b (el k n))))))))))

  ;; Gauss-Jordan elimination without pivoting of the block b, applied to
  ;; the block c (when given) and the vector r: c <- b^-1 c, r <- b^-1 r.
  ;; b is overwritten.
  (define (eliminate! b c r)
    (do ([p 0 (fx+ p 1)]) ((fx= p 5))
      (let ([pivot (fl/ 1.0 (fref b (el p p)))])
        (do ([col (fx+ p 1) (fx+ col 1)]) ((fx= col 5))
          (fset! b (el p col) (fl* (fref b (el p col)) pivot)))
        (when c
          (do ([col 0 (fx+ col 1)]) ((fx= col 5))
            (fset! c (el p col) (fl* (fref c (el p col)) pivot))))
        (fset! r p (fl* (fref r p) pivot))
        (do ([q 0 (fx+ q 1)]) ((fx= q 5))
          (unless (fx= q p)
            (let ([coeff (fref b (el q p))])
              (do ([col (fx+ p 1) (fx+ col 1)]) ((fx= col 5))
                (fset! b (el q col) (fl- (fref b (el q col)) (fl* coeff (fref b (el p col))))))
              (when c
                (do ([col 0 (fx+ col 1)]) ((fx= col 5))
                  (fset! c (el q col) (fl- (fref c (el q col)) (fl* coeff (fref c (el p col)))))))
              (fset! r q (fl- (fref r q) (fl* coeff (fref r p))))))))))

  (define (binvcrhs! b c r) (eliminate! b c r))
  (define (binvrhs! b r) (eliminate! b #f r)))
