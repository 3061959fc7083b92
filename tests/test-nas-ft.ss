#!chezscheme
;;; NAS FT at class S in every mode (serial; places, threads and futures
;;; at np 1 and 2): each run must verify its six checksums.  No timing is
;;; asserted.
(import (chezscheme) (harness) (nas common) (nas ft))

(test-limit 90)

(define (notes-starting prefix r)
  (filter (lambda (n) (and (>= (string-length n) (string-length prefix))
                           (string=? prefix (substring n 0 (string-length prefix)))))
          (nas-result-notes r)))

(for-each
  (lambda (mode np)
    (test (format "ft class S ~a np ~a verifies" mode np)
      (let* ([trip (collect-trip-bytes)] [r (ft-run 'S mode np)])
        (check-equal "the run it describes" (list 'ft 'S mode np) (nas-result-configuration r))
        (check-equal "the young generation's size restored" trip (collect-trip-bytes))
        (check-equal "one note per checksum" 6
          (length (notes-starting "checksum " r)))
        ;; the timed part's allocation and CPU, except in futures mode
        (check-equal "usage note" (if (eq? mode 'futures) 0 1)
          (length (notes-starting "timed part: " r)))
        (check (format "verified: ~s" (nas-result-notes r)) (nas-result-verified? r)))))
  '(serial places places threads threads futures futures)
  '(1 1 2 1 2 1 2))

(test "ft-run rejects bad arguments"
  (check-raises "unknown class" (assertion-from? 'ft-run) (lambda () (ft-run 'Z 'serial 1)))
  (check-raises "class B is not run" (assertion-from? 'ft-run) (lambda () (ft-run 'B 'serial 1)))
  (check-raises "unknown mode" (assertion-from? 'ft-run) (lambda () (ft-run 'S 'gpu 1)))
  (check-raises "np 0" (assertion-from? 'ft-run) (lambda () (ft-run 'S 'threads 0)))
  (check-raises "np not an integer" (assertion-from? 'ft-run) (lambda () (ft-run 'S 'places 2.0)))
  (check-raises "serial at np 2" (assertion-from? 'ft-run) (lambda () (ft-run 'S 'serial 2))))

(done)
