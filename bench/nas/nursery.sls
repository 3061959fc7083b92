#!chezscheme
;;; The allocation between collections while a benchmark runs.  Chez 9.5.8
;;; boxes every flonum result, so the kernels allocate 16 bytes per
;;; floating-point operation, nearly all dead at once; collecting after
;;; every 1 MiB (the default is 8 MiB) keeps the allocation area in the
;;; L2 cache: CPU time of CG and MG class W serial -20% on the 2-core
;;; EPYC VM, threads mode likewise despite the 8x more collections.  A
;;; kernel may ask for another size where measured better: BT runs with
;;; 2 MiB (class W CPU -5% against 1 MiB, serial and at np 2).
(library (nas nursery)
  (export with-nursery with-mode-nursery)
  (import (chezscheme))

  (define default-nursery-bytes (expt 2 20))

  ;; (with-nursery [bytes] thunk): calls thunk with collect-trip-bytes at
  ;; bytes (a process-wide setting; default 1 MiB), restoring it and the
  ;; collect-request handler on the way out.  Meanwhile the handler sets
  ;; bytes again after each collection: a fresh place's handler raises the
  ;; setting once the place has grown (spindle place,
  ;; start-small-young-generation!), which would otherwise give member 0
  ;; and the places different nurseries.
  (define with-nursery
    (case-lambda
      [(thunk) (with-nursery default-nursery-bytes thunk)]
      [(nursery-bytes thunk) (call-with-nursery nursery-bytes thunk)]))

  (define (call-with-nursery nursery-bytes thunk)
    (let ([saved-bytes #f] [saved-handler #f])
      (dynamic-wind
        (lambda ()
          (set! saved-bytes (collect-trip-bytes))
          (set! saved-handler (collect-request-handler))
          (let ([handler saved-handler])
            (collect-request-handler
              (lambda () (handler) (collect-trip-bytes nursery-bytes))))
          (collect-trip-bytes nursery-bytes))
        thunk
        (lambda ()
          (collect-request-handler saved-handler)
          (collect-trip-bytes saved-bytes)))))

  ;; (with-mode-nursery mode np [bytes] thunk): with-nursery for a run in
  ;; mode with np members.  The np threads of threads mode share one
  ;; allocation count, so they get np times the nursery: each core's share
  ;; stays as in serial, with 1/np of the stop-the-world collections.
  (define with-mode-nursery
    (case-lambda
      [(mode np thunk) (with-mode-nursery mode np default-nursery-bytes thunk)]
      [(mode np nursery-bytes thunk)
       (call-with-nursery (if (eq? mode 'threads) (* np nursery-bytes) nursery-bytes) thunk)])))
