#!chezscheme
;;; The NPB pseudo-random generator (NPB 3.4 specification, section 2.2):
;;;   x(k+1) = a * x(k) mod 2^46,  r(k) = x(k) * 2^-46  in (0, 1).
;;; The reference codes compute it in doubles split into 23-bit halves;
;;; here the state is an exact fixnum (Chez fixnums hold 60 bits), and the
;;; product is formed from the same halves so that every partial product
;;; stays below 2^47: the results are bit-identical to the reference.
(library (nas random)
  (export nas-seed nas-multiplier random-next random-scale random-power
          random-fill!)
  (import (chezscheme))

  (define nas-seed 314159265)        ; the seed most kernels start from
  (define nas-multiplier 1220703125) ; 5^13

  (define two23 8388608)
  (define mask23 (fx- two23 1))
  (define mask46 (fx- (fxsll 1 46) 1))
  (define two-46 (expt 2.0 -46))

  ;; a * x mod 2^46, for 0 <= a, x < 2^46.
  (define (random-next x a)
    (let ([a1 (fxsra a 23)] [a2 (fxlogand a mask23)]
          [x1 (fxsra x 23)] [x2 (fxlogand x mask23)])
      (fxlogand (fx+ (fxsll (fxlogand (fx+ (fx* a1 x2) (fx* a2 x1)) mask23) 23)
                     (fx* a2 x2))
                mask46)))

  ;; The deviate in (0, 1) of state x.
  (define (random-scale x) (fl* (fixnum->flonum x) two-46))

  ;; a^n mod 2^46: the multiplier that jumps n states ahead.
  (define (random-power a n)
    (let loop ([result 1] [base a] [n n])
      (cond [(= n 0) result]
            [(odd? n) (loop (random-next result base) (random-next base base) (quotient n 2))]
            [else (loop result (random-next base base) (quotient n 2))])))

  ;; The reference's vranlc: stores the next n deviates after state x as
  ;; doubles at bv[offset], bv[offset+8], ...; returns the last state.
  (define (random-fill! x a n bv offset)
    (let loop ([i 0] [x x])
      (if (fx= i n)
          x
          (let ([x (random-next x a)])
            (bytevector-ieee-double-native-set! bv (fx+ offset (fx* i 8)) (random-scale x))
            (loop (fx+ i 1) x))))))
