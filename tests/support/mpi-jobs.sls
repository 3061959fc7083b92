#!chezscheme
;;; MPI jobs for tests/test-mpi.ss and tests/test-mpi-edges.ss: running
;;; tests/support/mpi/mpi-child.ss scenarios under `spindle mpirun`, bounded in
;;; time, and checking their "rank R: ok SCENARIO" lines.
(library (mpi-jobs)
  (export work have-mpi? contains? mpirun mpirun/env check-ok check-run check-over-transports)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness) (only (text-files) read-file)
          (only (spindle private os processes) shell-command own-pid))

  ;; This test process's scratch directory (the caller removes it).
  (define work (format "/tmp/spindle-test-mpi-~a" (own-pid)))
  (define made (shell-command (format "mkdir -p ~a" work)))

  (define (contains? s part)
    (let ([n (string-length s)] [k (string-length part)])
      (let loop ([i 0])
        (and (<= (+ i k) n) (or (string=? (substring s i (+ i k)) part) (loop (+ i 1)))))))

  ;; Runs `spindle mpirun -np np tests/support/mpi/mpi-child.ss args` (bounded by
  ;; limit seconds); returns (values exit-code output seconds).
  (define (mpirun np limit . args) (apply mpirun/env "" np limit args))

  ;; The same with environment settings env ("NAME=value ...") for mpirun.
  (define (mpirun/env env np limit . args)
    (let ([out (format "~a/out" work)] [t0 (current-inexact-monotonic-milliseconds)])
      (let ([rc (shell-command
                  (format "~a timeout -k 5 ~a bin/spindle mpirun -np ~a tests/support/mpi/mpi-child.ss ~a >~a 2>&1"
                          env limit np (apply string-append (map (lambda (a) (format " ~a" a)) args)) out))])
        (values rc (read-file out) (/ (- (current-inexact-monotonic-milliseconds) t0) 1000.)))))

  (define (check-ok np text scenario)
    (do ([r 0 (+ r 1)]) ((= r np))
      (check-equal (format "rank ~a passed ~a" r scenario) #t
        (contains? text (format "rank ~a: ok ~a" r scenario)))))

  ;; Scenario (with args) as a job of 2 ranks over shared memory and over
  ;; TCP, each within limit seconds.
  (define (check-over-transports limit scenario . args)
    (for-each
      (lambda (btl)
        (let-values ([(rc text secs) (apply mpirun/env (format "OMPI_MCA_btl=~a" btl) 2 limit scenario args)])
          (check-run (format "over ~a: exit code" btl) rc text 2 scenario)))
      '("self,vader" "tcp,self")))

  ;; A job's exit code (check label `what`), its output shown when it
  ;; failed, then each of its np ranks' "ok SCENARIO" line.
  (define (check-run what rc text np scenario)
    (unless (eqv? rc 0) (display text))
    (check-equal what 0 rc)
    (check-ok np text scenario))

  (define have-mpi? (eqv? 0 (shell-command "command -v mpirun >/dev/null 2>&1 && test -e /usr/lib/x86_64-linux-gnu/libmpi.so.40"))))
