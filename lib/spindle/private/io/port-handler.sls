#!chezscheme
;;; Chez's own port-handler record (s/io-types.ss, unchanged in Chez 10),
;;; rebuilt from its nongenerative uid: a port made from one has no buffer
;;; of its own unless given one, and Chez calls the handler for every
;;; operation.  (spindle synchronized-port) and the descriptor ports of
;;; (spindle private io fd-port) make their ports from it.
(library (spindle private io port-handler)
  (export make-port-handler)
  (import (chezscheme))

  (define port-handler-rtd
    (make-record-type-descriptor 'port-handler #f '#{port-handler cx3umjhy9nkkuqku-a} #t #t
      '#((immutable ready?) (immutable lookahead) (immutable unget) (immutable get)
         (immutable get-some) (immutable clear-input) (immutable put) (immutable put-some)
         (immutable flush) (immutable clear-output) (immutable close-port)
         (immutable port-position) (immutable set-port-position!) (immutable port-length)
         (immutable set-port-length!) (immutable port-nonblocking?) (immutable set-port-nonblocking!))))

  (define make-port-handler
    (record-constructor (make-record-constructor-descriptor port-handler-rtd #f #f))))
