#!chezscheme
;;; NAS BT at class S in every mode it runs (serial; threads and places at
;;; 1 and 2 workers): each run must verify against the NPB 3.4 residual and
;;; error norms.  Bad arguments raise &assertion naming bt-run.
(import (except (chezscheme) thread? sleep make-parameter parameterize)
        (harness) (nas common) (nas bt) (nas bt-verify))

(test-limit 120)

(define (verified-run mode np)
  (let ([r (bt-run 'S mode np)])
    (unless (nas-result-verified? r)
      (for-each (lambda (s) (printf "  ~a\n" s)) (nas-result-notes r)))
    (check (format "class S ~a np ~a verifies" mode np) (nas-result-verified? r))
    ;; the ten verified quantities, then one usage note per member
    (check-equal "ten verified quantities and np usage notes" (+ 10 np)
                 (length (nas-result-notes r)))
    (check "positive time" (> (nas-result-seconds r) 0))))

(test "serial, class S" (verified-run 'serial 1))
(test "threads np 1, class S" (verified-run 'threads 1))
(test "threads np 2, class S" (verified-run 'threads 2))
(test "places np 1, class S" (verified-run 'places 1))
(test "places np 2, class S" (verified-run 'places 2))

(test "a wrong answer does not verify"
  (let-values ([(ok notes) (bt-verify 'S '(1.0 1.0 1.0 1.0 1.0) '(1.0 1.0 1.0 1.0 1.0))])
    (check "not verified" (not ok))
    (check-equal "one note per quantity" 10 (length notes))))

(test "bad arguments raise &assertion naming bt-run"
  (check-raises "unknown class" (both (assertion-from? 'bt-run) (irritant? 'Q))
                (lambda () (bt-run 'Q 'serial 1)))
  (check-raises "class B is not offered" (both (assertion-from? 'bt-run) (irritant? 'B))
                (lambda () (bt-run 'B 'serial 1)))
  (check-raises "futures mode is not offered" (both (assertion-from? 'bt-run) (irritant? 'futures))
                (lambda () (bt-run 'S 'futures 2)))
  (check-raises "unknown mode" (both (assertion-from? 'bt-run) (irritant? 'gpu))
                (lambda () (bt-run 'S 'gpu 1)))
  (check-raises "zero workers" (both (assertion-from? 'bt-run) (irritant? 0))
                (lambda () (bt-run 'S 'places 0)))
  (check-raises "non-integer workers" (both (assertion-from? 'bt-run) (irritant? 1.5))
                (lambda () (bt-run 'S 'threads 1.5)))
  (check-raises "serial with two workers" (both (assertion-from? 'bt-run) (irritant? 2))
                (lambda () (bt-run 'S 'serial 2))))

(done)
