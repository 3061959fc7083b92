#!chezscheme
;;; Futures: tasks on a shared parallel pool of (processor-count) workers.
;;; The manual: doc/reference.md, "(spindle future)".  A facade over
;;; (spindle private impl future), which also makes (spindle scope)'s owned
;;; futures.
(library (spindle future)
  (export future touch future? would-be-future futures-enabled? current-future
          current-future-pool future-pool
          make-fsemaphore fsemaphore? fsemaphore-post fsemaphore-wait
          fsemaphore-try-wait? fsemaphore-count
          for/async map/async processor-count)
  (import (spindle private impl future)))
