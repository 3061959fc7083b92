#!chezscheme
;;; The frame format of place channels: one header layout for the socket,
;;; the shared-memory rings and the template process's control socket.
;;;
;;; A frame is a 16-byte header, then `length` payload bytes:
;;;   offset  0: length, u64 (native order)
;;;   offset  8: descriptor count, u32: descriptors that travel with the
;;;              header's bytes (socket frames; always 0 in a ring)
;;;   offset 12: kind, u32
;;; In a ring a frame starts at a multiple of 16 and its payload is padded
;;; to 16 (see shm-ring.sls).
(library (spindle private places frame)
  (export frame-header-size
          kind-fasl kind-raw kind-offer kind-large kind-chunk kind-wrap kind-retire
          message-kind message-kind-raw?
          frame-header-set! frame-length frame-fd-count frame-kind
          frame-header-bytevector
          large-payload-size large-payload-set! large-size large-raw?
          frame make-frame frame? frame-payload frame-raw? frame-fds)
  (import (chezscheme))

  (define frame-header-size 16)
  (define length-offset 0)
  (define fd-count-offset 8)
  (define kind-offset 12)

  ;; kinds
  (define kind-fasl 0)      ; a message, fasl-encoded
  (define kind-raw 1)       ; a message that is a bytevector, as is
  (define kind-offer 2)     ; socket: a ring offered; payload: its capacity, u64;
                            ; descriptors: its memfd, data and space eventfds
  (define kind-large 3)     ; ring: a message in chunks follows; payload: see large-payload-set!
  (define kind-chunk 4)     ; ring: part of the large message being sent
  (define kind-wrap 5)      ; ring: the rest of this lap is skipped
  (define kind-retire 6)    ; ring: the writer goes on over the socket

  (define (message-kind raw?) (if raw? kind-raw kind-fasl))
  (define (message-kind-raw? kind) (fx= kind kind-raw))

  ;; Header at a foreign address.
  (define (frame-header-set! a len fd-count kind)
    (foreign-set! 'unsigned-64 a length-offset len)
    (foreign-set! 'unsigned-32 a fd-count-offset fd-count)
    (foreign-set! 'unsigned-32 a kind-offset kind))
  (define (frame-length a) (foreign-ref 'unsigned-64 a length-offset))
  (define (frame-fd-count a) (foreign-ref 'unsigned-32 a fd-count-offset))
  (define (frame-kind a) (foreign-ref 'unsigned-32 a kind-offset))

  (define (frame-header-bytevector len fd-count kind)
    (let ([h (make-bytevector frame-header-size 0)])
      (bytevector-u64-native-set! h length-offset len)
      (bytevector-u32-native-set! h fd-count-offset fd-count)
      (bytevector-u32-native-set! h kind-offset kind)
      h))

  ;; The payload of a kind-large frame: the total size of the chunks that
  ;; follow (u64) and the message's kind (u32).
  (define large-payload-size 12)
  (define (large-payload-set! a size kind)
    (foreign-set! 'unsigned-64 a 0 size)
    (foreign-set! 'unsigned-32 a 8 kind))
  (define (large-size a) (foreign-ref 'unsigned-64 a 0))
  (define (large-raw? a) (message-kind-raw? (foreign-ref 'unsigned-32 a 8)))

  ;; A message frame as received: its payload bytevector, whether it is a
  ;; raw bytevector (else fasl), and the descriptors that came with it.
  (define-record-type frame
    (fields payload raw? fds)
    (nongenerative spindle-place-frame-v1) (sealed #t)))
