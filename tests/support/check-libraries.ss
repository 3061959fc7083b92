#!chezscheme
;;; `make check`: every public library expands and loads (no tests run).
(import (only (chezscheme) printf)
        (only (spindle) thread) (only (spindle thread) thread-wait) (only (spindle event) sync)
        (only (spindle future) future) (only (spindle parameter) make-thread-parameter)
        (only (spindle place) dynamic-place) (only (spindle fork-join) fork-join) (only (spindle mpi) rmpi-world)
        (only (spindle subprocess) subprocess) (only (spindle console) stdin-port)
        (only (srfi :18) make-thread) (only (util concurrent) make-shared-queue)
        (only (spindle concurrent-hashtable) make-concurrent-eq-hashtable)
        (only (spindle synchronized-port) make-synchronized-port)
        (only (spindle build) parallel-build))
(printf "all libraries load\n")
