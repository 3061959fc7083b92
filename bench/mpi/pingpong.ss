#!chezscheme
;;; spindle's side of `spindle bench mpi` (bench/mpi.sh): the same figures
;;; as bench/mpi/pingpong.c: "pingpong-8b-us X" (median), "pingpong-8b-mean-us
;;; M" and "bandwidth-1mb-mbs Y", and "bandwidth-1mb-immutable-mbs I" (an
;;; immutable bytevector, which rmpi-send does not copy); then the same
;;; with the in-place byte messages (rmpi-send-bytes, rmpi-recv-bytes!
;;; into one buffer, as the C program does): "pingpong-8b-inplace-us",
;;; "pingpong-8b-inplace-mean-us", "bandwidth-1mb-inplace-mbs" (bytevector
;;; to bytevector) and "bandwidth-1mb-inplace-shared-mbs" (shared bytes
;;; to shared bytes).
;;;   mpi ITERS BIG     as ranks 0 and 1 of `spindle mpirun -np 2`; as the
;;;                     one rank of `-np 1`: "self-8b-cpu-us Z", the CPU
;;;                     time of an 8-byte rmpi-send to itself and its
;;;                     rmpi-recv, and "self-8b-inplace-cpu-us" of
;;;                     rmpi-send-bytes and rmpi-recv-bytes!
;;;   places ITERS BIG  between this program and a place, over place channels
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (spindle mpi) (pingpong-place))

(define args (cdr (command-line)))
(define iters (string->number (cadr args)))
(define big (string->number (caddr args)))
(define small (make-bytevector 8 1))
(define mib (make-bytevector (expt 2 20) 7))
;; The clock, in milliseconds: over MPI, MPI_Wtime, as the C program reads
;; it (about 20 ns a reading; Chez's time-monotonic takes 50 ns, which would
;; count against spindle in every timed round trip); between places, Chez's.
(define now current-inexact-monotonic-milliseconds)
(define (use-mpi-clock!)
  (let ([wtime (foreign-procedure "MPI_Wtime" () double)])
    (set! now (lambda () (fl* 1000. (wtime))))))

;; Runs the figures twice (the first warms up); prints the second
;; round's, each name with suffix.  ping: rank 0's round trip of 8 bytes;
;; pong: rank 1's answer; big-send: rank 0's 1 MiB message (of each buffer
;; in bigs); big-recv: rank 1's receive of one; ack-send, ack-recv: the
;; end of a bandwidth round; sync!: a barrier.
(define (measure me suffix ping pong big-send big-recv ack-send ack-recv sync! bigs)
  (do ([round 0 (+ round 1)]) ((= round 2))
    (sync!)
    (let ([t0 (now)] [ts (make-vector iters 0.)])
      (do ([i 0 (+ i 1)]) ((= i iters))
        (if (= me 0)
            (let ([t (now)]) (ping) (vector-set! ts i (- (now) t)))
            (pong)))
      (let ([mean (/ (* 1000 (- (now) t0)) iters)] [rtt (* 1000 (vector-ref (vector-sort < ts) (quotient iters 2)))])
        ;; 1 MiB one way, then a short answer
        (let ([bandwidth
               (lambda (bv)
                 (sync!)
                 (let ([t1 (now)])
                   (do ([i 0 (+ i 1)]) ((= i big)) (if (= me 0) (big-send bv) (big-recv bv)))
                   (if (= me 0) (ack-recv) (ack-send))
                   (/ (* big (expt 2 20)) (* 1000 (- (now) t1)))))])
          (let ([mbs (map (lambda (b) (cons (car b) (bandwidth (cdr b)))) bigs)])
            (when (and (= me 0) (= round 1))
              (printf "pingpong-8b~a-us ~,3f\npingpong-8b~a-mean-us ~,3f\n" suffix rtt suffix mean)
              (for-each (lambda (m) (printf "bandwidth-1mb~a~a-mbs ~,1f\n" suffix (car m) (cdr m))) mbs))))))))

(case (car args)
  [("mpi")
   (let* ([w (rmpi-world)] [me (rmpi-id w)] [peer (- 1 me)])
     (use-mpi-clock!)
     (if (= (rmpi-cnt w) 1)
         (let ([n (* 10 iters)] [in (make-bytevector 8 0)])
           (define (cpu-per-message name send+recv)
             (do ([round 0 (+ round 1)]) ((= round 2))
               (let ([c0 (cpu-time)])
                 (do ([i 0 (+ i 1)]) ((= i n)) (send+recv))
                 (when (= round 1) (printf "~a ~,3f\n" name (/ (* 1000. (- (cpu-time) c0)) n))))))
           (cpu-per-message "self-8b-cpu-us" (lambda () (rmpi-send w 0 small) (rmpi-recv w 0)))
           (cpu-per-message "self-8b-inplace-cpu-us" (lambda () (rmpi-send-bytes w 0 small) (rmpi-recv-bytes! w 0 in))))
         (let ([in (make-bytevector 8 0)] [mib-in (make-bytevector (expt 2 20) 0)]
               [shared (make-shared-bytes (expt 2 20) 7)] [shared-in (make-shared-bytes (expt 2 20) 0)]
               [barrier (lambda () (rmpi-barrier w))])
           ;; rmpi-send and rmpi-recv: each received value is a new one
           (measure me "" (lambda () (rmpi-send w peer small) (rmpi-recv w peer)) (lambda () (rmpi-send w peer (rmpi-recv w peer)))
                    (lambda (bv) (rmpi-send w peer bv)) (lambda (bv) (rmpi-recv w peer))
                    (lambda () (rmpi-send w peer small)) (lambda () (rmpi-recv w peer)) barrier
                    ;; a mutable bytevector (copied by rmpi-send), then an
                    ;; immutable one (sent in place)
                    (list (cons "" mib) (cons "-immutable" (bytevector->immutable-bytevector mib))))
           ;; in place: every message into one buffer
           (measure me "-inplace"
                    (lambda () (rmpi-send-bytes w peer small) (rmpi-recv-bytes! w peer in))
                    (lambda () (rmpi-recv-bytes! w peer in) (rmpi-send-bytes w peer in))
                    (lambda (b) (rmpi-send-bytes w peer b))
                    (lambda (b) (rmpi-recv-bytes! w peer (if (bytevector? b) mib-in shared-in)))
                    (lambda () (rmpi-send-bytes w peer small)) (lambda () (rmpi-recv-bytes! w peer in)) barrier
                    (list (cons "" mib) (cons "-shared" shared))))))]
  [("places")
   (let ([p (echo-place big)])
     ;; the place answers each message; the bandwidth round ends with its count
     (measure 0 "" (lambda () (place-channel-put p small) (place-channel-get p)) void
              (lambda (bv) (place-channel-put p bv)) void void (lambda () (place-channel-get p)) void
              (list (cons "" mib)))
     (place-kill p))]
  [else (error 'pingpong "expected mpi or places" (car args))])
