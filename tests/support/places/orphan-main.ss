#!chezscheme
;;; Run by tests/test-places.ss: starts places, prints their pids and the
;;; template's, then exits with the places still running ("exit"), or waits
;;; to be killed ("hold").
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (places kinds))
(define mode (let ([args (command-line-arguments)]) (if (null? args) "exit" (car args))))
(let* ([ps (list (agent-place) (agent-place) (agent-place))]
       [ids (map (lambda (p) (place-channel-put/get p '(pid))) ps)])
  (place-channel-put (car ps) '(block))
  (place-channel-put (cadr ps) '(spin))
  ;; the third waits in a get
  (printf "pids ~{~a ~}~a\n" (map car ids) (cadr (car ids)))
  (flush-output-port (current-output-port))
  (if (string=? mode "hold")
      (sleep 30)   ; bounded, in case nobody kills it
      (exit 0)))
