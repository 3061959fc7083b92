;;; Child program of tests/test-subprocess.ss: writes 1 MB to a stdout
;;; pipe that its parent reads late, while a spinner counts; prints on
;;; stderr how far the spinner got while the writer waited.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
(define count 0)
(define spinner (thread (lambda () (let loop () (set! count (+ count 1)) (loop)))))
(define out (stdout-port))
(let ([before count])
  (put-string out (make-string 1000000 #\x))
  (flush-output-port out)
  (let ([err (stderr-port)])
    (put-string err (format "spun ~a\n" (- count before)))
    (flush-output-port err)))
(kill-thread spinner)
