#!chezscheme
;;; Two fork-joins in a row over places (`spindle run tests/support/cg-groups.ss NP`)
;;; or MPI ranks (`spindle mpirun -np NP tests/support/cg-groups.ss NP`): prints
;;; "cg groups RESULTS", the second group's results (tests/support/cg-ops.sls,
;;; cg-groups).
(import (chezscheme) (spindle fork-join) (cg-ops))

(define np (string->number (cadr (command-line))))

(let ([results (cg-groups (fork-join-members np))])
  (when (fork-join-leader?)
    (printf "cg groups ~s\n" results)))
