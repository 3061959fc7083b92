#!chezscheme
;;; Buffered (asynchronous) channels, optionally bounded.  The manual:
;;; doc/reference.md, "(spindle async-channel)".  A facade over
;;; (spindle private impl async-channel), which also makes thread mailboxes.
(library (spindle async-channel)
  (export make-async-channel async-channel? async-channel-get async-channel-try-get
          async-channel-put async-channel-put-evt)
  (import (spindle private impl async-channel)))
