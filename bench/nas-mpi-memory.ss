#!chezscheme
;;; bench/nas-mpi-memory.ss -- the memory a rank of an mpi-mode NAS MG or FT
;;; run holds: `spindle mpirun -np N bench/nas-mpi-memory.ss BENCH CLASS`.
;;; Every rank runs (BENCH-run CLASS 'mpi N) and prints one line,
;;;   nas-mpi-memory BENCH CLASS np N rank R arrays BYTES hwm-before KB hwm-after KB VERIFIED?
;;; arrays: the bytes of the grids (MG) or arrays (FT) the rank allocates
;;; (the decomposition's own count: mg-mpi-array-bytes, ft-mpi-array-bytes);
;;; hwm: VmHWM of /proc/self/status (peak resident set) after the
;;; libraries are loaded and after the run.
(import (chezscheme))

(optimize-level (if (getenv "SPINDLE_SAFE") 0 3))

(define bench (string->symbol (car (cdr (command-line)))))
(define class (string->symbol (cadr (cdr (command-line)))))

(define (vm-hwm-kb)
  (call-with-input-file "/proc/self/status"
    (lambda (p)
      (let loop ()
        (let ([line (get-line p)])
          (cond
            [(eof-object? line) #f]
            [(and (> (string-length line) 6) (string=? (substring line 0 6) "VmHWM:"))
             (read (open-string-input-port (substring line 6 (string-length line))))]
            [else (loop)]))))))

(define mpi (environment '(spindle mpi)))
(define world ((eval 'rmpi-world mpi)))
(define np ((eval 'rmpi-cnt mpi) world))
(define me ((eval 'rmpi-id mpi) world))
(define run (eval (string->symbol (format "~a-run" bench)) (environment `(nas ,bench))))
(define arrays
  (case bench
    [(mg) ((eval 'mg-mpi-array-bytes (environment '(nas mg-mpi)))
           (case class [(S) 5] [(W) 7] [(A) 8]) np me)]
    [(ft) ((eval 'ft-mpi-array-bytes (environment '(nas ft-mpi)))
           (case class [(S) '#(64 64 64 6)] [(W) '#(128 128 32 6)] [(A) '#(256 256 128 6)]) np me)]))
(define before (vm-hwm-kb))
(define r (run class 'mpi np))
(printf "nas-mpi-memory ~a ~a np ~a rank ~a arrays ~a hwm-before ~a hwm-after ~a ~a\n"
        bench class np me arrays before (vm-hwm-kb)
        (if ((eval 'nas-result-verified? (environment '(nas common))) r) "VERIFIED" "FAILED"))
(flush-output-port (current-output-port))
