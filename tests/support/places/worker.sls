#!chezscheme
;;; Start procedures for dynamic-place with a library name (tests/test-places.ss).
(library (places worker)
  (export start start-exit-7 start-crash not-a-procedure start-young-generation start-own-trip)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
  ;; echoes (worker . m) until 'stop
  (define (start ch)
    (let loop ()
      (let ([m (place-channel-get ch)])
        (unless (eq? m 'stop)
          (place-channel-put ch (cons 'worker m))
          (loop)))))
  (define (start-exit-7 ch) (exit 7))
  (define (start-crash ch) (error 'start-crash "deliberate failure in a test place"))
  (define not-a-procedure 42)
  ;; replies (trip-at-start . trip-after-live-data): collect-trip-bytes when
  ;; the place starts, and after it keeps ~16 MB live through collections
  (define (start-young-generation ch)
    (let ([at-start (collect-trip-bytes)])
      (let ([live (let loop ([i 0] [acc '()]) (if (fx= i 16384) acc (loop (fx+ i 1) (cons (make-bytevector 1000 (fxand i 255)) acc))))])
        (let ([c0 (collections)])
          (let churn () (unless (fx>= (fx- (collections) c0) 3) (make-vector 100) (churn))))
        (place-channel-put ch (cons at-start (collect-trip-bytes)))
        (when (null? live) (place-channel-put ch 'never)))))
  ;; sets collect-trip-bytes to 1 MB, keeps ~16 MB live through
  ;; collections, replies collect-trip-bytes
  (define (start-own-trip ch)
    (collect-trip-bytes (* 1024 1024))
    (let ([live (let loop ([i 0] [acc '()]) (if (fx= i 16384) acc (loop (fx+ i 1) (cons (make-bytevector 1000 (fxand i 255)) acc))))])
      (let ([c0 (collections)])
        (let churn () (unless (fx>= (fx- (collections) c0) 3) (make-vector 100) (churn))))
      (place-channel-put ch (collect-trip-bytes))
      (when (null? live) (place-channel-put ch 'never))))
  ;; never exported: dynamic-place with this start-name must end the place with 1
  (define (hidden ch) (place-channel-put ch 'hidden)))
