#!chezscheme
;;; Events and sync, with channels, semaphores and async channels.
(library (spindle event)
  (export evt? sync sync/timeout sync/enable-break sync/timeout/enable-break
          choice-evt wrap-evt handle-evt handle-evt? guard-evt nack-guard-evt
          poll-guard-evt replace-evt always-evt never-evt alarm-evt system-idle-evt
          current-inexact-milliseconds current-inexact-monotonic-milliseconds
          register-evt-record-type!
          make-channel channel? channel-get channel-try-get channel-put
          channel-put-evt channel-put-evt?
          make-semaphore semaphore? semaphore-post semaphore-wait semaphore-try-wait?
          semaphore-wait/enable-break semaphore-peek-evt semaphore-peek-evt?
          call-with-semaphore call-with-semaphore/enable-break
          make-async-channel async-channel? async-channel-get async-channel-try-get
          async-channel-put async-channel-put-evt
          box-cas! vector-cas!)
  (import (only (chezscheme) box-cas! vector-cas!)
          (spindle private core sync) (spindle channel) (spindle semaphore)
          (only (spindle async-channel) make-async-channel async-channel? async-channel-get
                async-channel-try-get async-channel-put async-channel-put-evt)))
