#!chezscheme
;;; The deadlock watch and its report.  The manual: doc/reference.md,
;;; "(spindle deadlock)".  A facade: the implementation, and the hook
;;; (spindle private impl thread) fills, are (spindle private impl deadlock)'s.
(library (spindle deadlock)
  (export find-deadlocks deadlock-report deadlock-exit-enabled)
  (import (spindle private impl deadlock)))
