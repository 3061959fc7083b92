#!chezscheme
;;; call-blocking: a procedure that may block its OS thread, on a helper OS thread.  The manual: doc/reference.md,
;;; "(spindle blocking)".  A facade over (spindle private impl blocking), which the
;;; other implementations under private/impl/ import.
(library (spindle blocking)
  (export call-blocking blocking-helper-count blocking-helpers-busy?)
  (import (spindle private impl blocking)))
