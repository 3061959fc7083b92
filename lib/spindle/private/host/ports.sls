#!chezscheme
;;; Ports built on Chez's own port-handler record, with no buffer of their
;;; own unless given one, so that Chez calls the handler for every
;;; operation: (spindle synchronized-port) and the descriptor ports of
;;; (spindle private io fd-port) are made here.  The record is rebuilt
;;; from its nongenerative uid (s/io-types.ss; the same 17 fields on 9.5.8
;;; and 10.x), and so are the port constructors, the port's info field
;;; (the owner's state) and its flags.  (Chez exports mark-port-closed!
;;; and set-port-bol! itself.)
(library (spindle private host ports)
  (export make-port-handler port-handler-of port-info port-flags-set? set-port-flags!
          make-handler-binary-input-port make-handler-binary-output-port
          make-handler-binary-input/output-port make-handler-textual-input-port
          make-handler-textual-output-port make-handler-textual-input/output-port)
  (import (chezscheme))

  (define port-handler-rtd
    (make-record-type-descriptor 'port-handler #f '#{port-handler cx3umjhy9nkkuqku-a} #t #t
      '#((immutable ready?) (immutable lookahead) (immutable unget) (immutable get)
         (immutable get-some) (immutable clear-input) (immutable put) (immutable put-some)
         (immutable flush) (immutable clear-output) (immutable close-port)
         (immutable port-position) (immutable set-port-position!) (immutable port-length)
         (immutable set-port-length!) (immutable port-nonblocking?) (immutable set-port-nonblocking!))))

  (define make-port-handler
    (record-constructor (make-record-constructor-descriptor port-handler-rtd #f #f)))

  ;; p's port-handler record (Chez's exported port-handler is another thing)
  (define (port-handler-of p) (#%$port-handler p))
  (define-syntax port-info (syntax-rules () [(_ p) (#%$port-info p)]))
  (define (port-flags-set? p bits) (#%$port-flags-set? p bits))
  (define (set-port-flags! p bits) (#%$set-port-flags! p bits))

  ;; name, handler, Chez's buffer(s) (a bytevector or string; "" or #vu8()
  ;; for none), info.
  (define (make-handler-binary-input-port name h buf info) (#%$make-binary-input-port name h buf info))
  (define (make-handler-binary-output-port name h buf info) (#%$make-binary-output-port name h buf info))
  (define (make-handler-binary-input/output-port name h ibuf obuf info)
    (#%$make-binary-input/output-port name h ibuf obuf info))
  (define (make-handler-textual-input-port name h buf info) (#%$make-textual-input-port name h buf info))
  (define (make-handler-textual-output-port name h buf info) (#%$make-textual-output-port name h buf info))
  (define (make-handler-textual-input/output-port name h ibuf obuf info)
    (#%$make-textual-input/output-port name h ibuf obuf info)))
