#!chezscheme
;;; The allocation between collections while a benchmark runs.  Chez 9.5.8
;;; boxes every flonum result, so the kernels allocate 16 bytes per
;;; floating-point operation, nearly all dead at once; collecting after
;;; every 1 MiB (the default is 8 MiB) keeps the allocation area in the
;;; L2 cache: CPU time of CG and MG class W serial -20% on the 2-core
;;; EPYC VM, threads mode likewise despite the 8x more collections.
(library (nas nursery)
  (export with-nursery)
  (import (chezscheme))

  (define nursery-bytes (expt 2 20))

  ;; Calls thunk with collect-trip-bytes at nursery-bytes (a process-wide
  ;; setting), restoring it on the way out.
  (define (with-nursery thunk)
    (let ([saved #f])
      (dynamic-wind
        (lambda () (set! saved (collect-trip-bytes)) (collect-trip-bytes nursery-bytes))
        thunk
        (lambda () (collect-trip-bytes saved))))))
