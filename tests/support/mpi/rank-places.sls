#!chezscheme
;;; Places started inside an MPI rank (tests/support/mpi/mpi-child.ss, scenario places).
(library (rank-places)
  (export echo-place mpi-place)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (spindle mpi))

  ;; Answers each message with (echo message).
  (define (echo-place)
    (place ch (let loop () (place-channel-put ch (list 'echo (place-channel-get ch))) (loop))))

  ;; Tries (rmpi-world) and answers with the error's message.
  (define (mpi-place)
    (place ch
      (place-channel-put ch
        (guard (c [(message-condition? c) (condition-message c)])
          (rmpi-world)
          "rmpi-world worked in a place"))))

  (lift-places (rank-places)))
