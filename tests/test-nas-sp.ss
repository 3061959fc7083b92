#!chezscheme
;;; NAS SP at class S in every mode it runs (serial; places and threads at
;;; np 1 and 2): each run must verify the five residual and five error
;;; norms.  No timing is asserted.
(import (chezscheme) (harness) (nas common) (nas sp))

(test-limit 60)

(for-each
  (lambda (run)
    (let ([mode (car run)] [np (cadr run)])
      (test (format "sp class S ~a np ~a verifies" mode np)
        (let ([r (sp-run 'S mode np)])
          (check-equal "result names the run" (list 'sp 'S mode np) (nas-result-configuration r))
          (check (format "verified: ~a" (nas-result-notes r)) (nas-result-verified? r))))))
  '((serial 1) (places 1) (places 2) (threads 1) (threads 2)))

(test "sp-run rejects bad arguments"
  (check-raises "class" (assertion-from? 'sp-run) (lambda () (sp-run 'Q 'serial 1)))
  (check-raises "class B unsupported" (assertion-from? 'sp-run) (lambda () (sp-run 'B 'serial 1)))
  (check-raises "mode" (assertion-from? 'sp-run) (lambda () (sp-run 'S 'bogus 1)))
  (check-raises "futures not run" (assertion-from? 'sp-run) (lambda () (sp-run 'S 'futures 1)))
  (check-raises "np zero" (assertion-from? 'sp-run) (lambda () (sp-run 'S 'places 0)))
  (check-raises "np not a fixnum" (assertion-from? 'sp-run) (lambda () (sp-run 'S 'threads 1.5)))
  (check-raises "serial with 2" (assertion-from? 'sp-run) (lambda () (sp-run 'S 'serial 2))))

(done)
