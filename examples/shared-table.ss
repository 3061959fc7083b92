#!chezscheme
;;; Word counts shared by coroutine threads, parallel threads and futures:
;;; one concurrent hashtable, updated atomically, and lines printed whole
;;; on the (synchronized) console.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

(define words '#(apple pear fig plum kiwi lime))

;; worker j counts 20000 words from its own pseudo-random sequence
(define (count-words! table j)
  (let loop ([i 0] [x (+ 12345 j)])
    (when (< i 20000)
      (let ([x (mod (+ (* x 1103515245) 12345) 2147483648)])
        (concurrent-hashtable-update! table (vector-ref words (mod (quotient x 65536) 6)) add1 0)
        (loop (+ i 1) x))))
  ;; with-port-lock keeps the pieces of one line together
  (with-port-lock (current-output-port)
    (display "worker ") (display j) (display " done") (newline)))

(define table (make-concurrent-eq-hashtable))
(define pool (make-parallel-thread-pool 2))

(define workers
  (list (thread (lambda () (count-words! table 0)))                 ; coroutine thread
        (thread (lambda () (count-words! table 1)) #:pool pool)     ; parallel threads
        (thread (lambda () (count-words! table 2)) #:pool pool)
        (thread (lambda () (count-words! table 3)) #:pool 'own)))
(define f (future (lambda () (count-words! table 4))))

(for-each thread-wait workers)
(touch f)

;; a consistent snapshot, as an ordinary Chez hashtable
(let ([counts (concurrent-hashtable-copy table)])
  (vector-for-each
    (lambda (w) (printf "~a ~a\n" w (hashtable-ref counts w 0)))
    words)
  (printf "total ~a (5 workers x 20000)\n" (apply + (vector->list (hashtable-values counts)))))
