#!chezscheme
;;; Places: isolated parallel instances (OS processes) that talk through
;;; place channels.  The manual: doc/reference.md, "Places".  A facade: the
;;; implementation, and the entry points of the template process, are
;;; (spindle private impl place)'s.
(library (spindle place)
  (export dynamic-place place lift-places place? place-enabled? place-wait place-kill
          place-break place-dead-evt place-channel place-channel? place-channel-put
          place-channel-get place-channel-put/get place-message-allowed?
          processor-count
          make-shared-bytes shared-bytes shared-bytes? shared-bytes-length
          shared-bytes-ref shared-bytes-set! shared-bytes->bytevector
          make-shared-fxvector shared-fxvector shared-fxvector? shared-fxvector-length
          shared-fxvector-ref shared-fxvector-set!
          make-shared-flvector shared-flvector shared-flvector? shared-flvector-length
          shared-flvector-ref shared-flvector-set!)
  (import (spindle private impl place)))
