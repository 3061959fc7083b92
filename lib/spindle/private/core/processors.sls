;;; How many processors the machine has: the default size of a parallel
;;; thread pool and of the futures' pool.
(library (spindle private core processors)
  (export processor-count)
  (import (chezscheme))

  ;; The "processor" lines of /proc/cpuinfo, read once; 1 where it cannot
  ;; be read.
  (define processor-count
    (let ([n #f])
      (lambda ()
        (or n
            (let ([k (guard (c [#t 1])
                       (let ([p (open-input-file "/proc/cpuinfo")])
                         (let loop ([k 0])
                           (let ([line (get-line p)])
                             (cond
                               [(eof-object? line) (close-port p) k]
                               [(and (fx>= (string-length line) 9)
                                     (string=? (substring line 0 9) "processor"))
                                (loop (fx+ k 1))]
                               [else (loop k)])))))])
              (set! n (max 1 k))
              n))))))
