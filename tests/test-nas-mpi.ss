#!chezscheme
;;; NAS EP, IS, CG, MG and FT in their MPI decompositions (mode mpi) at
;;; class S: verified over MPI ranks (jobs of bench/nas-rank.ss: all five at
;;; 1, 2 and 4 ranks) and, with no MPI needed, the same
;;; decompositions run over places (their members only exchange messages,
;;; so places stand in for ranks).  `spindle bench nas --mpi` prints the
;;; places suite's lines.  No timing is asserted.  The MPI runs are
;;; skipped with a message when Open MPI is not installed.  IS and CG also
;;; run across three hosts: network namespaces of this machine
;;; (tests/support/mpi/netns.sh, launched through ip netns exec).
(import (chezscheme) (harness) (only (text-files) read-file) (nas common) (nas is-mpi) (nas cg-mpi) (nas mg-mpi) (nas ft-mpi)
        (only (spindle private os processes) shell-command own-pid))

(test-limit 240)

(test "over places: IS at 1, 2 and 3 members"
  (for-each
    (lambda (np)
      (let ([r (is-mpi-run np 'S)])
        (check-equal (format "np ~a: 50 partial verifications, no key out of order, every key ranked" np)
                     '(50 0 65536) (cdr r))))
    '(1 2 3)))

(test "over places: CG at 1, 2 and 4 members (process grids 1x1, 1x2, 2x2)"
  (for-each
    (lambda (np)
      (let ([zeta (car (cg-mpi-run np 1400 7 15 10.0))])
        (check (format "np ~a: zeta ~a within 1e-10 of 8.5971775078648" np zeta)
               (within-epsilon? zeta 8.5971775078648 1e-10))))
    '(1 2 4)))

(test "over places: MG at 1, 2 and 4 members (4: the coarsest levels replicated)"
  (for-each
    (lambda (np)
      (let* ([r (mg-mpi-run np 5 4)] [rnm2 (car r)])
        (check (format "np ~a: rnm2 ~a within 1e-8 of 0.5307707005734e-04" np rnm2)
               (within-epsilon? rnm2 0.5307707005734e-04 1e-8))
        (check-equal (format "np ~a: member 0's grids are mg-mpi-array-bytes" np)
                     (mg-mpi-array-bytes 5 np 0) (caddr r))))
    '(1 2 4)))

;; np = nx: one plane a member at the top level, the next level replicated
;; (gathered from the top), u one plane wider: rnm2 does not depend on np.
(test "over places: MG on an 8^3 grid at 8 members, rnm2 the same as at 1"
  (check-equal "rnm2" (car (mg-mpi-run 1 3 4)) (car (mg-mpi-run 8 3 4))))

;; Each member holds its slab (and ghosts) of every distributed level of
;; MG, its planes and slabs of FT (the counts the members allocate by), not
;; whole arrays: class W, member 0 at np 2 and 4 against np 1.
(test "MG's and FT's members hold about 1/np of the arrays"
  (let ([mg1 (mg-mpi-array-bytes 7 1 0)] [ft1 (ft-mpi-array-bytes '#(128 128 32 6) 1 0)])
    (for-each
      (lambda (np)
        (check (format "MG np ~a: ~a bytes, at most 1.1/np of np 1's ~a" np (mg-mpi-array-bytes 7 np 0) mg1)
               (<= (* np (mg-mpi-array-bytes 7 np 0)) (* 1.1 mg1)))
        (check (format "FT np ~a: ~a bytes (its slabs, its planes, the transposes' buffer), 1.5/np of np 1's ~a" np (ft-mpi-array-bytes '#(128 128 32 6) np 0) ft1)
               (= (* np (ft-mpi-array-bytes '#(128 128 32 6) np 0)) (* 3/2 ft1))))
      '(2 4))))

(test "over places: FT at 1, 3 and 4 members, the first and last checksums"
  (for-each
    (lambda (np)
      (let* ([sums (cdr (ft-mpi-run np '#(64 64 64 6) (expt 2 20)))]
             [checksum (lambda (t)
                         (let loop ([m 0] [re 0.0] [im 0.0])
                           (if (= m np)
                               (make-rectangular (/ re (expt 64 3)) (/ im (expt 64 3)))
                               (let ([slot (* 2 (+ m (* np t)))])
                                 (loop (+ m 1) (+ re (vector-ref sums slot)) (+ im (vector-ref sums (+ slot 1))))))))])
        (for-each
          (lambda (t ref)
            (check (format "np ~a: checksum ~a within 1e-12 of ~a" np (+ t 1) ref)
                   (<= (/ (magnitude (- (checksum t) ref)) (magnitude ref)) 1e-12)))
          '(0 5) (list 554.6087004964+484.5363331978i 554.2683411902+493.2597244941i))))
    '(1 3 4)))

(test "mode mpi outside an MPI rank is refused, naming the benchmark and the mode"
  (check-raises "is" (both (assertion-from? 'is-run) (irritant? 'mpi)) (lambda () ((eval 'is-run (environment '(nas is))) 'S 'mpi 1))))

(define work (format "/tmp/spindle-test-nas-mpi-~a" (own-pid)))
(shell-command (format "mkdir -p ~a" work))

(define (run-bounded limit command)
  (let* ([out (format "~a/out" work)]
         [rc (shell-command (format "timeout -k 5 ~a ~a >~a 2>&1" limit command out))])
    (values rc (read-file out))))

;; The verdict of BENCH in the output of nas-rank.ss: #t, #f, or 'missing.
(define (verdict text bench)
  (let ([key (format "nas-mpi-result ~a " bench)])
    (let loop ([i 0])
      (cond
        [(> (+ i (string-length key)) (string-length text)) 'missing]
        [(string=? (substring text i (+ i (string-length key))) key)
         (caddr (read (open-string-input-port (substring text (+ i (string-length key)) (string-length text)))))]
        [else (loop (+ i 1))]))))

(define have-mpi? (eqv? 0 (shell-command "command -v mpirun >/dev/null 2>&1 && test -e /usr/lib/x86_64-linux-gnu/libmpi.so.40")))

(if (not have-mpi?)
    (printf "skipped: Open MPI is not installed (make test installs openmpi-bin and libopenmpi-dev with apt-get; it failed): the MPI runs of this test did not run\n")
    (begin
      (for-each
        (lambda (np benches)
          (test (format "MPI ranks: class S of ~a at ~a ranks verifies" benches np)
            (let-values ([(rc text) (run-bounded 150 (format "bin/spindle mpirun -np ~a bench/nas-rank.ss ~a S" np
                                                            (apply string-append (cdr (apply append (map (lambda (b) (list "," (symbol->string b))) benches))))))])
              (check-equal "exit code" 0 rc)
              (for-each (lambda (b) (check-equal (format "~a verified" b) #t (verdict text b))) benches)
              (unless (eqv? rc 0) (display text)))))
        '(1 2 4)
        '((ep is cg mg ft) (ep is cg mg ft) (is cg mg ft)))
      (test "three hosts on one machine (network namespaces on a bridge, tests/support/mpi/netns.sh): IS and CG class S at 4 ranks placed 2, 1 and 1 (or one host if the sandbox refuses)"
        (let* ([name (format "spn~a" (own-pid))]
               [log (format "~a/netns.out" work)]
               [up? (eqv? 0 (shell-command (format "tests/support/mpi/netns.sh up ~a 3 >~a 2>&1" name log)))])
          (let-values ([(rc text)
                        (if up?
                            (run-bounded 150 (format "env SPINDLE_NETNS_NP=4 SPINDLE_NETNS_HOSTS=10.77.0.1:2,10.77.0.2:1,10.77.0.3:1 tests/support/mpi/netns.sh run ~a 3 bench/nas-rank.ss is,cg S" name))
                            (begin
                              (printf "  network namespaces refused (~a): IS and CG on one host instead\n" (read-file log))
                              (run-bounded 150 "bin/spindle mpirun -np 4 bench/nas-rank.ss is,cg S")))])
            (when up? (shell-command (format "tests/support/mpi/netns.sh down ~a" name)))
            (check-equal "exit code" 0 rc)
            (check-equal "is verified" #t (verdict text 'is))
            (check-equal "cg verified" #t (verdict text 'cg))
            (unless (eqv? rc 0) (display text))
            (when up?
              (check-equal "the namespaces are removed" 0
                (shell-command (format "test -z \"$(ip netns list | grep '^~a-')\"" name)))))))
      (test "spindle bench nas --mpi prints the suite's lines with mode mpi"
        (let-values ([(rc text) (run-bounded 120 "bin/spindle bench nas --mpi --class S --bench is --np 2 --quiet-wait 0")])
          (check-equal "exit code" 0 rc)
          (for-each (lambda (line) (check (format "prints ~a" line) (string-contains? text line)))
                    '("nas.is.S.mpi.np2 " "nas.is.S.mpi.np2-mops " "nas.is.S.mpi.np2-alloc " "nas.is.S.mpi.np2-verification VERIFIED"
                      "| is.S | mpi | 2 |"))
          (unless (eqv? rc 0) (display text))))))

(shell-command (format "rm -rf ~a" work))
(done)
