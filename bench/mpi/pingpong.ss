#!chezscheme
;;; spindle's side of `spindle bench mpi` (bench/mpi.sh): the same figures
;;; as bench/mpi/pingpong.c: "pingpong-8b-us X" (median), "pingpong-8b-mean-us
;;; M" and "bandwidth-1mb-mbs Y", and "bandwidth-1mb-immutable-mbs I" (an
;;; immutable bytevector, which rmpi-send does not copy).
;;;   mpi ITERS BIG     as ranks 0 and 1 of `spindle mpirun -np 2`; as the
;;;                     one rank of `-np 1`: "self-8b-cpu-us Z", the CPU
;;;                     time of an 8-byte rmpi-send to itself and its rmpi-recv
;;;   places ITERS BIG  between this program and a place, over place channels
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (spindle mpi) (pingpong-place))

(define args (cdr (command-line)))
(define iters (string->number (cadr args)))
(define big (string->number (caddr args)))
(define small (make-bytevector 8 1))
(define mib (make-bytevector (expt 2 20) 7))
(define now current-inexact-monotonic-milliseconds)

;; Runs the figures twice (the first warms up) with send, recv and sync!
;; (a barrier); prints the second round's.
(define (measure me send recv sync!)
  (do ([round 0 (+ round 1)]) ((= round 2))
    (sync!)
    (let ([t0 (now)] [ts (make-vector iters 0.)])
      (do ([i 0 (+ i 1)]) ((= i iters))
        (if (= me 0)
            (let ([t (now)]) (send small) (recv) (vector-set! ts i (- (now) t)))
            (send (recv))))
      (let ([mean (/ (* 1000 (- (now) t0)) iters)] [rtt (* 1000 (vector-ref (vector-sort < ts) (quotient iters 2)))])
        ;; 1 MiB one way: a mutable bytevector (copied by rmpi-send), then
        ;; an immutable one (sent in place)
        (let ([bandwidth
               (lambda (bv)
                 (sync!)
                 (let ([t1 (now)])
                   (do ([i 0 (+ i 1)]) ((= i big)) (if (= me 0) (send bv) (recv)))
                   (if (= me 0) (recv) (send small))
                   (/ (* big (expt 2 20)) (* 1000 (- (now) t1)))))])
          (let* ([mbs (bandwidth mib)] [imbs (bandwidth (bytevector->immutable-bytevector mib))])
            (when (and (= me 0) (= round 1))
              (printf "pingpong-8b-us ~,3f\npingpong-8b-mean-us ~,3f\nbandwidth-1mb-mbs ~,1f\nbandwidth-1mb-immutable-mbs ~,1f\n"
                      rtt mean mbs imbs))))))))

(case (car args)
  [("mpi")
   (let* ([w (rmpi-world)] [me (rmpi-id w)] [peer (- 1 me)])
     (if (= (rmpi-cnt w) 1)
         (let ([n (* 10 iters)])
           (do ([round 0 (+ round 1)]) ((= round 2))
             (let ([c0 (cpu-time)])
               (do ([i 0 (+ i 1)]) ((= i n)) (rmpi-send w 0 small) (rmpi-recv w 0))
               (when (= round 1) (printf "self-8b-cpu-us ~,3f\n" (/ (* 1000. (- (cpu-time) c0)) n))))))
         (measure me (lambda (v) (rmpi-send w peer v)) (lambda () (rmpi-recv w peer)) (lambda () (rmpi-barrier w)))))]
  [("places")
   (let ([p (echo-place big)])
     ;; the place answers each message; the bandwidth round ends with its count
     (measure 0 (lambda (v) (place-channel-put p v)) (lambda () (place-channel-get p)) (lambda () (void)))
     (place-kill p))]
  [else (error 'pingpong "expected mpi or places" (car args))])
