#!chezscheme
;;; The place of bench/mpi/pingpong.ss's places mode.  Its first message is
;;; big, the bandwidth round's count of 1 MiB messages; then it answers
;;; every 8-byte message with itself, and every big-th 1 MiB message with
;;; one 8-byte message.
(library (pingpong-place)
  (export echo-place)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

  (define (echo-place big)
    (let ([p (place ch
               (let ([big (place-channel-get ch)] [small (make-bytevector 8 1)])
                 (let loop ([bigs 0])
                   (let ([m (place-channel-get ch)])
                     (cond
                       [(fx= (bytevector-length m) 8) (place-channel-put ch m) (loop bigs)]
                       [(fx= (fx+ bigs 1) big) (place-channel-put ch small) (loop 0)]
                       [else (loop (fx+ bigs 1))])))))])
      (place-channel-put p big)
      p))

  (lift-places (pingpong-place)))
