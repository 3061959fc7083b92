#!chezscheme
;;; NAS LU at class S in every mode it runs (serial; places and threads at
;;; np 1 and 2): each run must verify the residual norms, the error norms
;;; and the surface integral.  No timing is asserted.
(import (chezscheme) (harness) (nas common) (nas lu))

;; Class S takes about half a second of CPU per run; a loaded 2-core
;; machine stretches that several times.
(test-limit 60)

(for-each
  (lambda (run)
    (let ([mode (car run)] [np (cadr run)])
      (test (format "lu class S ~a np ~a verifies" mode np)
        (let ([r (lu-run 'S mode np)])
          (check-equal "result names the run" (list 'lu 'S mode np) (nas-result-configuration r))
          (check (format "verified: ~a" (nas-result-notes r)) (nas-result-verified? r))))))
  ;; np 3 splits class S's 100 points of a plane 34/33/33, inside rows
  '((serial 1) (places 1) (places 2) (places 3) (threads 1) (threads 2) (threads 3)))

(test "lu-run: a bad class, mode or np raises &assertion naming lu-run"
  (check-raises "class" (both (assertion-from? 'lu-run) (irritant? 'Z)) (lambda () (lu-run 'Z 'serial 1)))
  (check-raises "class B" (both (assertion-from? 'lu-run) (irritant? 'B)) (lambda () (lu-run 'B 'serial 1)))
  (check-raises "mode" (both (assertion-from? 'lu-run) (irritant? 'bogus)) (lambda () (lu-run 'S 'bogus 1)))
  (check-raises "futures" (both (assertion-from? 'lu-run) (irritant? 'futures))
                (lambda () (lu-run 'S 'futures 1)))
  (check-raises "np 0" (both (assertion-from? 'lu-run) (irritant? 0)) (lambda () (lu-run 'S 'places 0)))
  (check-raises "np not exact" (assertion-from? 'lu-run) (lambda () (lu-run 'S 'threads 2.0)))
  (check-raises "serial np 2" (both (assertion-from? 'lu-run) (irritant? 2)) (lambda () (lu-run 'S 'serial 2))))

(done)
