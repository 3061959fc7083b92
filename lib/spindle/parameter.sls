#!chezscheme
;;; Parameters whose values belong to green threads.  The manual:
;;; doc/reference.md, "(spindle parameter)".  A facade over
;;; (spindle private impl parameter), which also gives the thread layer a
;;; thread's parameterization.
(library (spindle parameter)
  (export make-parameter parameterize make-thread-parameter)
  (import (spindle private impl parameter)))
