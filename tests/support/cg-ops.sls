#!chezscheme
;;; A message-passing fork-join program (tests/support/cg-program.ss) that runs
;;; unchanged over places and over MPI ranks: every CG operation, checked
;;; against what a sequential computation gives.  Each member returns a
;;; list of the checks that failed (empty when all passed).
;;;
;;; cg-misuse: bad calls of the operations, in member 0 of np; returns for
;;; each the (who message) of what it raised.
(library (cg-ops)
  (export cg-ops cg-misuse cg-groups)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (spindle fork-join)
          (only (spindle mpi) rmpi-comm? rmpi-world rmpi-send rmpi-recv))

  ;; Member m's reduction data: 100 flonums.
  (define (data m) (let ([v (make-vector 100)]) (do ([i 0 (+ i 1)]) ((= i 100) v) (vector-set! v i (+ (* m 0.5) (/ 1.0 (+ m i 1)))))))

  (define (cg-ops np big)
    (fork-join np cg ([big big])
      (let* ([me (CG-id cg)] [n (CG-np cg)] [failed '()])
        (define (expect what want got)
          (unless (equal? want got) (set! failed (cons (list what 'member me 'want want 'got got) failed))))
        ;; point to point: a ring both ways, several messages in order, one to myself
        (CGsend cg (modulo (+ me 1) n) (list 'right me 1))
        (CGsend cg (modulo (+ me 1) n) (list 'right me 2))
        (CGsend cg (modulo (- me 1) n) (list 'left me))
        (CGsend cg me 'self)
        (expect "from the left, first" (list 'right (modulo (- me 1) n) 1) (CGrecv cg (modulo (- me 1) n)))
        (expect "from the left, second" (list 'right (modulo (- me 1) n) 2) (CGrecv cg (modulo (- me 1) n)))
        (expect "from the right" (list 'left (modulo (+ me 1) n)) (CGrecv cg (modulo (+ me 1) n)))
        (expect "to myself" 'self (CGrecv cg me))
        ;; a big message to the next member, sent before receiving: sends never block
        (CGsend cg (modulo (+ me 1) n) (make-bytevector big me))
        (let ([bv (CGrecv cg (modulo (- me 1) n))])
          (expect "big message" (list big (modulo (- me 1) n) (modulo (- me 1) n))
                  (list (bytevector-length bv) (bytevector-u8-ref bv 0) (bytevector-u8-ref bv (- big 1)))))
        (CGBarrier cg)
        ;; collectives
        (expect "broadcast" (list 'root (- n 1)) (CGbroadcast cg (- n 1) (list 'root me)))
        (expect "allreduce fixnum" (/ (* n (- n 1)) 2) (CGallreduce cg + me))
        (expect "allreduce max" (- n 1) (CGallreduce cg 'max me))
        (let ([sum (CGallreduce cg + (data me))]
              [want (let loop ([m 0] [acc (make-vector 100 0.0)])
                      (if (= m n) acc (loop (+ m 1) (vector-map + acc (data m)))))])
          (expect "allreduce flonum vector" #t
                  (for-all (lambda (a b) (< (abs (- a b)) 1e-9)) (vector->list sum) (vector->list want))))
        (expect "allreduce fxvector" (fxvector n (* 2 n)) (CGallreduce cg + (fxvector 1 2)))
        (expect "allreduce, any procedure, in id order" (iota n) (CGallreduce cg append (list me)))
        (expect "alltoall"
                (list->vector (map (lambda (s) (list s '-> me)) (iota n)))
                (CGalltoall cg (list->vector (map (lambda (d) (list me '-> d)) (iota n)))))
        (let ([got (CGalltoall cg (make-vector n (make-bytevector big me)))])
          (expect "alltoall of big bytevectors" (iota n)
                  (map (lambda (bv) (bytevector-u8-ref bv (- big 1))) (vector->list got))))
;; alltoallv: member me sends d+1 elements to member d (values
        ;; 10 me + d), into bytevectors, fxvectors and shared vectors
        (let* ([counts (lambda (f) (list->fxvector (map f (iota n))))]
               [sc (counts (lambda (d) (+ d 1)))]
               [sd (counts (lambda (d) (/ (* d (+ d 1)) 2)))]
               [rc (counts (lambda (s) (+ me 1)))]
               [rd (counts (lambda (s) (* s (+ me 1))))]
               [total-out (/ (* n (+ n 1)) 2)] [total-in (* n (+ me 1))]
               [want (apply append (map (lambda (s) (make-list (+ me 1) (+ (* 10 s) me))) (iota n)))])
          (define (fill! put!)
            (do ([d 0 (+ d 1)]) ((= d n))
              (do ([i 0 (+ i 1)]) ((> i d)) (put! (+ (fxvector-ref sd d) i) (+ (* 10 me) d)))))
          (let ([out (make-bytevector total-out)] [in (make-shared-bytes total-in)])
            (fill! (lambda (i x) (bytevector-u8-set! out i x)))
            (CGalltoallv cg out sc sd in rc rd)
            (expect "alltoallv bytes into shared bytes" want
                    (map (lambda (i) (shared-bytes-ref in i)) (iota total-in))))
          (let ([out (make-fxvector total-out)] [in (make-fxvector total-in -1)])
            (fill! (lambda (i x) (fxvector-set! out i (* -1000 x))))
            (expect "alltoallv fxvectors" (map (lambda (x) (* -1000 x)) want)
                    (fxvector->list (CGalltoallv cg out sc sd in rc rd))))
          (let ([out (make-shared-flvector total-out)] [in (make-shared-flvector total-in)])
            (fill! (lambda (i x) (shared-flvector-set! out i (+ 0.5 x))))
            (CGalltoallv cg out sc sd in rc rd)
            (expect "alltoallv shared flvectors" (map (lambda (x) (+ 0.5 x)) want)
                    (map (lambda (i) (shared-flvector-ref in i)) (iota total-in)))))
        (expect "pipeline" (iota (+ me 1)) (CGpipeline cg prev '() (append prev (list me))))
        (expect "n0-only" (if (= me 0) 'zero (void)) (CG-n0-only cg 'zero))
        (reverse failed))))

  (define (cg-misuse np)
    (vector-ref
      (fork-join np cg ()
        (if (= (CG-id cg) 0)
            (let ([np (CG-np cg)])
             (map (lambda (thunk)
                   (guard (c [#t (list (and (who-condition? c) (condition-who c))
                                       (and (message-condition? c) (condition-message c)))])
                     (thunk)
                     'no-error))
                 (list (lambda () (CGsend cg np 'x))
                       (lambda () (CGsend cg -1 'x))
                       (lambda () (CGrecv cg 'one))
                       (lambda () (CGrecv cg 0))
                       (lambda () (CGsend cg 0 (lambda () 'not-a-message)))
                       (lambda () (CGalltoall cg (make-vector (+ np 1) 0)))
                       (lambda () (CGbroadcast cg np 'x))
                       (lambda () (CGallreduce cg 'average 1.0))
                       (lambda () (CGalltoallv cg (make-bytevector 4) (make-fxvector np 1) (make-fxvector np 0)
                                               (make-fxvector 4) (make-fxvector np 1) (make-fxvector np 0)))
                       (lambda () (CGalltoallv cg (make-bytevector 4) (make-fxvector np 5) (make-fxvector np 0)
                                               (make-bytevector 4) (make-fxvector np 1) (make-fxvector np 0))))))
            '()))
      0))

  ;; fork-join twice, np members: a message the first group leaves
  ;; unreceived is not the second's; over ranks, a message the program
  ;; sends itself on the world communicator with tag 32700 (fork-join's
  ;; own CGsend tag) does not mix with the group's.  Returns the second
  ;; group's results: #((cg own) fresh other ...) when both hold.
  (define (cg-groups np)
    (fork-join np cg () (when (and (= (CG-id cg) 0) (> (CG-np cg) 1)) (CGsend cg 1 'leftover)) 'sent)
    (fork-join np cg ([ranks? (rmpi-comm? np)])
      (let ([me (CG-id cg)] [n (CG-np cg)])
        (cond
          [(= n 1) 'alone]
          [(= me 1)
           (when ranks? (rmpi-send (rmpi-world) 0 'own 32700))
           (CGsend cg 0 'cg)
           (CGrecv cg 0)]
          [(= me 0)
           (CGsend cg 1 'fresh)
           (list (CGrecv cg 1) (if ranks? (rmpi-recv (rmpi-world) 1 32700) 'own))]
          [else 'other]))))

  (lift-places (cg-ops)))
