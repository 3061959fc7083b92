#!chezscheme
;;; (spindle mpi) at its edges (issue 31): collectives given disagreeing
;;; kinds, lengths, roots or operations at one rank; an in-place send cut
;;; by a deadline; an exit from a parallel thread of a rank; fxvectors
;;; through rmpi-send.  Jobs of 2 and 3 ranks (tests/support/mpi/mpi-child.ss runs
;;; each scenario); skipped with a message without Open MPI.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness)
        (only (spindle private os processes) shell-command) (mpi-jobs))

(test-limit 150)

(if (not have-mpi?)
    (printf "skipped: Open MPI is not installed (make test installs openmpi-bin and libopenmpi-dev with apt-get; it failed)\n")
    (begin
      (test "every collective given another kind, length, root, form or operation at one rank (allreduce of vectors of 3 and 2 elements, of 100000 and 2; alltoall of a bytevector and an fxvector; ...), or an argument bad at one rank only: every rank raises naming the collective, and the ranks stay in step; 2 and 3 ranks, twice"
        (for-each
          (lambda (np)
            (let-values ([(rc text secs) (mpirun np 60 "disagree")])
              (check-run (format "~a ranks: exit code" np) rc text np "disagree")))
          '(2 3 2 3)))

      (test "an in-place send of 4 MiB cut by a deadline (a bytevector, a range of one, a shared vector) or whose thread is killed, its buffer then refilled: the receiver, a second later, gets the bytes as they were at the call; over shared memory and over TCP, twice"
        (do ([i 0 (+ i 1)]) ((= i 2))
          (check-over-transports 60 "bytes-deadline")))

      (test "exit 4 in a parallel thread of a rank (and in a coroutine thread) while the others wait in an allreduce ends the job within 15 s (with its start) with exit code 4, naming the rank and the code; no process is left (the parallel thread's exit finalised MPI, waiting for the others for ever)"
        (for-each
          (lambda (pool)
            (let-values ([(rc text secs) (mpirun 3 60 "exit-thread" work pool)])
              (unless (eqv? rc 4) (display text))
              (check-equal (format "~a: the job's exit code" pool) 4 rc)
              (check (format "~a: within 15 s" pool) (< secs 15))
              (check (format "~a: the rank and its exit code are named" pool) (contains? text "rank 2 failed (exit code 4)"))
              (sleep 0.5)
              (check-equal (format "~a: no process left" pool) 0
                (shell-command (format "test -z \"$(pgrep -f '[m]pi-child.ss exit-thread ~a')\"" work)))))
          '("own" "main" "own")))

      (test "rmpi-send of fxvectors (empty, small, over 64 KiB, extreme elements) arrives as fxvectors, in order with other values, through rmpi-recv and the evt; a general reduction of fxvectors; over shared memory and over TCP"
        (check-over-transports 60 "fxvectors"))))

(shell-command (format "rm -rf ~a" work))
(done)
