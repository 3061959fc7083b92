#!chezscheme
;;; Run by tests/test-places.ss: a place whose library lives in a directory
;;; whose name holds a ':' (which --libdirs cannot carry) starts, runs and
;;; answers.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
(let ([dir (format "/tmp/spindle-colon:~a" (random 1000000))])
  (mkdir dir)
  (with-output-to-file (string-append dir "/colon-place.sls")
    (lambda ()
      (write '(library (colon-place) (export start)
                (import (chezscheme) (only (spindle) place-channel-put))
                (define (start ch) (place-channel-put ch 'hello-from-colon)))))
    'replace)
  (library-directories (append (library-directories) (list (cons dir dir))))
  (printf "colon: ~s\n"
    (guard (c [#t (list 'raised (if (condition? c) (condition-message c) c))])
      (let ([p (dynamic-place '(colon-place) 'start)])
        (list (sync/timeout 20 p) (place-wait p)))))
  (for-each (lambda (f) (delete-file (string-append dir "/" f))) (directory-list dir))
  (delete-directory dir))
