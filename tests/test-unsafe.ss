#!chezscheme
;;; (spindle unsafe): unchecked shared-vector access agrees with the checked
;;; procedures, across a place too.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (spindle unsafe) (harness))

(test "unsafe ref and set! agree with the checked ones"
  (let ([fl (make-shared-flvector 100 0.0)] [fx (make-shared-fxvector 100 0)])
    (do ([i 0 (fx+ i 1)]) ((fx= i 100))
      (unsafe-shared-flvector-set! fl i (fl* 0.5 (fixnum->flonum i)))
      (unsafe-shared-fxvector-set! fx i (fx- 0 (fx* i i))))
    (check "flonums" (for-all (lambda (i) (fl= (shared-flvector-ref fl i) (fl* 0.5 (fixnum->flonum i))))
                              (iota 100)))
    (check "fixnums, negative too" (for-all (lambda (i) (fx= (shared-fxvector-ref fx i) (fx- 0 (fx* i i)))) (iota 100)))
    (shared-flvector-set! fl 7 -3.25)
    (check-equal "unsafe reads what the checked set! wrote" -3.25 (unsafe-shared-flvector-ref fl 7))
    (check-equal "fxvector too" (- (expt 2 59)) (begin (shared-fxvector-set! fx 3 (- (expt 2 59))) (unsafe-shared-fxvector-ref fx 3)))))

(test "the address works with foreign-ref"
  (let* ([v (shared-flvector 1.0 2.0 3.0)] [a (unsafe-shared-vector-address v)])
    (check-equal "element 2" 3.0 (foreign-ref 'double-float a 16))
    (foreign-set! 'double-float a 0 9.5)
    (check-equal "written through the address" 9.5 (shared-flvector-ref v 0))))

(test "block copies both ways; the bytevector range is checked"
  (let ([v (make-shared-flvector 10 0.0)] [bv (make-bytevector 40 0)])
    (do ([i 0 (fx+ i 1)]) ((fx= i 5)) (bytevector-ieee-double-native-set! bv (fx* i 8) (fixnum->flonum i)))
    (unsafe-bytevector->shared-vector! bv 8 v 16 32)
    (check-equal "elements 2..5 are 1..4" '(0.0 0.0 1.0 2.0 3.0 4.0 0.0)
                 (map (lambda (i) (shared-flvector-ref v i)) (iota 7)))
    (let ([out (make-bytevector 16 0)])
      (unsafe-shared-vector->bytevector! v 24 out 0 16)
      (check-equal "and back" '(2.0 3.0) (list (bytevector-ieee-double-native-ref out 0) (bytevector-ieee-double-native-ref out 8))))
    (check-raises "a bytevector range too long" (assertion-from? 'unsafe-shared-vector->bytevector!)
                  (lambda () (unsafe-shared-vector->bytevector! v 0 (make-bytevector 8) 0 16)))))

(done)
