#!chezscheme
;;; NAS FT at class S in every mode (serial; places, threads and futures
;;; at np 1 and 2): each run must verify its six checksums.  No timing is
;;; asserted.
(import (chezscheme) (harness))

;; The runner's library path has lib/ and tests/, not bench/: bench/ is
;; added here and (nas ft) reached through eval (places inherit the path).
(define bench
  (let ([dir (path-parent (car (command-line)))])
    (string-append (if (string=? dir "") "." dir) "/../bench")))
(library-directories (append (library-directories) (list (cons bench bench))))
(define nas (environment '(nas common) '(nas ft)))
(define ft-run (eval 'ft-run nas))
(define (describe r)
  (map (lambda (field) ((eval field nas) r))
       '(nas-result-bench nas-result-class nas-result-mode nas-result-np)))
(define verified? (eval 'nas-result-verified? nas))
(define notes (eval 'nas-result-notes nas))

(test-limit 90)

(for-each
  (lambda (mode np)
    (test (format "ft class S ~a np ~a verifies" mode np)
      (let* ([trip (collect-trip-bytes)] [r (ft-run 'S mode np)])
        (check-equal "the run it describes" (list 'ft 'S mode np) (describe r))
        (check-equal "the young generation's size restored" trip (collect-trip-bytes))
        (check-equal "one note per checksum" 6 (length (notes r)))
        (check (format "verified: ~s" (notes r)) (verified? r)))))
  '(serial places places threads threads futures futures)
  '(1 1 2 1 2 1 2))

(test "ft-run rejects bad arguments"
  (check-raises "unknown class" (assertion-from? 'ft-run) (lambda () (ft-run 'Z 'serial 1)))
  (check-raises "class B is not run" (assertion-from? 'ft-run) (lambda () (ft-run 'B 'serial 1)))
  (check-raises "unknown mode" (assertion-from? 'ft-run) (lambda () (ft-run 'S 'mpi 1)))
  (check-raises "np 0" (assertion-from? 'ft-run) (lambda () (ft-run 'S 'threads 0)))
  (check-raises "np not an integer" (assertion-from? 'ft-run) (lambda () (ft-run 'S 'places 2.0)))
  (check-raises "serial at np 2" (assertion-from? 'ft-run) (lambda () (ft-run 'S 'serial 2))))

(done)
