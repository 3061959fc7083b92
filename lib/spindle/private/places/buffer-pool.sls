#!chezscheme
;;; Foreign buffers for place-channel frames.  Large ones are kept for
;;; reuse: glibc serves a malloc of 128 KB or more with a fresh mmap, and
;;; faulting its pages in costs more than the copy into it (a 1 MB put
;;; and get within one process took 1.17 ms with malloc, 0.35 ms with
;;; reused buffers).
(library (spindle private places buffer-pool)
  (export buffer-alloc buffer-free)
  (import (chezscheme) (only (spindle private core atomic) with-os-mutex)
          (only (spindle private os memory) malloc free))

  (define pooled-min (* 64 1024))          ; smaller requests go to malloc
  (define pool-limit (* 16 1024 1024))     ; bytes kept at most
  (define lock (make-mutex))               ; held with interrupts disabled
  (define classes (make-vector 64 '()))    ; index k: free buffers of 2^k bytes
  (define kept 0)

  ;; The size class of an n-byte request (n >= pooled-min): the k with
  ;; 2^(k-1) < n <= 2^k.
  (define (class-of n) (fxlength (fx- n 1)))

  ;; A buffer of at least n bytes; give it back with (buffer-free b n).
  (define (buffer-alloc n)
    (if (fx< n pooled-min)
        (malloc (fxmax n 1))
        (let* ([k (class-of n)]
               [b (with-os-mutex lock
                    (let ([l (vector-ref classes k)])
                      (and (pair? l)
                           (begin
                             (vector-set! classes k (cdr l))
                             (set! kept (fx- kept (fxsll 1 k)))
                             (car l)))))])
          (or b (malloc (fxsll 1 k))))))

  (define (buffer-free b n)
    (if (fx< n pooled-min)
        (free b)
        (let ([k (class-of n)])
          (unless (with-os-mutex lock
                    (and (fx<= (fx+ kept (fxsll 1 k)) pool-limit)
                         (begin
                           (vector-set! classes k (cons b (vector-ref classes k)))
                           (set! kept (fx+ kept (fxsll 1 k)))
                           #t)))
            (free b))))))
