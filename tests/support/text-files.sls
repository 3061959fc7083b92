#!chezscheme
;;; Reading text files in tests.
(library (text-files)
  (export read-lines read-file)
  (import (chezscheme))

  ;; The lines of file, or () when it does not exist.
  (define (read-lines file)
    (if (file-exists? file)
        (call-with-input-file file
          (lambda (p) (let loop ([acc '()]) (let ([l (get-line p)]) (if (eof-object? l) (reverse acc) (loop (cons l acc)))))))
        '()))

  ;; The text of file ("" when it is empty).
  (define (read-file path)
    (call-with-input-file path (lambda (p) (let ([s (get-string-all p)]) (if (eof-object? s) "" s))))))
