#!chezscheme
;;; Fork-join and communication groups (CGs): the SPMD layer of the Places
;;; paper (Tew et al., DLS 2011; racketNAS).  The manual: doc/reference.md, "Fork-join".
;;;
;;; A group has np members with ids 0 .. np-1.  Member 0 is the caller of
;;; fork-join; members 1 .. np-1 are places started with the place form (so
;;; fork-join, like place, needs (lift-places (lib ...)) as the last form of
;;; the library that uses it).
;;;
;;; Over MPI: `np` may be an rmpi communicator, whose ranks are then the
;;; members (each rank calls fork-join; the body runs in the rank itself,
;;; and the operations go over MPI: private/groups/cg-ranks.sls, which
;;; (spindle mpi) registers as it loads: private/groups/cg-backend.sls; so
;;; this library loads no MPI library).  A rank that fails ends the whole
;;; job (spindle mpi's rule), which stands for "group aborted".
;;;
;;; In private/groups/ beside: member 0's supervisor of a group over places
;;; (supervisor: starting, wiring, watching, aborting and joining the member
;;; places, the members' side, the group's messages), a member's CG record
;;; (cg-record), the barrier (cg-barrier), the typed blocks of CGalltoallv
;;; (cg-blocks), CGfor and CGfor/stride (cg-loops), the slot of the groups
;;; over ranks (cg-backend).  This library checks the arguments and runs
;;; each operation over places or over ranks.
(library (spindle fork-join)
  (export fork-join lift-places CG? CG-id CG-np CGfor CGfor/stride CGBarrier
          CGpipeline CG-n0-only CGsend CGrecv CGbroadcast CGallreduce CGalltoall CGalltoallv
          fork-join-members fork-join-leader?
          (rename (CGBarrier CG-B) (CG-id CGid) (CG-np CGnp)))
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle place)
          (spindle private groups supervisor)
          (spindle private groups cg-barrier)
          (spindle private groups cg-record)
          (spindle private groups cg-blocks)
          (spindle private groups cg-loops)
          (spindle private groups cg-backend)
          (only (spindle private diagnostics trace) tracing? trace-now trace-span!))

  (define (CG-id c) (check-cg 'CG-id c) (cg-id c))
  (define (CG-np c) (check-cg 'CG-np c) (cg-np c))

  ;; ---------------------------------------------------------------- member 0
  (define (check-np np)
    (cond
      [(or (not np) (eqv? np 0)) 1]
      [(mpi-comm? np) np]
      [(and (integer? np) (exact? np) (> np 0)) np]
      [else (assertion-violation 'fork-join "expected an exact positive integer or #f" np)]))

  ;; n members: under mpirun (in a rank process), the world's ranks instead.
  (define (fork-join-members n)
    (if (rank-process?) (mpi-world) n))

  ;; #f in an MPI rank other than rank 0 (where a program that runs
  ;; fork-join over ranks should stay quiet), #t elsewhere.
  (define (fork-join-leader?)
    (or (not (rank-process?)) (fx= 0 (mpi-comm-id (mpi-world)))))

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
    (cond
      [(cg-ranks c) (ranks-barrier (cg-ranks c))]
      [(cg-group c) (barrier-0 c who)]
      [else (barrier-member c who)]))

  (define (cg-pipeline c init proc)
    (check-cg 'CGpipeline c)
    (let ([check (lambda (v)
                   (unless (place-message-allowed? v)
                     (assertion-violation 'CGpipeline "expected a place-message-allowed? value" v)))])
      (if (cg-ranks c)
          (ranks-pipeline (cg-ranks c) init (lambda (prev) (let ([v (proc prev)]) (check v) v)))
          (let* ([me (cg-id c)]
                 [v (proc (if (fx= me 0) init (channel-get c 'CGpipeline (cg-coll c) (fx- me 1))))])
            (when (fx< me (fx- (cg-np c) 1))
              (check v)
              (place-channel-put (car (vector-ref (cg-coll c) (fx+ me 1))) v))
            v))))

  (define (check-member who c m)
    (unless (and (fixnum? m) (fx<= 0 m) (fx< m (cg-np c)))
      (assertion-violation who (format "expected a member id in [0, ~a)" (cg-np c)) m)))

  (define (check-message who v)
    (unless (place-message-allowed? v)
      (assertion-violation who "expected a place-message-allowed? value" v)))

  ;; Sends v (a place message, copied now) to member dest; never blocks.
  (define (CGsend c dest v)
    (check-cg 'CGsend c) (check-member 'CGsend c dest) (check-message 'CGsend v)
    (cond
      [(cg-ranks c) (ranks-send! (cg-ranks c) dest v)]
      [(fx= dest (cg-id c))
       (cg-queue-set! c (append (cg-queue c) (list (place-message-copy v))))]
      [else (place-channel-put (car (vector-ref (cg-p2p c) dest)) v)]))

  ;; A copy made as a place message would be, so that a send to oneself
  ;; gives what a send to another member gives.
  (define (place-message-copy v)
    (let-values ([(out in) (place-channel)])
      (place-channel-put out v)
      (place-channel-get in)))

  ;; The next value member src sent me with CGsend.
  (define (CGrecv c src)
    (check-cg 'CGrecv c) (check-member 'CGrecv c src)
    (cond
      [(cg-ranks c) (ranks-recv (cg-ranks c) src)]
      [(fx= src (cg-id c))
       (let ([q (cg-queue c)])
         (when (null? q) (error 'CGrecv "nothing sent to oneself: the receive would never end" src))
         (cg-queue-set! c (cdr q))
         (car q))]
      [else (channel-get c 'CGrecv (cg-p2p c) src)]))

  (define (coll-put c dest v) (place-channel-put (car (vector-ref (cg-coll c) dest)) v))

  ;; root's v, at every member.
  (define (CGbroadcast c root v)
    (check-cg 'CGbroadcast c) (check-member 'CGbroadcast c root) (check-message 'CGbroadcast v)
    (cond
      [(cg-ranks c) (ranks-broadcast (cg-ranks c) root v)]
      [(fx= root (cg-id c))
       (do ([m 0 (fx+ m 1)]) ((fx= m (cg-np c)) v)
         (unless (fx= m root) (coll-put c m v)))]
      [else (channel-get c 'CGbroadcast (cg-coll c) root)]))

  ;; The members' vs combined with op, at every member, as rmpi-allreduce
  ;; does: with + * min max (or sum prod min max) a flonum, fixnum, vector
  ;; of flonums or fxvector is combined element-wise; any other op is
  ;; folded over the values in id order.
  (define (CGallreduce c op v)
    (check-cg 'CGallreduce c)
    (unless (or (procedure? op) (memq op '(sum prod min max)))
      (assertion-violation 'CGallreduce "expected a procedure or one of sum, prod, min, max" op))
    (if (cg-ranks c)
        (ranks-allreduce (cg-ranks c) op v)
        ;; an fxvector is no place message: it travels as a vector
        (let ([fx? (fxvector? v)])
          (let ([v (if fx? (list->vector (fxvector->list v)) v)])
            (check-message 'CGallreduce v)
            (let ([r (if (fx= (cg-id c) 0)
                         (let loop ([m 1] [acc v])
                           (if (fx= m (cg-np c))
                               (CGbroadcast c 0 acc)
                               (loop (fx+ m 1) (combine op acc (channel-get c 'CGallreduce (cg-coll c) m)))))
                         (begin (coll-put c 0 v) (CGbroadcast c 0 #f)))])
              (if fx? (list->fxvector (vector->list r)) r))))))

  (define (combine op a b)
    (let ([p (case op [(sum) +] [(prod) *] [(min) min] [(max) max] [else op])])
      (cond
        [(not (memq p (list + * min max))) (op a b)]
        [(and (vector? a) (vector? b) (fx= (vector-length a) (vector-length b)))
         (vector-map p a b)]
        [else (p a b)])))

  ;; vs: a vector of np values, element m for member m; -> the vector of
  ;; what each member sent me, by member.
  (define (CGalltoall c vs)
    (check-cg 'CGalltoall c)
    (unless (and (vector? vs) (fx= (vector-length vs) (cg-np c)))
      (assertion-violation 'CGalltoall (format "expected a vector of ~a values" (cg-np c)) vs))
    (vector-for-each (lambda (v) (check-message 'CGalltoall v)) vs)
    (if (cg-ranks c)
        (ranks-alltoall (cg-ranks c) vs)
        (let ([me (cg-id c)] [np (cg-np c)] [out (make-vector (cg-np c))])
          (do ([m 0 (fx+ m 1)]) ((fx= m np))
            (unless (fx= m me) (coll-put c m (vector-ref vs m))))
          (do ([m 0 (fx+ m 1)]) ((fx= m np) out)
            (vector-set! out m (if (fx= m me) (vector-ref vs me) (channel-get c 'CGalltoall (cg-coll c) m)))))))

  ;; Typed blocks: send-count[m] elements of out from send-displ[m] go to
  ;; member m; recv-count[m] elements from member m land in `in` at
  ;; recv-displ[m].  out and in: bytevectors, fxvectors or shared vectors,
  ;; of one element kind.  Over ranks, rmpi-alltoallv (shared vectors in
  ;; place); over places each block travels as a bytevector of its bytes.
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
          (let ([me (cg-id c)] [size (if (eq? kind 'bytes) 1 8)])
            (define (take! m bv)
              (unless (fx= (bytevector-length bv) (fx* size (fxvector-ref rc m)))
                (error who (format "member ~a sent ~a elements; recv-count expects ~a"
                                   m (fxquotient (bytevector-length bv) size) (fxvector-ref rc m))))
              (bytes->block! bv in (fx* size (fxvector-ref rd m))))
            (do ([m 0 (fx+ m 1)]) ((fx= m np))
              (unless (fx= m me)
                (coll-put c m (block->bytes out (fx* size (fxvector-ref sd m)) (fx* size (fxvector-ref sc m))))))
            (take! me (block->bytes out (fx* size (fxvector-ref sd me)) (fx* size (fxvector-ref sc me))))
            (do ([m 0 (fx+ m 1)]) ((fx= m np) in)
              (unless (fx= m me) (take! m (channel-get c who (cg-coll c) m))))))))

  (define (cg-n0-only c thunk)
    (check-cg 'CG-n0-only c)
    (barrier c 'CG-n0-only)
    (let ([v (if (fx= (cg-id c) 0) (thunk) (void))])
      (barrier c 'CG-n0-only)
      v))

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
