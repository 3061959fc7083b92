#!chezscheme
;;; Console ports over descriptors 0, 1 and 2 that park the green thread.  The manual: doc/reference.md,
;;; "(spindle console)".  A facade over (spindle private impl console), which the
;;; other implementations under private/impl/ import.
(library (spindle console)
  (export stdin-port stdout-port stderr-port binary-console-port install-console-ports!
          console-port-descriptor)
  (import (spindle private impl console)))
