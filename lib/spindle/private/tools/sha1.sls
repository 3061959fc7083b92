#!chezscheme
;;; SHA-1 (FIPS 180-4) of a bytevector or a file's contents, as 40 hex
;;; digits: how the build tells whether a source changed.  Not for
;;; security: a content fingerprint only.
(library (spindle private tools sha1)
  (export sha1-hex file-sha1-hex)
  (import (chezscheme))

  (define mask32 #xFFFFFFFF)
  (define-syntax add32 (syntax-rules () [(_ a ...) (fxlogand (fx+ a ...) mask32)]))
  (define-syntax rotl32
    (syntax-rules ()
      [(_ x n) (fxlogor (fxlogand (fxsll x n) mask32) (fxsrl x (fx- 32 n)))]))

  ;; The message padded to a multiple of 64 bytes: a 1 bit, zeros, and
  ;; its length in bits, big-endian.
  (define (pad bv)
    (let* ([n (bytevector-length bv)]
           [total (fx* 64 (fxquotient (fx+ n 72) 64))]
           [m (make-bytevector total 0)])
      (bytevector-copy! bv 0 m 0 n)
      (bytevector-u8-set! m n #x80)
      (bytevector-u64-set! m (fx- total 8) (* 8 n) (endianness big))
      m))

  (define (sha1-hex bv)
    (let ([m (pad bv)] [w (make-fxvector 80 0)])
      (let block ([at 0] [h0 #x67452301] [h1 #xEFCDAB89] [h2 #x98BADCFE] [h3 #x10325476] [h4 #xC3D2E1F0])
        (if (fx= at (bytevector-length m))
            (apply string-append
                   (map (lambda (h) (let ([s (number->string h 16)])
                                      (string-append (make-string (fx- 8 (string-length s)) #\0) (string-downcase s))))
                        (list h0 h1 h2 h3 h4)))
            (begin
              (do ([t 0 (fx+ t 1)]) ((fx= t 16))
                (fxvector-set! w t (bytevector-u32-ref m (fx+ at (fx* 4 t)) (endianness big))))
              (do ([t 16 (fx+ t 1)]) ((fx= t 80))
                (fxvector-set! w t (rotl32 (fxlogxor (fxvector-ref w (fx- t 3)) (fxvector-ref w (fx- t 8))
                                                     (fxvector-ref w (fx- t 14)) (fxvector-ref w (fx- t 16)))
                                           1)))
              (let round ([t 0] [a h0] [b h1] [c h2] [d h3] [e h4])
                (if (fx= t 80)
                    (block (fx+ at 64) (add32 h0 a) (add32 h1 b) (add32 h2 c) (add32 h3 d) (add32 h4 e))
                    (let-values ([(f k) (cond
                                          [(fx< t 20) (values (fxlogor (fxlogand b c) (fxlogand (fxlogxor b mask32) d)) #x5A827999)]
                                          [(fx< t 40) (values (fxlogxor b c d) #x6ED9EBA1)]
                                          [(fx< t 60) (values (fxlogor (fxlogand b c) (fxlogand b d) (fxlogand c d)) #x8F1BBCDC)]
                                          [else (values (fxlogxor b c d) #xCA62C1D6)])])
                      (round (fx+ t 1) (add32 (rotl32 a 5) f e k (fxvector-ref w t)) a (rotl32 b 30) c d)))))))))

  ;; #f for a file that cannot be read.
  (define (file-sha1-hex file)
    (guard (c [(i/o-error? c) #f])
      (let ([bv (call-with-port (open-file-input-port file) get-bytevector-all)])
        (sha1-hex (if (eof-object? bv) (bytevector) bv))))))
