;; equal-hash-spread.ss -- how well does equal-hash spread consecutive fixnums
;; over the low bits a hashtable uses?  Prints equal-hash of a few fixnums,
;; the time of 300,000 equal-hash calls and of 300,000 hashtable-ref on a
;; (make-hashtable equal-hash equal?) holding 0..299,999, and how many of
;; 300,000 slots the low 19 bits of equal-hash reach.  Single thread.
;;   scheme --script bench/threads-analysis/equal-hash-spread.ss
;;   /root/.cache/spindle/chez-10.0.0/bin/scheme --script bench/threads-analysis/equal-hash-spread.ss
(printf "~s\n" (map equal-hash '(0 1 2 3 4 5 1000 1001)))
(define h (make-hashtable equal-hash equal?))
(do ([i 0 (+ i 1)]) ((= i 300000)) (hashtable-set! h i i))
(define (t thunk) (let ([t0 (current-time 'time-process)]) (thunk) (let ([d (time-difference (current-time 'time-process) t0)]) (+ (* 1000. (time-second d)) (/ (time-nanosecond d) 1e6)))))
(printf "equal-hash x 300000: ~a ms\n" (t (lambda () (do ([i 0 (+ i 1)]) ((= i 300000)) (equal-hash i)))))
(printf "ref x 300000: ~a ms\n" (t (lambda () (do ([i 0 (+ i 1)]) ((= i 300000)) (hashtable-ref h i 0)))))
(define v (make-vector 300000 0))
(do ([i 0 (+ i 1)]) ((= i 300000)) (let ([k (fxand (equal-hash i) (- (expt 2 19) 1))]) (vector-set! v (fxmod k 300000) 1)))
(printf "distinct low-19-bit buckets ~a\n" (let loop ([i 0] [n 0]) (if (= i 300000) n (loop (+ i 1) (+ n (vector-ref v i))))))
