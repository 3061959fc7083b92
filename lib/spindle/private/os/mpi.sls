#!chezscheme
;;; Open MPI through the FFI: loading libmpi, its handles, and the calls
;;; (spindle mpi) makes.  Pure FFI, no C shim: Open MPI's handles are the
;;; addresses of its globals (MPI_COMM_WORLD is &ompi_mpi_comm_world,
;;; MPI_DOUBLE &ompi_mpi_double, MPI_SUM &ompi_mpi_op_sum), which
;;; foreign-entry gives, and every call takes plain integers and pointers,
;;; so a shim would add a build step and a library to find and save nothing
;;; (a Chez foreign call costs tens of nanoseconds; an MPI round trip,
;;; microseconds).  MPICH (integer handles, a 20-byte status) is not
;;; supported: mpi-load! refuses it by name.
;;;
;;; Every pointer argument is foreign memory (malloc): MPI keeps the
;;; addresses of a request's buffers until it completes, and Chez's
;;; collector moves bytevectors.  Calls that can wait are __collect_safe.
;;; MPI is initialised with MPI_THREAD_MULTIPLE (Debian's Open MPI 4.1
;;; provides it), because a green thread calls MPI from whichever worker OS
;;; thread runs it.
(library (spindle private os mpi)
  (export mpi-load! mpi-available?
          mpi-comm-world mpi-byte mpi-double mpi-int64 mpi-op
          mpi-status-size mpi-status-source mpi-status-tag mpi-status-bytes
          mpi-init! mpi-initialized? mpi-finalized? mpi-finalize! mpi-abort!
          mpi-comm-rank mpi-comm-size
          mpi-status-cancelled? mpi-any-source mpi-err-truncate
          mpi-isend mpi-irecv mpi-improbe mpi-mrecv mpi-mrecv-small mpi-get-count mpi-test
          mpi-test-safe mpi-cancel mpi-wait
          mpi-ibarrier mpi-ibcast mpi-iallreduce mpi-ireduce mpi-in-place
          mpi-iallgather mpi-iallgatherv mpi-ialltoall mpi-ialltoallv
          mpi-comm-split mpi-comm-dup mpi-comm-free! mpi-comm-null mpi-undefined
          mpi-error-string)
  (import (chezscheme) (spindle private os libc) (spindle private os memory))

  (define loaded libc-loaded)

  ;; #t once libmpi is loaded; a string saying why not otherwise.
  (define load-state #f)

  (define (mpi-load!)
    (unless load-state
      (set! load-state
        (guard (c [#t "libmpi.so.40 (Open MPI) could not be loaded: install openmpi-bin and libopenmpi-dev"])
          (load-shared-object "libmpi.so.40")
          (if (foreign-entry? "ompi_mpi_comm_world")
              #t
              "the loaded MPI library is not Open MPI (MPICH is not supported)"))))
    load-state)

  (define (mpi-available?) (eq? (mpi-load!) #t))

  ;; A binding made on its first call (libmpi is loaded at run time, by
  ;; mpi-load!); conv is __collect_safe or absent.
  (define-syntax define-mpi
    (lambda (x)
      (syntax-case x ()
        [(_ name c-name (t ...) ret)
         #'(define-mpi name #f c-name (t ...) ret)]
        [(_ name conv c-name (t ...) ret)
         (with-syntax ([(a ...) (generate-temporaries #'(t ...))]
                       [make (if (syntax->datum #'conv)
                                 #'(foreign-procedure conv c-name (t ...) ret)
                                 #'(foreign-procedure c-name (t ...) ret))])
           #'(define name
               (let ([p #f])
                 (lambda (a ...)
                   (unless p (set! p make))
                   (p a ...)))))])))

  ;; A handle, looked up once (foreign-entry is a symbol-table search).
  (define-syntax define-handle
    (syntax-rules ()
      [(_ name c-name) (define name (let ([h #f]) (lambda () (or h (begin (set! h (foreign-entry c-name)) h)))))]))
  (define (handle name) (foreign-entry name))
  (define-handle mpi-comm-world "ompi_mpi_comm_world")
  (define-handle mpi-byte "ompi_mpi_byte")
  (define-handle mpi-double "ompi_mpi_double")
  (define-handle mpi-int64 "ompi_mpi_int64_t")
  (define-handle op-sum "ompi_mpi_op_sum")
  (define-handle op-prod "ompi_mpi_op_prod")
  (define-handle op-min "ompi_mpi_op_min")
  (define-handle op-max "ompi_mpi_op_max")
  ;; op: sum, prod, min or max.
  (define (mpi-op op)
    (case op [(sum) (op-sum)] [(prod) (op-prod)] [(min) (op-min)] [else (op-max)]))
  (define mpi-in-place 1)               ; Open MPI's MPI_IN_PLACE is (void *) 1
  (define mpi-undefined -32766)         ; Open MPI's MPI_UNDEFINED
  (define mpi-any-source -1)
  (define mpi-err-truncate 15)          ; a message longer than its receive buffer
  (define (mpi-comm-null) (handle "ompi_mpi_comm_null"))

  ;; Open MPI's MPI_Status: MPI_SOURCE, MPI_TAG, MPI_ERROR, _cancelled (ints), _ucount (size_t).
  (define mpi-status-size 24)
  (define (mpi-status-source st) (foreign-ref 'int st 0))
  (define (mpi-status-tag st) (foreign-ref 'int st 4))
  ;; The message's size in bytes (_ucount; MPI_Get_count of MPI_BYTE reads it).
  ;; (After MPI_ERR_TRUNCATE, it is the message's whole size.)
  (define (mpi-status-bytes st) (foreign-ref 'size_t st 16))
  (define (mpi-status-cancelled? st) (not (eqv? 0 (foreign-ref 'int st 12))))

  (define-mpi c-init-thread __collect_safe "MPI_Init_thread" (uptr uptr int uptr) int)
  (define-mpi c-initialized "MPI_Initialized" (uptr) int)
  (define-mpi c-finalized "MPI_Finalized" (uptr) int)
  (define-mpi c-finalize __collect_safe "MPI_Finalize" () int)
  (define-mpi c-abort __collect_safe "MPI_Abort" (uptr int) int)
  (define-mpi c-comm-rank "MPI_Comm_rank" (uptr uptr) int)
  (define-mpi c-comm-size "MPI_Comm_size" (uptr uptr) int)
  (define-mpi c-set-errhandler "MPI_Comm_set_errhandler" (uptr uptr) int)
  (define-mpi c-error-string "MPI_Error_string" (int uptr uptr) int)
  (define-mpi mpi-isend "MPI_Isend" (uptr int uptr int int uptr uptr) int)
  (define-mpi mpi-improbe "MPI_Improbe" (int int uptr uptr uptr uptr) int)
  ;; (buf count datatype source tag comm req)
  (define-mpi mpi-irecv "MPI_Irecv" (uptr int uptr int int uptr uptr) int)
  (define-mpi mpi-cancel "MPI_Cancel" (uptr) int)
  ;; Only after MPI_Cancel (the receive then ends at once, or once the
  ;; bytes of a message already matched have arrived).
  (define-mpi mpi-wait __collect_safe "MPI_Wait" (uptr uptr) int)
  (define-mpi mpi-mrecv __collect_safe "MPI_Mrecv" (uptr int uptr uptr uptr) int)
  ;; For a small matched message, whose bytes have arrived with its match
  ;; (eager): the receive copies and returns, so no __collect_safe cost.
  (define-mpi mpi-mrecv-small "MPI_Mrecv" (uptr int uptr uptr uptr) int)
  (define-mpi mpi-get-count "MPI_Get_count" (uptr uptr uptr) int)
  (define-mpi mpi-test "MPI_Test" (uptr uptr uptr) int)
  ;; For a request whose test may copy a large message (its buffers are
  ;; foreign or locked).
  (define-mpi mpi-test-safe __collect_safe "MPI_Test" (uptr uptr uptr) int)
  (define-mpi mpi-ibarrier "MPI_Ibarrier" (uptr uptr) int)
  (define-mpi mpi-ibcast "MPI_Ibcast" (uptr int uptr int uptr uptr) int)
  (define-mpi mpi-iallreduce "MPI_Iallreduce" (uptr uptr int uptr uptr uptr uptr) int)
  (define-mpi mpi-ireduce "MPI_Ireduce" (uptr uptr int uptr uptr int uptr uptr) int)
  (define-mpi mpi-iallgather "MPI_Iallgather" (uptr int uptr uptr int uptr uptr uptr) int)
  ;; (sendbuf sendcount sendtype recvbuf recvcounts displs recvtype comm req)
  (define-mpi mpi-iallgatherv "MPI_Iallgatherv" (uptr int uptr uptr uptr uptr uptr uptr uptr) int)
  (define-mpi mpi-ialltoall "MPI_Ialltoall" (uptr int uptr uptr int uptr uptr uptr) int)
  ;; (sendbuf sendcounts sdispls sendtype recvbuf recvcounts rdispls recvtype comm req)
  (define-mpi mpi-ialltoallv "MPI_Ialltoallv" (uptr uptr uptr uptr uptr uptr uptr uptr uptr uptr) int)
  ;; Blocking (MPI has no non-blocking split): (spindle mpi) calls it only
  ;; once every rank of the communicator has arrived, so it returns soon.
  (define-mpi c-comm-split __collect_safe "MPI_Comm_split" (uptr int int uptr) int)
  ;; Collective and blocking as well (spindle mpi calls it right after
  ;; MPI_Init_thread or MPI_Comm_split, which every rank of comm makes).
  (define-mpi c-comm-dup __collect_safe "MPI_Comm_dup" (uptr uptr) int)

  (define (int-out f)
    (let ([p (malloc 8)])
      (foreign-set! 'int p 0 0)
      (f p)
      (let ([v (foreign-ref 'int p 0)]) (free p) v)))

  (define (mpi-initialized?) (not (eqv? 0 (int-out c-initialized))))
  (define (mpi-finalized?) (not (eqv? 0 (int-out c-finalized))))

  ;; Initialises MPI with MPI_THREAD_MULTIPLE and makes errors on the world
  ;; communicator return codes; returns the thread level provided.
  (define (mpi-init!)
    (let ([level (int-out (lambda (p) (c-init-thread 0 0 3 p)))])
      (c-set-errhandler (mpi-comm-world) (handle "ompi_mpi_errors_return"))
      level))

  (define (mpi-finalize!) (c-finalize))
  (define (mpi-abort! code) (c-abort (mpi-comm-world) code))
  (define (mpi-comm-rank comm) (int-out (lambda (p) (c-comm-rank comm p))))
  (define (mpi-comm-size comm) (int-out (lambda (p) (c-comm-size comm p))))
  ;; (values rc new-communicator-handle); the handle is MPI_COMM_NULL for
  ;; color MPI_UNDEFINED.
  (define (mpi-comm-split comm color key)
    (let ([p (malloc 8)])
      (let ([rc (c-comm-split comm color key p)])
        (let ([h (foreign-ref 'uptr p 0)]) (free p) (values rc h)))))

  ;; (values rc handle-of-the-duplicate)
  (define (mpi-comm-dup comm)
    (let ([p (malloc 8)])
      (let ([rc (c-comm-dup comm p)])
        (let ([h (foreign-ref 'uptr p 0)]) (free p) (values rc h)))))

  ;; Local in Open MPI (no communication): the communicator goes once its
  ;; pending requests complete.  MPI's error code.
  (define-mpi c-comm-free "MPI_Comm_free" (uptr) int)
  (define (mpi-comm-free! h)
    (let ([p (malloc 8)])
      (foreign-set! 'uptr p 0 h)
      (let ([rc (c-comm-free p)]) (free p) rc)))

  (define (mpi-error-string code)
    (let ([buf (malloc 512)] [len (malloc 8)])
      (c-error-string code buf len)
      (let* ([n (foreign-ref 'int len 0)] [bv (make-bytevector n)])
        (memcpy-to-bytevector! bv buf n)
        (free buf) (free len)
        (utf8->string bv)))))
