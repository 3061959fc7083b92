#!chezscheme
;;; NAS CG at class S in every mode it runs (serial; places and threads at
;;; np 1, 2 and 3, whose blocks hold unequal row counts): each run must
;;; verify zeta, and zeta must be the same in all.  No timing is asserted.
(import (chezscheme) (harness) (nas common) (nas cg))

(test-limit 60)

;; the zeta note of each run ("zeta 8.59..., reference ...")
(define zetas '())

(for-each
  (lambda (run)
    (let ([mode (car run)] [np (cadr run)])
      (test (format "cg class S ~a np ~a verifies" mode np)
        (let ([r (cg-run 'S mode np)])
          (check-equal "result names the run" (list 'cg 'S mode np) (nas-result-configuration r))
          (check (format "verified: ~a" (nas-result-notes r)) (nas-result-verified? r))
          (let ([note (car (nas-result-notes r))])
            (set! zetas (cons (substring note 0 (let loop ([i 0]) (if (char=? (string-ref note i) #\,) i (loop (+ i 1)))))
                              zetas)))))))
  '((serial 1) (places 1) (places 2) (places 3) (threads 1) (threads 2) (threads 3)))

;; dot products are summed by fixed chunks of rows, whatever np
(test "cg zeta is the same to the last digit in every mode and np"
  (check-equal "one zeta" 1 (length (fold-left (lambda (seen z) (if (member z seen) seen (cons z seen))) '() zetas)))
  (check-equal "every run" 7 (length zetas)))

(test "cg-run rejects bad arguments"
  (check-raises "class" (assertion-from? 'cg-run) (lambda () (cg-run 'Q 'serial 1)))
  (check-raises "class B unsupported" (assertion-from? 'cg-run) (lambda () (cg-run 'B 'serial 1)))
  (check-raises "mode" (assertion-from? 'cg-run) (lambda () (cg-run 'S 'bogus 1)))
  (check-raises "futures not run" (assertion-from? 'cg-run) (lambda () (cg-run 'S 'futures 1)))
  (check-raises "np zero" (assertion-from? 'cg-run) (lambda () (cg-run 'S 'places 0)))
  (check-raises "np not a fixnum" (assertion-from? 'cg-run) (lambda () (cg-run 'S 'threads 1.5)))
  (check-raises "serial with 2" (assertion-from? 'cg-run) (lambda () (cg-run 'S 'serial 2))))

(done)
