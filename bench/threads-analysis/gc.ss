;; gc.ss -- the allocation-heavy rows of the Racket-v9 suite and their parts,
;; plain Chez (no spindle), 1 thread (two units in one fork-thread) against 2
;; threads (one unit each), with collections and collector time (harness.ss).
;;   scheme --script bench/threads-analysis/gc.ss [--runs K] [--trip BYTES]
;;          [--radix R] [--in-place G] [WORKLOAD ...]
;;   /root/.cache/spindle/chez-10.0.0/bin/scheme --script bench/threads-analysis/gc.ss ...
;; Workloads (one unit each):
;;   hash-nums   3 rounds of 300,000 fixnum keys into a fresh equal? hashtable
;;               and back (the suite's row uses 10^6 keys; 3x10^5 keeps a run short)
;;   hash-nums-fx  the same with (make-hashtable fixnum-hash equal?), a hash
;;               that keeps consecutive fixnums apart in the low bits
;;   eq-nums     the same with an eq? hashtable (no equal-hash)
;;   vec-keep    300,000 4-element vectors kept alive in a list, 3 rounds
;;               (live young data for the collector, no hashing)
;;   cons-drop   3,000,000 short-lived 4-element lists (garbage at once)
;;   strfib*     (strfib* 29): every sum through number->string and string->number
;;   portfib     the same converting with display to a per-thread string port
;;   handfib     the same converting with a hand-written fixnum->decimal
;; --in-place G sets Chez 10's in-place-minimum-generation (ignored on 9.5.8).
(define (here f) (let ([d (path-parent (car (command-line)))]) (if (string=? d "") f (string-append d "/" f))))
(load (here "harness.ss"))
(define N 10)                            ; ops-table.ss wants it; only fixnum->decimal is used
(load (here "ops-table.ss"))
(let ([a (member "--in-place" (command-line-arguments))])
  (when a
    (if (top-level-bound? 'in-place-minimum-generation)
        ((top-level-value 'in-place-minimum-generation) (string->number (cadr a)))
        (printf "# --in-place ignored: no in-place-minimum-generation in this Chez\n"))))
(define K 300000)
(define (hash-nums)
  (let round ([r 0] [acc 0])
    (if (= r 3) acc
        (let ([h (make-hashtable equal-hash equal?)])
          (do ([i 0 (+ i 1)]) ((= i K)) (hashtable-set! h i (+ i r)))
          (round (+ r 1) (let sum ([i 0] [s acc]) (if (= i K) s (sum (+ i 1) (+ s (hashtable-ref h i 0))))))))))
;; the same with a hash function that keeps consecutive fixnums apart in the
;; low bits (Chez 10.0.0's equal-hash does not: see PARALLEL-ALLOCATION.md)
(define (fixnum-hash k) (if (fixnum? k) (fxlogand k (most-positive-fixnum)) (equal-hash k)))
(define (hash-nums-fx)
  (let round ([r 0] [acc 0])
    (if (= r 3) acc
        (let ([h (make-hashtable fixnum-hash equal?)])
          (do ([i 0 (+ i 1)]) ((= i K)) (hashtable-set! h i (+ i r)))
          (round (+ r 1) (let sum ([i 0] [s acc]) (if (= i K) s (sum (+ i 1) (+ s (hashtable-ref h i 0))))))))))
(define (eq-nums)
  (let round ([r 0] [acc 0])
    (if (= r 3) acc
        (let ([h (make-eq-hashtable)])
          (do ([i 0 (+ i 1)]) ((= i K)) (eq-hashtable-set! h i (+ i r)))
          (round (+ r 1) (let sum ([i 0] [s acc]) (if (= i K) s (sum (+ i 1) (+ s (eq-hashtable-ref h i 0))))))))))
(define (vec-keep)
  (let round ([r 0] [acc 0])
    (if (= r 3) acc
        (let ([l (let loop ([i 0] [l '()]) (if (fx= i K) l (loop (fx+ i 1) (cons (vector i r 0 0) l))))])
          (round (+ r 1) (+ acc (length l)))))))
(define (cons-drop)                     ; returns the last list, so that none is folded away
  (let loop ([i 0] [last #f]) (if (fx= i (* 10 K)) last (loop (fx+ i 1) (list i 2 3 4)))))
(define (strfib* n)
  (if (< n 2) n (string->number (number->string (+ (strfib* (- n 1)) (strfib* (- n 2)))))))
(define (portfib n)
  (let ([p (open-output-string)])
    (let f ([n n])
      (if (< n 2) n
          (begin (display (+ (f (- n 1)) (f (- n 2))) p)
                 (string->number (get-output-string p)))))))
(define (handfib n)
  (if (< n 2) n (string->number (fixnum->decimal (+ (handfib (- n 1)) (handfib (- n 2)))))))
(define workloads
  `((hash-nums . ,hash-nums) (hash-nums-fx . ,hash-nums-fx) (eq-nums . ,eq-nums) (vec-keep . ,vec-keep) (cons-drop . ,cons-drop)
    (strfib* . ,(lambda () (strfib* 29))) (portfib . ,(lambda () (portfib 29))) (handfib . ,(lambda () (handfib 29)))))
(banner "gc.ss")
(let ([names (let strip ([as (command-line-arguments)])
               (cond [(null? as) '()]
                     [(member (car as) '("--runs" "--trip" "--radix" "--in-place" "--quiet-wait")) (strip (cddr as))]
                     [else (cons (string->symbol (car as)) (strip (cdr as)))]))])
  (for-each (lambda (name)
              (let ([e (assq name workloads)])
                (unless e (error 'gc.ss "unknown workload" name))
                (scale name (cdr e))))
            (if (null? names) (map car workloads) names)))
(summary)
