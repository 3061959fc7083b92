#!chezscheme
;;; libc's clock: CLOCK_MONOTONIC, the same in every process (Chez's
;;; time-monotonic counts from the process's start, and places are
;;; processes).
(library (spindle private os monotonic-clock)
  (export clock-monotonic clock-gettime! monotonic-microseconds)
  (import (chezscheme) (spindle private os libc))

  (define loaded libc-loaded)   ; libc is loaded before the bindings below

  (define clock-monotonic 1)          ; CLOCK_MONOTONIC

  (define c-clock-gettime (foreign-procedure "clock_gettime" (int uptr) int))
  (define c-clock-gettime/bv (foreign-procedure "clock_gettime" (int u8*) int))

  ;; Fills the struct timespec at address ts (16 bytes) with clock's time.
  (define (clock-gettime! clock ts) (c-clock-gettime clock ts) (void))

  ;; The monotonic clock in microseconds (33 ns).
  (define (monotonic-microseconds)
    (let ([ts (make-bytevector 16)])
      (c-clock-gettime/bv clock-monotonic ts)
      (fx+ (fx* (bytevector-s64-native-ref ts 0) 1000000)
           (fxquotient (bytevector-s64-native-ref ts 8) 1000)))))
