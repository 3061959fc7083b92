#!chezscheme
;;; NAS MG at class S in every mode it runs (serial; places and threads at
;;; np 1 and 2): each run must verify the residual norm.  No timing is asserted.
(import (chezscheme) (harness) (nas common) (nas mg))

(test-limit 60)

;; the first note of each run, "rnm2 VALUE, reference ...": the same in all
(define rnm2-notes '())

(for-each
  (lambda (run)
    (let ([mode (car run)] [np (cadr run)])
      (test (format "mg class S ~a np ~a verifies" mode np)
        (let ([r (mg-run 'S mode np)])
          (set! rnm2-notes (cons (car (nas-result-notes r)) rnm2-notes))
          (check-equal "result names the run" (list 'mg 'S mode np) (nas-result-configuration r))
          (check (format "verified: ~a" (nas-result-notes r)) (nas-result-verified? r))))))
  '((serial 1) (places 1) (places 2) (threads 1) (threads 2)))

(test "mg's residual norm does not depend on the mode or np"
  (check-equal "five runs" 5 (length rnm2-notes))
  (check (format "one rnm2: ~s" rnm2-notes)
         (for-all (lambda (note) (string=? note (car rnm2-notes))) rnm2-notes)))

(test "mg-run rejects bad arguments"
  (check-raises "class" (assertion-from? 'mg-run) (lambda () (mg-run 'Q 'serial 1)))
  (check-raises "class B unsupported" (assertion-from? 'mg-run) (lambda () (mg-run 'B 'serial 1)))
  (check-raises "mode" (assertion-from? 'mg-run) (lambda () (mg-run 'S 'bogus 1)))
  (check-raises "futures not run" (assertion-from? 'mg-run) (lambda () (mg-run 'S 'futures 1)))
  (check-raises "np zero" (assertion-from? 'mg-run) (lambda () (mg-run 'S 'places 0)))
  (check-raises "np not a fixnum" (assertion-from? 'mg-run) (lambda () (mg-run 'S 'threads 1.5)))
  (check-raises "serial with 2" (assertion-from? 'mg-run) (lambda () (mg-run 'S 'serial 2))))

(done)
