;;; Child program of tests/test-subprocess.ss: reads lines from stdin in a
;;; coroutine thread while a spinner counts; prints the line count and how
;;; far the spinner got while the reader waited for input.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
(define count 0)
(define spinner (thread (lambda () (let loop () (set! count (+ count 1)) (loop)))))
(define in (stdin-port))
(let loop ([lines 0] [spun 0])
  (let* ([before count] [line (get-line in)] [spun (+ spun (- count before))])
    (if (eof-object? line)
        (let ([out (stdout-port)])
          (put-string out (format "lines ~a spun ~a\n" lines spun))
          (flush-output-port out))
        (loop (+ lines 1) spun))))
(kill-thread spinner)
