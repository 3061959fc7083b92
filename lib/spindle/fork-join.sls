#!chezscheme
;;; Fork-join and communication groups (CGs): the SPMD layer of the Places
;;; paper (Tew et al., DLS 2011; racketNAS).  The manual: doc/reference.md, "Fork-join".
;;;
;;; A group has np members with ids 0 .. np-1.  Member 0 is the caller of
;;; fork-join; members 1 .. np-1 are places started with the place form (so
;;; fork-join, like place, needs (lift-places (lib ...)) as the last form of
;;; the library that uses it): private/places/cg-places.sls wires, watches
;;; and joins them, and runs the operations over their place channels.
;;;
;;; Over MPI: `np` may be an rmpi communicator, whose ranks are then the
;;; members (each rank calls fork-join; the body runs in the rank itself,
;;; and the operations go over MPI: private/places/cg-ranks.sls).  A rank
;;; that fails ends the whole job (spindle mpi's rule), which stands for
;;; "group aborted".
;;;
;;; This library checks the arguments of the operations and chooses
;;; between the two; a member's CG is the record of
;;; private/places/cg-record.sls.
(library (spindle fork-join)
  (export fork-join lift-places CG? CG-id CG-np CGfor CGfor/stride CGBarrier
          CGpipeline CG-n0-only CGsend CGrecv CGbroadcast CGallreduce CGalltoall CGalltoallv
          fork-join-members fork-join-leader?
          (rename (CGBarrier CG-B) (CG-id CGid) (CG-np CGnp)))
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle place)
          (only (spindle mpi) rmpi-comm? rmpi-id rmpi-cnt rmpi-world)
          (spindle private places cg-record)
          (spindle private places cg-places)
          (spindle private places cg-ranks)
          (only (spindle private places shared-vector) shared-vector? shared-vector-kind shared-vector-length)
          (only (spindle private core trace) tracing? trace-now trace-span!))

  (define (CG-id c) (check-cg 'CG-id c) (cg-id c))
  (define (CG-np c) (check-cg 'CG-np c) (cg-np c))

  ;; ---------------------------------------------------------------- fork-join
  (define (check-np np)
    (cond
      [(or (not np) (eqv? np 0)) 1]
      [(rmpi-comm? np) np]
      [(and (integer? np) (exact? np) (> np 0)) np]
      [else (assertion-violation 'fork-join "expected an exact positive integer or #f" np)]))

  (define (check-args args)
    (for-each
      (lambda (a)
        (unless (place-message-allowed? a)
          (assertion-violation 'fork-join "expected place-message-allowed? arguments" a)))
      args))

  ;; spawn: a thunk that starts one place running member-main.
  (define (run-fork-join np args proc spawn)
    (check-args args)
    (cond
      [(rmpi-comm? np) (run-ranks np args proc)]
      [(= np 1) (vector (apply proc (make-cg 0 1 #f (vector #f) (vector #f) '() 0 #f #f #f) args))]
      [else (run-places np args proc spawn)]))

  ;; Every rank of comm runs proc as the member of its rank id; all get
  ;; the vector of the members' values.
  (define (run-ranks comm args proc)
    (let* ([r (make-ranks comm)]
           [c (make-cg (rmpi-id comm) (rmpi-cnt comm) #f #f #f '() 0 #f #f r)]
           [v (apply proc c args)])
      (unless (place-message-allowed? v)
        (assertion-violation 'fork-join "member result is not place-message-allowed?" (rmpi-id comm) v))
      (ranks-gather r v)))

  ;; n members: under mpirun (in a rank process), the world's ranks instead.
  (define (fork-join-members n)
    (if (rank-process?) (rmpi-world) n))

  ;; #f in an MPI rank other than rank 0 (where a program that runs
  ;; fork-join over ranks should stay quiet), #t elsewhere.
  (define (fork-join-leader?)
    (or (not (rank-process?)) (fx= 0 (rmpi-id (rmpi-world)))))

  ;; ---------------------------------------------------------------- operations
  (define (CGBarrier c)
    (check-cg 'CGBarrier c)
    (barrier c 'CGBarrier))

  (define (barrier c who)
    (cond
      [(fx= (cg-np c) 1) (void)]
      [tracing?
       (let ([t0 (trace-now)])
         (barrier/any c who)
         (trace-span! 'cg-barrier t0 (cg-id c) (cg-np c)))]
      [else (barrier/any c who)]))

  (define (barrier/any c who)
    (if (cg-ranks c) (ranks-barrier (cg-ranks c)) (places-barrier c who)))

  (define (cg-pipeline c init proc)
    (check-cg 'CGpipeline c)
    (let ([check (lambda (v)
                   (unless (place-message-allowed? v)
                     (assertion-violation 'CGpipeline "expected a place-message-allowed? value" v)))])
      (if (cg-ranks c)
          (ranks-pipeline (cg-ranks c) init (lambda (prev) (let ([v (proc prev)]) (check v) v)))
          (places-pipeline c init proc check))))

  (define (check-member who c m)
    (unless (and (fixnum? m) (fx<= 0 m) (fx< m (cg-np c)))
      (assertion-violation who (format "expected a member id in [0, ~a)" (cg-np c)) m)))

  (define (check-message who v)
    (unless (place-message-allowed? v)
      (assertion-violation who "expected a place-message-allowed? value" v)))

  ;; Sends v (a place message, copied now) to member dest; never blocks.
  (define (CGsend c dest v)
    (check-cg 'CGsend c) (check-member 'CGsend c dest) (check-message 'CGsend v)
    (if (cg-ranks c) (ranks-send! (cg-ranks c) dest v) (places-send! c dest v)))

  ;; The next value member src sent me with CGsend.
  (define (CGrecv c src)
    (check-cg 'CGrecv c) (check-member 'CGrecv c src)
    (if (cg-ranks c) (ranks-recv (cg-ranks c) src) (places-recv c src)))

  ;; root's v, at every member.
  (define (CGbroadcast c root v)
    (check-cg 'CGbroadcast c) (check-member 'CGbroadcast c root) (check-message 'CGbroadcast v)
    (if (cg-ranks c) (ranks-broadcast (cg-ranks c) root v) (places-broadcast c root v)))

  ;; The members' vs combined with op, at every member, as rmpi-allreduce
  ;; does: with + * min max (or sum prod min max) a flonum, fixnum, vector
  ;; of flonums or fxvector is combined element-wise; any other op is
  ;; folded over the values in id order.
  (define (CGallreduce c op v)
    (check-cg 'CGallreduce c)
    (unless (or (procedure? op) (memq op '(sum prod min max)))
      (assertion-violation 'CGallreduce "expected a procedure or one of sum, prod, min, max" op))
    (cond
      [(cg-ranks c) (ranks-allreduce (cg-ranks c) op v)]
      [else (unless (fxvector? v) (check-message 'CGallreduce v))
            (places-allreduce c op v)]))

  ;; vs: a vector of np values, element m for member m; -> the vector of
  ;; what each member sent me, by member.
  (define (CGalltoall c vs)
    (check-cg 'CGalltoall c)
    (unless (and (vector? vs) (fx= (vector-length vs) (cg-np c)))
      (assertion-violation 'CGalltoall (format "expected a vector of ~a values" (cg-np c)) vs))
    (vector-for-each (lambda (v) (check-message 'CGalltoall v)) vs)
    (if (cg-ranks c) (ranks-alltoall (cg-ranks c) vs) (places-alltoall c vs)))

  ;; Typed blocks: send-count[m] elements of out from send-displ[m] go to
  ;; member m; recv-count[m] elements from member m land in `in` at
  ;; recv-displ[m].  out and in: bytevectors, fxvectors or shared vectors,
  ;; of one element kind.  Over ranks, rmpi-alltoallv (shared vectors in
  ;; place).
  (define (CGalltoallv c out send-count send-displ in recv-count recv-displ)
    (define who 'CGalltoallv)
    (check-cg who c)
    (let* ([np (cg-np c)] [kind (block-kind who out)]
           [sc (index-vector who send-count np)] [sd (index-vector who send-displ np)]
           [rc (index-vector who recv-count np)] [rd (index-vector who recv-displ np)])
      (unless (eq? (block-kind who in) kind)
        (assertion-violation who "expected out and in of one element kind" out in))
      (check-blocks who out sc sd) (check-blocks who in rc rd)
      (if (cg-ranks c)
          (ranks-alltoallv (cg-ranks c) out sc sd in rc rd)
          (places-alltoallv c (if (eq? kind 'bytes) 1 8) out sc sd in rc rd))))

  ;; bytes, int64 or double: the element kind of a typed vector.
  (define (block-kind who v)
    (cond
      [(bytevector? v) 'bytes]
      [(fxvector? v) 'int64]
      [(shared-vector? v) (case (shared-vector-kind v) [(bytes) 'bytes] [(fx) 'int64] [else 'double])]
      [else (assertion-violation who "expected a bytevector, fxvector or shared vector" v)]))

  (define (element-count v)
    (cond [(bytevector? v) (bytevector-length v)] [(fxvector? v) (fxvector-length v)] [else (shared-vector-length v)]))

  ;; counts or displacements: an fxvector or vector of np non-negative
  ;; fixnums -> an fxvector.
  (define (index-vector who v np)
    (let ([r (cond [(fxvector? v) v] [(vector? v) (and (for-all fixnum? (vector->list v)) (list->fxvector (vector->list v)))] [else #f])])
      (unless (and r (fx= (fxvector-length r) np) (for-all (lambda (x) (fx>= x 0)) (fxvector->list r)))
        (assertion-violation who (format "expected an fxvector of ~a non-negative counts or displacements" np) v))
      r))

  (define (check-blocks who v counts displs)
    (do ([m 0 (fx+ m 1)]) ((fx= m (fxvector-length counts)))
      (unless (<= (+ (fxvector-ref counts m) (fxvector-ref displs m)) (element-count v))
        (assertion-violation who (format "the block for member ~a is outside the vector" m) v))))

  (define (cg-n0-only c thunk)
    (check-cg 'CG-n0-only c)
    (barrier c 'CG-n0-only)
    (let ([v (if (fx= (cg-id c) 0) (thunk) (void))])
      (barrier c 'CG-n0-only)
      v))

  ;; Iterations start, start+step, ... before end: how many.
  (define (iteration-count who start end step)
    (unless (real? start) (assertion-violation who "expected a real number" start))
    (unless (real? end) (assertion-violation who "expected a real number" end))
    (unless (and (real? step) (not (zero? step))) (assertion-violation who "expected a nonzero real number" step))
    (let ([q (/ (- end start) step)])
      (if (> q 0) (exact (ceiling q)) 0)))

  ;; -> first iteration index and count of member (CG-id c)'s block
  (define (block-range c start end step)
    (check-cg 'CGfor c)
    (let* ([k (iteration-count 'CGfor start end step)] [np (cg-np c)] [m (cg-id c)]
           [q (quotient k np)] [r (remainder k np)])
      (values (+ (* m q) (min m r)) (if (< m r) (+ q 1) q))))

  (define (stride-range c start end step)
    (check-cg 'CGfor/stride c)
    (values (iteration-count 'CGfor/stride start end step) (cg-id c) (cg-np c)))

  ;; ---------------------------------------------------------------- syntax
  ;; (fork-join np cg ([param arg] ...) body ...+)
  (define-syntax fork-join
    (lambda (x)
      (syntax-case x ()
        [(_ np cg ([param arg] ...) body0 body ...)
         (and (identifier? #'cg) (for-all identifier? #'(param ...)))
         (with-syntax ([(t ...) (generate-temporaries #'(arg ...))])
           ;; cg comes from the caller's code: the place form takes the
           ;; library it lifts the body to from it
           #'(let* ([n (check-np np)] [t arg] ...)
               (run-fork-join n (list t ...)
                              (lambda (cg param ...) body0 body ...)
                              (lambda ()
                                (place cg (member-main cg (lambda (cg param ...) body0 body ...)))))))]
        [_ (syntax-violation 'fork-join "expected (fork-join np cg ([param arg] ...) body ...+)" x)])))

  (meta define (in-range? id) (and (identifier? id) (eq? (syntax->datum id) 'in-range)))

  ;; [i start end [step]] or [i (in-range [start] end [step])] -> (i start end step)
  (meta define (range-clause who x clause)
    (syntax-case clause ()
      [(i (ir e)) (and (identifier? #'i) (in-range? #'ir)) #'(i 0 e 1)]
      [(i (ir s e)) (and (identifier? #'i) (in-range? #'ir)) #'(i s e 1)]
      [(i (ir s e st)) (and (identifier? #'i) (in-range? #'ir)) #'(i s e st)]
      [(i s e) (identifier? #'i) #'(i s e 1)]
      [(i s e st) (identifier? #'i) #'(i s e st)]
      [_ (syntax-violation who "expected [id start end [step]] or [id (in-range start end [step])]" x clause)]))

  (define-syntax CGfor
    (lambda (x)
      (syntax-case x ()
        [(_ c (clause) body0 body ...)
         (with-syntax ([(i s e st) (range-clause 'CGfor x #'clause)])
           #'(let* ([cv c] [sv s] [ev e] [stv st])
               (let-values ([(first n) (block-range cv sv ev stv)])
                 (let loop ([j 0])
                   (when (< j n)
                     (let ([i (+ sv (* (+ first j) stv))]) body0 body ...)
                     (loop (+ j 1)))))))]
        [_ (syntax-violation 'CGfor "expected (CGfor cg ([id start end [step]]) body ...+)" x)])))

  (define-syntax CGfor/stride
    (lambda (x)
      (syntax-case x ()
        [(_ c (clause) body0 body ...)
         (with-syntax ([(i s e st) (range-clause 'CGfor/stride x #'clause)])
           #'(let* ([cv c] [sv s] [ev e] [stv st])
               (let-values ([(k m np) (stride-range cv sv ev stv)])
                 (let loop ([j m])
                   (when (< j k)
                     (let ([i (+ sv (* j stv))]) body0 body ...)
                     (loop (+ j np)))))))]
        [_ (syntax-violation 'CGfor/stride "expected (CGfor/stride cg ([id start end [step]]) body ...+)" x)])))

  (define-syntax CGpipeline
    (lambda (x)
      (syntax-case x ()
        [(_ c prev init body0 body ...)
         (identifier? #'prev)
         #'(cg-pipeline c init (lambda (prev) body0 body ...))]
        [_ (syntax-violation 'CGpipeline "expected (CGpipeline cg prev-id init body ...+)" x)])))

  (define-syntax CG-n0-only
    (lambda (x)
      (syntax-case x ()
        [(_ c body0 body ...) #'(cg-n0-only c (lambda () body0 body ...))]
        [_ (syntax-violation 'CG-n0-only "expected (CG-n0-only cg body ...+)" x)]))))
