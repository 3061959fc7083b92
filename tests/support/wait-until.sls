#!chezscheme
;;; (wait-until pred secs [poll-secs]): calls pred every poll-secs seconds
;;; (default 0.005), parking the calling thread between calls, for up to
;;; secs seconds; returns pred's last value (#f if it never held).
(library (wait-until)
  (export wait-until)
  (import (only (chezscheme) define case-lambda let let* or if > + * begin)
          (only (spindle) sleep current-inexact-monotonic-milliseconds))

  (define wait-until
    (case-lambda
      [(pred secs) (wait-until pred secs 0.005)]
      [(pred secs poll-secs)
       (let ([deadline (+ (current-inexact-monotonic-milliseconds) (* 1000 secs))])
         (let loop ()
           (or (pred)
               (if (> (current-inexact-monotonic-milliseconds) deadline)
                   #f
                   (begin (sleep poll-secs) (loop))))))])))
