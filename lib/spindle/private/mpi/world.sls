#!chezscheme
;;; The MPI world of (spindle mpi): initialising MPI, the communicator
;;; record and its argument checks, the lock that serialises MPI calls
;;; (and the count of those made without it, which finalising waits for),
;;; and the end of a rank: MPI_Finalize on a normal end, MPI_Abort (naming
;;; the rank and why) when it ends by an error.
;;;
;;; A rank never forks: places in a rank start from their template process,
;;; which posix_spawn executes afresh (no MPI state), and are forked from it.
;;; A place is not a rank: rmpi-world refuses in one.
(library (spindle private mpi world)
  (export handle->comm rmpi-comm? rmpi-comm-handle rmpi-comm-twin rmpi-comm-id rmpi-comm-cnt rmpi-comm-busy rmpi-comm-busy-set!
          rmpi-comm-freed? rmpi-comm-freed?-set!
          rmpi-world rmpi-available? rmpi-finish rmpi-id rmpi-cnt
          check-comm check-rank check-tag check-peer check-rc internal-tag max-message
          engine-lock with-engine-lock world-finalized? with-mpi-call counted-mpi-call with-interrupts-off)
  (import (chezscheme)
          (spindle private os mpi)
          (only (spindle private os processes) own-pid mark-mpi-rank!)
          (only (spindle private core atomic) with-atomic with-os-mutex)
          (only (spindle private core exit-hooks) add-exit-hook! exit-process-code))

  ;; ------------------------------------------------------------ communicators
  ;; twin: a duplicate of handle (MPI_Comm_dup), which carries only the
  ;; bytes of large rmpi-send messages (the engine), so that no receive
  ;; on handle ever matches them.  busy: #f, or a latch fired once the
  ;; collective that a helper thread finishes for a broken or killed
  ;; caller has made all its MPI calls (private/mpi/collectives).  freed?: its
  ;; MPI communicators are freed (the engine's comm-free!).
  (define-record-type (rmpi-comm make-rmpi-comm rmpi-comm?)
    (fields handle twin id cnt (mutable busy) (mutable freed?))
    (nongenerative spindle-rmpi-comm-v4) (sealed #t))

  ;; The communicator of MPI handle h, with its twin; collective: every
  ;; rank of h calls it (right after MPI_Init_thread or MPI_Comm_split).
  ;; (values rc comm): comm #f unless rc is 0.
  (define (handle->comm h)
    (let-values ([(rc twin) (mpi-comm-dup h)])
      (values rc (and (eqv? rc 0) (make-rmpi-comm h twin (mpi-comm-rank h) (mpi-comm-size h) #f #f)))))
  (define comm-printer (record-writer (record-type-descriptor rmpi-comm)
    (lambda (c port wr) (format port "#<rmpi-comm ~a/~a>" (rmpi-comm-id c) (rmpi-comm-cnt c)))))

  (define internal-tag 32767)     ; MPI guarantees tags up to 32767; user tags stop below
  (define max-message (- (expt 2 31) 2))

  (define world #f)
  (define world-lock (make-mutex))
  (define failed? #f)             ; why the rank ends by an error: (reason . exit code); abort, never finalise

  ;; An exit with value x (not 0): (reason . the status it gives).
  (define (exit-failure x)
    (cons (format "exit code ~s" x) (if (fixnum? x) (fxlogand x 255) 1)))

  (define (rmpi-available?) (mpi-available?))

  ;; A place of a rank inherits the rank's environment, OMPI_* included, and
  ;; would join MPI as that rank.  So the rank marks the environment with its
  ;; pid when it loads this library (before it can start a place's
  ;; template), and rmpi-world refuses in any other process.
  (define rank-marked (mark-mpi-rank!))

  (define (rmpi-world)
    (or world
        (with-atomic
          (with-os-mutex world-lock
            (or world (begin (set! world (init-world)) world))))))

  (define (init-world)
    (let ([why (mpi-load!)])
      (unless (eq? why #t) (error 'rmpi-world why)))
    (unless (getenv "OMPI_COMM_WORLD_RANK")
      (error 'rmpi-world "not an MPI rank: start the program with `spindle mpirun -np N prog.ss`"))
    (let ([owner (getenv "SPINDLE_MPI_RANK_PID")])
      (when (and owner (not (string=? owner (number->string (own-pid)))))
        (error 'rmpi-world "a place is not an MPI rank: only the rank process started by mpirun may use MPI")))
    (let ([level (mpi-init!)])
      (unless (= level 3)
        (error 'rmpi-world (format "MPI provides thread level ~a; spindle needs MPI_THREAD_MULTIPLE (3)" level))))
    (let-values ([(rc c) (handle->comm (mpi-comm-world))])
      (check-rc 'rmpi-world rc)
      ;; An error that ends the rank aborts the job (MPI_Abort names the
      ;; rank), and so does a non-zero exit, from any thread, with its
      ;; code: the main thread's exit goes through the exit handler set
      ;; here, a worker OS thread's through exit-process; a normal end
      ;; finalises, which waits for the other ranks.
      (let ([old (base-exception-handler)])
        (base-exception-handler
          (lambda (x)
            (unless (or (warning? x) failed?) (set! failed? (cons "an uncaught exception" 1)))
            (old x))))
      (let ([old (exit-handler)])
        (exit-handler
          (lambda args
            (unless (or (null? args) (eqv? (car args) 0) (eq? (car args) (void)) failed?)
              (set! failed? (exit-failure (car args))))
            (apply old args))))
      (add-exit-hook!
        (lambda ()
          (when (and (mpi-initialized?) (not (mpi-finalized?)))
            (let ([why (or failed?
                           (let ([code (exit-process-code)]) (and code (not (eqv? code 0)) (exit-failure code))))])
              (if why
                  (begin
                    (let ([e (current-error-port)])
                      (format e "spindle mpi: rank ~a failed (~a); aborting the job~%" (rmpi-comm-id c) (car why))
                      (flush-output-port e))
                    (mpi-abort! (cdr why)))
                  (finalize!))))))
      c))

  ;; Ends MPI use now (MPI_Finalize); done at exit otherwise.
  (define (rmpi-finish comm)
    (check-comm 'rmpi-finish comm)
    (finalize!))

  ;; Under engine-lock, so that the progress thread is not inside an MPI
  ;; call, and it makes no call afterwards (progress-step! checks); and
  ;; once no call without the lock (with-mpi-call) is under way.
  (define (finalize!)
    (with-atomic
      (with-os-mutex engine-lock
        (unless (mpi-finalized?)
          ;; a CAS: a full fence between this write and the reads of
          ;; `active` (a call that entered after it sees the flag)
          (box-cas! finalized #f #t)
          (let wait () (unless (eqv? 0 (unbox active)) (wait)))
          (mpi-finalize!)))))

  (define finalized (box #f))
  (define (world-finalized?) (unbox finalized))

  ;; MPI calls made without engine-lock (MPI_THREAD_MULTIPLE allows them
  ;; from any thread): the number under way, so that finalize! waits for
  ;; them.  with-mpi-call runs its body with interrupts disabled, counted
  ;; in active, or finalised-value once MPI is finalised.  The body must
  ;; not raise, and wait only for MPI itself.
  (define active (box 0))
  ;; (Interrupts are disabled and enabled explicitly, not by
  ;; with-interrupts-disabled, which is a dynamic-wind: the body does not
  ;; raise.)
  (define-syntax with-interrupts-off
    (syntax-rules ()
      [(_ e1 e2 ...) (begin (disable-interrupts) (let ([v (begin e1 e2 ...)]) (enable-interrupts) v))]))
  (define-syntax with-mpi-call
    (syntax-rules ()
      [(_ finalised-value e1 e2 ...)
       (begin
         (disable-interrupts)
         (let ([v (counted-mpi-call finalised-value e1 e2 ...)])
           (enable-interrupts)
           v))]))
  ;; with-mpi-call for a caller that has disabled interrupts itself (the
  ;; fast paths: a nested disable costs 7 ns a message).
  (define-syntax counted-mpi-call
    (syntax-rules ()
      [(_ finalised-value e1 e2 ...)
       (begin
         (let inc () (let ([n (unbox active)]) (unless (box-cas! active n (fx+ n 1)) (inc))))
         (let ([v (if (unbox finalized) finalised-value (begin e1 e2 ...))])
           (let dec () (let ([n (unbox active)]) (unless (box-cas! active n (fx- n 1)) (dec))))
           v))]))

  (define (check-comm who c)
    (unless (rmpi-comm? c) (assertion-violation who "expected an rmpi communicator" c))
    (when (unbox finalized) (error who "MPI has been finalised"))
    (when (rmpi-comm-freed? c) (error who "the communicator has been freed (its fork-join has returned)")))
  (define (check-rank who c r)
    (unless (and (fixnum? r) (fx<= 0 r) (fx< r (rmpi-comm-cnt c)))
      (assertion-violation who (format "expected a rank in [0, ~a)" (rmpi-comm-cnt c)) r)))
  (define (check-tag who t)
    (unless (and (fixnum? t) (fx<= 0 t) (fx< t internal-tag))
      (assertion-violation who (format "expected a tag in [0, ~a)" internal-tag) t)))
  ;; The checks of comm, of rank (a source or destination; #f: any
  ;; source) and of tag, for the message paths: inline for good arguments
  ;; (13 ns of a 0.4 us send and receive), the slow path raises.
  (define-syntax check-peer
    (syntax-rules ()
      [(_ who comm rank tag)
       (unless (and (rmpi-comm? comm) (not (unbox finalized)) (not (rmpi-comm-freed? comm))
                    (or (not rank) (and (fixnum? rank) (fx<= 0 rank) (fx< rank (rmpi-comm-cnt comm))))
                    (fixnum? tag) (fx<= 0 tag) (fx< tag internal-tag))
         (check-peer-fully who comm rank tag))]))
  (define (check-peer-fully who comm rank tag)
    (check-comm who comm)
    (when rank (check-rank who comm rank))
    (check-tag who tag))

  (define (check-rc who rc)
    (unless (eqv? rc 0) (error who (mpi-error-string rc))))

  (define (rmpi-id comm) (check-comm 'rmpi-id comm) (rmpi-comm-id comm))
  (define (rmpi-cnt comm) (check-comm 'rmpi-cnt comm) (rmpi-comm-cnt comm))

  ;; engine-lock (a Chez mutex, held with interrupts disabled) serialises
  ;; the MPI calls not made under with-mpi-call; the engine's state is
  ;; under it too.
  (define engine-lock (make-mutex))

  ;; with-os-mutex on engine-lock without dynamic-wind, for the paths every
  ;; message takes (90 ns of a 0.8 us send and receive).  Its body must
  ;; not raise (they return MPI's error codes instead, raised after) and
  ;; makes no other non-local exit (interrupts are off: no thread switch).
  (define-syntax with-engine-lock
    (syntax-rules ()
      [(_ e1 e2 ...)
       (begin
         (disable-interrupts)
         (mutex-acquire engine-lock)
         (let ([v (begin e1 e2 ...)])
           (mutex-release engine-lock)
           (enable-interrupts)
           v))])))
