#!chezscheme
;;; The NAS Parallel Benchmarks: the driver, and class S of every benchmark
;;; in bench/nas/ that has no tests/test-nas-BENCH.ss of its own, in every
;;; mode it takes, at np 1 and 2, must VERIFY; one whose file is absent is
;;; skipped with a note.  The benchmarks are loaded the way
;;; `bin/spindle bench nas` loads them, by name (tests/run.sh puts bench/ on
;;; the library path).  Nothing about speed is checked.  Mode mpi runs only
;;; in MPI ranks: tests/test-nas-mpi.ss covers it.
(import (except (chezscheme) thread? sleep make-parameter parameterize)
        (harness) (text-files)
        (only (spindle private os processes) own-pid shell-command))

;; bench/ beside this file's tests/ directory.
(define bench-dir
  (let ([here (path-parent (car (command-line)))])
    (string-append (if (string=? here "") "." here) "/../bench")))

(define common (environment '(nas common)))
(define nas-modes (remq 'mpi (eval 'nas-modes common)))
(define verified? (eval 'nas-result-verified? common))
(define notes (eval 'nas-result-notes common))

(define (runner bench)
  (eval (string->symbol (format "~a-run" bench)) (environment `(nas ,bench))))

(define (run-name bench) (string->symbol (format "~a-run" bench)))

;; The &assertion of a benchmark for a mode it does not take.
(define (mode-not-supported? c bench mode)
  (and (assertion-violation? c) (who-condition? c) (irritants-condition? c)
       (eq? (condition-who c) (run-name bench))
       (equal? (condition-irritants c) (list mode))))

;; ---------------------------------------------------------------- the driver
;; First, while no spindle thread runs: bin/spindle bench nas in a shell.
(define work (format "/tmp/spindle-test-nas-~a" (own-pid)))
(define (sh fmt . args) (shell-command (apply format fmt args)))
(define (output-lines) (read-lines (string-append work "/out")))
(define (has-line? prefix)
  (exists (lambda (l) (and (>= (string-length l) (string-length prefix))
                           (string=? (substring l 0 (string-length prefix)) prefix)))
          (output-lines)))

(test "bench nas: figures and VERIFIED for IS class S, serial and places np 2"
  (sh "rm -rf ~a && mkdir -p ~a/nas" work work)
  (check-equal "exit code" 0
    (sh "bin/spindle bench nas --class S --bench is --mode serial,places --np 2 --quiet-wait 0 > ~a/out 2>&1" work))
  (for-each (lambda (p) (check p (has-line? p)))
            '("nas.is.S.serial.np1 " "nas.is.S.serial.np1-mops " "nas.is.S.serial.np1-alloc "
              "nas.is.S.serial.np1-gc " "nas.is.S.serial.np1-verification VERIFIED"
              "nas.is.S.places.np2 " "nas.is.S.places.np2-speedup "
              "nas.is.S.places.np2-verification VERIFIED")))

(test "bench/nas-racket.sh: a missing racketNAS checkout or a bad argument exits 2"
  (check-equal "no directory" 2 (sh "bench/nas-racket.sh > /dev/null 2>&1"))
  (check-equal "not a racketNAS" 2 (sh "bench/nas-racket.sh ~a > /dev/null 2>&1" work))
  (sh "mkdir -p ~a/rnas && touch ~a/rnas/cg.rkt ~a/rnas/timer.rkt" work work work)
  (check-equal "unknown option" 2 (sh "bench/nas-racket.sh ~a/rnas --bogus > /dev/null 2>&1" work)))

(test "bench nas: a FAILED verification makes the run exit 1, after the other runs"
  ;; a (nas cg) that never verifies, found before bench/'s
  (with-output-to-file (string-append work "/nas/cg.sls")
    (lambda ()
      (write '(library (nas cg) (export cg-run) (import (chezscheme) (nas common))
                (define (cg-run class mode np)
                  (check-nas-arguments 'cg-run class '(S) mode '(serial) np)
                  (make-nas-result 'cg class mode np 1.0 1.0 #f '("wrong on purpose"))))))
    'replace)
  (check-equal "exit code" 1
    (sh "SPINDLE_LIBDIRS=~a bin/spindle bench nas --class S --bench cg,is --mode serial --quiet-wait 0 > ~a/out 2>&1"
        work work))
  (check "cg FAILED" (has-line? "nas.cg.S.serial.np1-verification FAILED"))
  (check "is still ran" (has-line? "nas.is.S.serial.np1-verification VERIFIED"))
  (check-equal "bad arguments: 2" 2 (sh "bin/spindle bench nas --class Q > ~a/out 2>&1" work))
  (sh "rm -rf ~a" work))

;; ---------------------------------------------------------------- every benchmark
;; A class S run lasts a few seconds (EP, unloaded); a loaded 2-core
;; machine stretches that several times.
(test-limit 120)

(for-each
  (lambda (bench)
    (cond
      [(not (file-exists? (format "~a/nas/~a.sls" bench-dir bench)))
       (printf "note: nas ~a: bench/nas/~a.sls not built, skipped\n" bench bench)]
      ;; a benchmark with a test file of its own runs its class S there
      [(file-exists? (format "~a/../tests/test-nas-~a.ss" bench-dir bench))
       (printf "note: nas ~a: class S runs in tests/test-nas-~a.ss\n" bench bench)]
      [else
        (let ([run (runner bench)])
          (for-each
            (lambda (mode)
              (let ([supported
                     (guard (c [(mode-not-supported? c bench mode) #f]
                               [#t #t])
                       ;; np 0 is refused after the mode: a supported mode raises about np
                       (run 'S mode 0)
                       #t)])
                (if (not supported)
                    (printf "note: nas ~a: mode ~a not supported, skipped\n" bench mode)
                    (for-each
                      (lambda (np)
                        (test (format "nas ~a class S ~a np ~a verifies" bench mode np)
                          (let ([r (run 'S mode np)])
                            (unless (verified? r)
                              (error 'test-nas "FAILED verification" bench mode np (notes r))))))
                      (if (eq? mode 'serial) '(1) '(1 2))))))
            nas-modes))]))
  '(is ep cg mg ft sp bt lu))

;; ---------------------------------------------------------------- arguments
(define is-run (runner 'is))
(define ep-run (runner 'ep))

(for-each
  (lambda (who run)
    (test (format "~a: a bad class, mode or np raises &assertion naming ~a" who who)
      (check-raises "class" (both (assertion-from? who) (irritant? 'Z)) (lambda () (run 'Z 'serial 1)))
      (check-raises "class as a string" (assertion-from? who) (lambda () (run "S" 'serial 1)))
      (check-raises "mode" (both (assertion-from? who) (irritant? 'bogus)) (lambda () (run 'S 'bogus 1)))
      (check-raises "np 0" (both (assertion-from? who) (irritant? 0)) (lambda () (run 'S 'places 0)))
      (check-raises "np not exact" (assertion-from? who) (lambda () (run 'S 'threads 2.0)))
      (check-raises "serial np 2" (both (assertion-from? who) (irritant? 2)) (lambda () (run 'S 'serial 2)))))
  '(is-run ep-run) (list is-run ep-run))

(test "is-run: futures is not one of IS's modes"
  (check-raises "futures" (both (assertion-from? 'is-run) (irritant? 'futures)) (lambda () (is-run 'S 'futures 1))))

;; the timed part's CPU, for comparisons on a loaded host (bench/nas-racket.sh)
(test "is-run notes its timed part's allocation and CPU time"
  (for-each
    (lambda (mode np)
      (check (format "~a np ~a" mode np)
        (exists (lambda (n) (and (>= (string-length n) 12) (string=? "timed part: " (substring n 0 12))))
                (notes (is-run 'S mode np)))))
    '(serial places threads) '(1 2 2)))

(done)
