#!chezscheme
;;; Command-line options of the example programs: --name VALUE.
(library (options)
  (export option)
  (import (chezscheme))

  ;; The number after name on the command line, or default.
  (define (option name default)
    (let loop ([args (cdr (command-line))])
      (cond
        [(or (null? args) (null? (cdr args))) default]
        [(string=? (car args) name) (string->number (cadr args))]
        [else (loop (cdr args))]))))
