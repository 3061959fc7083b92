#!chezscheme
;;; Threads: coroutine threads (main pool) and parallel threads (parallel
;;; thread pools), with mailboxes, kill, break and suspend.  The manual:
;;; doc/reference.md, "(spindle thread)".  A facade: the implementation,
;;; and the names only spindle's own libraries use, are
;;; (spindle private impl thread)'s.
(library (spindle thread)
  (export thread thread? current-thread current-thread-pool
          make-parallel-thread-pool parallel-thread-pool? parallel-thread-pool-close
          thread-wait kill-thread break-thread thread-suspend thread-resume
          thread-running? thread-dead? sleep yield
          thread-dead-evt thread-suspend-evt thread-resume-evt
          thread-send thread-receive thread-try-receive thread-receive-evt
          thread-rewind-receive
          processor-count memory-order-acquire memory-order-release
          &break break-condition? &break-hang-up break-hang-up-condition?
          &break-terminate break-terminate-condition?
          break-enabled parameterize-break srfi-18-thread-pool
          box-cas! vector-cas!
          dump-threads thread-state thread-waits thread-name)
  (import (spindle private impl thread)))
