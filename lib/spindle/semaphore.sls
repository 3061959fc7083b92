#!chezscheme
;;; Semaphores.  The manual: doc/reference.md,
;;; "(spindle semaphore)".  A facade over (spindle private impl semaphore), which the
;;; other implementations under private/impl/ import.
(library (spindle semaphore)
  (export make-semaphore semaphore? semaphore-post semaphore-wait semaphore-try-wait?
          semaphore-wait/enable-break semaphore-peek-evt semaphore-peek-evt? call-with-semaphore
          call-with-semaphore/enable-break semaphore-count-now)
  (import (spindle private impl semaphore)))
