#!chezscheme
;;; libc memory: C allocation, copies between C memory and bytevectors,
;;; NUL-terminated strings, and shared memory (memfd + mmap).
(library (spindle private os memory)
  (export malloc free memcpy-to-bytevector! memcpy-from-bytevector! memmove!
          foreign->bytevector! bytevector->foreign! c-string c-strings
          make-memfd map-shared unmap)
  (import (chezscheme) (spindle private os libc))

  (define loaded libc-loaded)   ; libc is loaded before the bindings below

  (define malloc (foreign-procedure "malloc" (size_t) uptr))
  (define free (foreign-procedure "free" (uptr) void))
  (define c-memcpy-to (foreign-procedure "memcpy" (u8* uptr size_t) uptr))
  (define c-memcpy-from (foreign-procedure "memcpy" (uptr u8* size_t) uptr))
  (define c-memcpy (foreign-procedure "memcpy" (uptr uptr size_t) uptr))
  (define c-memmove (foreign-procedure "memmove" (uptr uptr size_t) uptr))
  (define c-memfd-create (foreign-procedure "memfd_create" (string unsigned) int))
  (define c-ftruncate (foreign-procedure "ftruncate" (int long) int))
  (define c-close (foreign-procedure "close" (int) int))
  (define c-mmap (foreign-procedure "mmap" (uptr size_t int int int long) uptr))
  (define c-munmap (foreign-procedure "munmap" (uptr size_t) int))

  ;; n bytes from C memory at addr to the start of bv; and back.
  (define (memcpy-to-bytevector! bv addr n) (c-memcpy-to bv addr n) (void))
  (define (memcpy-from-bytevector! addr bv n) (c-memcpy-from addr bv n) (void))
  (define (memmove! to from n) (c-memmove to from n) (void))

  ;; n bytes between C memory at addr and bv at start.
  (define (foreign->bytevector! addr bv start n)
    (check-range 'foreign->bytevector! bv start n)
    (with-interrupts-disabled (c-memcpy (bytes-at bv start) addr n))
    (void))
  (define (bytevector->foreign! bv start addr n)
    (check-range 'bytevector->foreign! bv start n)
    (with-interrupts-disabled (c-memcpy addr (bytes-at bv start) n))
    (void))

  ;; A NUL-terminated UTF-8 copy of str in C memory; free it.
  (define (c-string str)
    (let* ([bv (string->utf8 str)] [n (bytevector-length bv)] [s (malloc (+ n 1))])
      (memcpy-from-bytevector! s bv n)
      (foreign-set! 'unsigned-8 s n 0)
      s))

  ;; A NULL-terminated C array of c-strings of lst: (values array owned),
  ;; owned being the strings to free with the array.
  (define (c-strings lst)
    (let ([v (malloc (* 8 (+ 1 (length lst))))])
      (let loop ([l lst] [i 0] [owned '()])
        (if (null? l)
            (begin (foreign-set! 'uptr v (* 8 i) 0) (values v owned))
            (let ([s (c-string (car l))])
              (foreign-set! 'uptr v (* 8 i) s)
              (loop (cdr l) (+ i 1) (cons s owned)))))))

  ;; ---------------------------------------------------------------- shared memory
  (define mfd-cloexec 1)              ; MFD_CLOEXEC
  (define prot-read+write 3)          ; PROT_READ | PROT_WRITE
  (define map-shared-flag 1)          ; MAP_SHARED
  (define map-failed (- (expt 2 64) 1))

  ;; A close-on-exec memory file of size bytes (at least 1).
  (define (make-memfd who size)
    (let ([fd (c-memfd-create "spindle-shared" mfd-cloexec)])
      (when (fx< fd 0) (error who "memfd_create failed"))
      (unless (eqv? 0 (c-ftruncate fd (max size 1)))
        (c-close fd)
        (error who "cannot size shared memory" size))
      fd))

  (define map-populate #x8000)        ; MAP_POPULATE

  ;; Maps size bytes of fd, shared, readable and writable: the address.
  ;; populate?: every page is faulted in now, not at its first touch.
  (define map-shared
    (case-lambda
      [(who fd size) (map-shared who fd size #f)]
      [(who fd size populate?)
       (let ([a (c-mmap 0 (max size 1) prot-read+write
                        (if populate? (fxior map-shared-flag map-populate) map-shared-flag) fd 0)])
         (when (= a map-failed) (error who "mmap failed" size))
         a)]))

  (define (unmap addr size) (c-munmap addr (max size 1)) (void)))
