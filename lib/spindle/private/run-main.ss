;;; `spindle run DIR FILE [ARG ...]` (bin/spindle's run, mpirun and trace):
;;; runs the program FILE as `scheme --program FILE ARG ...` would, with
;;; DIR, the program's own directory, last on the library path.  DIR is
;;; added here rather than joined into --libdirs, whose ':' separator has
;;; no escape: a directory named c:olon would be two.
(import (chezscheme))

(let ([args (command-line-arguments)])
  (library-directories (append (library-directories) (list (cons (car args) (car args)))))
  (command-line (cdr args))
  (command-line-arguments (cddr args))
  (load-program (cadr args)))
