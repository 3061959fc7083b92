#!chezscheme
;;; bench/nas-rank.ss -- one rank of an mpi-mode NAS run, started by
;;; bench/nas.ss as `spindle mpirun -np N bench/nas-rank.ss BENCH[,BENCH...] CLASS`.
;;; Every rank runs (BENCH-run CLASS 'mpi N) for each BENCH in turn; rank 0
;;; prints one line for each,
;;;   nas-mpi-result BENCH (SECONDS MOPS VERIFIED? NOTES BYTES GC-SECONDS WALL-SECONDS)
;;; the result and what the call cost rank 0 (bytes allocated, collector
;;; and wall-clock seconds), which nas.ss reads back.
;;;
;;; The benchmark libraries are loaded after the optimize level is set, as
;;; `spindle bench nas` compiles them (3; 0 with SPINDLE_SAFE=1): nothing
;;; of theirs is imported statically.
(import (chezscheme))

(optimize-level (if (getenv "SPINDLE_SAFE") 0 3))

(define args (cdr (command-line)))
(define benches
  (let split ([s (car args)])
    (let loop ([i 0])
      (cond
        [(= i (string-length s)) (list (string->symbol s))]
        [(char=? (string-ref s i) #\,)
         (cons (string->symbol (substring s 0 i)) (split (substring s (+ i 1) (string-length s))))]
        [else (loop (+ i 1))]))))
(define class (string->symbol (cadr args)))

(define mpi (environment '(spindle mpi)))
(define world ((eval 'rmpi-world mpi)))
(define np ((eval 'rmpi-cnt mpi) world))
(define me ((eval 'rmpi-id mpi) world))
(define common (environment '(nas common)))
(for-each
  (lambda (bench)
    (let* ([run (eval (string->symbol (format "~a-run" bench)) (environment `(nas ,bench)))]
           [s0 (statistics)]
           [r (run class 'mpi np)]
           [d (sstats-difference (statistics) s0)]
           [secs (lambda (t) (+ (time-second t) (/ (time-nanosecond t) 1e9)))]
           [field (lambda (name) ((eval (string->symbol (format "nas-result-~a" name)) common) r))])
      (when (= me 0)
        (printf "nas-mpi-result ~a " bench)
        (write (list (field 'seconds) (field 'mops) (field 'verified?) (field 'notes)
                     (sstats-bytes d) (secs (sstats-gc-real d)) (secs (sstats-real d))))
        (newline)
        (flush-output-port (current-output-port)))))
  benches)
