#!chezscheme
;;; The same fork-join program over places (`spindle run tests/support/cg-program.ss NP
;;; BIG`) and over MPI ranks (`spindle mpirun -np NP tests/support/cg-program.ss NP BIG`):
;;; prints "cg ops ok NP" when every member's checks passed.
(import (chezscheme) (spindle fork-join) (cg-ops))

(define args (cdr (command-line)))
(define np (string->number (car args)))
(define big (string->number (cadr args)))

(let ([results (cg-ops (fork-join-members np) big)])
  (when (fork-join-leader?)
    (if (for-all null? (vector->list results))
        (printf "cg ops ok ~a\n" (vector-length results))
        (begin (printf "cg ops FAILED: ~s\n" results) (exit 1)))))
