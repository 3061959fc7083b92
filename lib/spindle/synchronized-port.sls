#!chezscheme
;;; Synchronized ports: one port shared by any mix of threads and futures.  The manual: doc/reference.md,
;;; "(spindle synchronized-port)".  A facade over (spindle private impl synchronized-port), which the
;;; other implementations under private/impl/ import.
(library (spindle synchronized-port)
  (export make-synchronized-port synchronized-port? with-port-lock call-with-port-lock
          make-synchronized-console-port)
  (import (spindle private impl synchronized-port)))
