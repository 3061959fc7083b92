#!chezscheme
;;; fork-join's communication-group operations (CGsend, CGrecv,
;;; CGbroadcast, CGallreduce, CGalltoall, CGpipeline, CGBarrier) over
;;; places and over MPI ranks: tests/support/cg-program.ss is one program, run
;;; with `spindle run` (members are places) and with `spindle mpirun`
;;; (members are ranks), checking every operation against a sequential
;;; computation.  The MPI runs are skipped with a message when Open MPI is
;;; not installed (make test installs it).
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (spindle fork-join)
        (harness) (cg-ops) (only (text-files) read-file)
        (only (spindle private os processes) shell-command own-pid))

(test-limit 150)

(define work (format "/tmp/spindle-test-cg-mpi-~a" (own-pid)))
(shell-command (format "mkdir -p ~a" work))

;; Runs a shell command (bounded by limit seconds); (values exit-code output).
(define (run-bounded limit command)
  (let* ([out (format "~a/out" work)]
         [rc (shell-command (format "timeout -k 5 ~a ~a >~a 2>&1" limit command out))])
    (values rc (read-file out))))

(define (occurrences s part)
  (let loop ([i 0] [k 0])
    (cond
      [(> (+ i (string-length part)) (string-length s)) k]
      [(string=? (substring s i (+ i (string-length part))) part) (loop (+ i 1) (+ k 1))]
      [else (loop (+ i 1) k)])))

(define big 1000000)   ; bytes: above every eager limit, so sends must not wait for receives

(test "places: every operation at 1, 2, 3 and 4 members (the program run by spindle run)"
  (for-each
    (lambda (np)
      (let-values ([(rc text) (run-bounded 60 (format "bin/spindle run tests/support/cg-program.ss ~a ~a" np big))])
        (check-equal (format "~a members: exit code" np) 0 rc)
        (check (format "~a members: every check passed" np) (string-contains? text (format "cg ops ok ~a" np)))
        (unless (eqv? rc 0) (display text))))
    '(1 2 3 4)))

(test "outside mpirun, fork-join-members is its argument and every process is the leader"
  (check-equal "members" 3 (fork-join-members 3))
  (check "leader" (fork-join-leader?)))

(test "bad calls name the operation"
  (let ([got (cg-misuse 2)])
    (for-each
      (lambda (who r) (check-equal (format "~a raised, naming ~a" r who) who (and (pair? r) (car r))))
      '(CGsend CGsend CGrecv CGrecv CGsend CGalltoall CGbroadcast CGallreduce CGalltoallv CGalltoallv)
      got)))

(define have-mpi? (eqv? 0 (shell-command "command -v mpirun >/dev/null 2>&1 && test -e /usr/lib/x86_64-linux-gnu/libmpi.so.40")))

(if (not have-mpi?)
    (printf "skipped: Open MPI is not installed (make test installs openmpi-bin and libopenmpi-dev with apt-get; it failed): the MPI half of this test did not run\n")
    (begin
      (test "MPI ranks: the same program, unchanged, at 1, 2, 3 and 4 ranks; rank 0 alone prints"
        (for-each
          (lambda (np)
            (let-values ([(rc text) (run-bounded 90 (format "bin/spindle mpirun -np ~a tests/support/cg-program.ss ~a ~a" np np big))])
              (check-equal (format "~a ranks: exit code" np) 0 rc)
              (check (format "~a ranks: every check passed" np) (string-contains? text (format "cg ops ok ~a" np)))
              (check-equal (format "~a ranks: printed by rank 0 only" np) 1 (occurrences text "cg ops ok"))
              (unless (eqv? rc 0) (display text))))
          '(1 2 3 4)))
      (test "each fork-join over ranks has its own communicator: a message one group leaves unreceived is not the next group's, and a program's own message on the world communicator with fork-join's old CGsend tag (32700) is not a CGsend's; as over places; 2 and 3 ranks"
        (for-each
          (lambda (np)
            (let ([want (format "cg groups ~s" (if (= np 2) '#((cg own) fresh) '#((cg own) fresh other)))])
              (let-values ([(rc text) (run-bounded 60 (format "bin/spindle run tests/support/cg-groups.ss ~a" np))])
                (check (format "~a places: ~a" np want) (and (eqv? rc 0) (string-contains? text want)))
                (unless (eqv? rc 0) (display text)))
              (let-values ([(rc text) (run-bounded 60 (format "bin/spindle mpirun -np ~a tests/support/cg-groups.ss ~a" np np))])
                (check (format "~a ranks: ~a" np want) (and (eqv? rc 0) (string-contains? text want)))
                (unless (and (eqv? rc 0) (string-contains? text want)) (display text)))))
          '(2 3)))

      (test "MPI ranks over TCP only (btl tcp,self), 3 ranks"
        (let-values ([(rc text) (run-bounded 90 (format "env OMPI_MCA_btl=tcp,self bin/spindle mpirun -np 3 tests/support/cg-program.ss 3 ~a" big))])
          (check-equal "exit code" 0 rc)
          (check "every check passed" (string-contains? text "cg ops ok 3"))
          (unless (eqv? rc 0) (display text))))))

(shell-command (format "rm -rf ~a" work))
(done)
