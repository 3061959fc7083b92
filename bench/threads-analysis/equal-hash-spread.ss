;; equal-hash-spread.ss -- how well does equal-hash spread consecutive fixnums
;; over the low bits a hashtable uses?  Prints equal-hash of a few fixnums,
;; the time of 300,000 equal-hash calls and of 300,000 hashtable-ref on a
;; (make-hashtable equal-hash equal?) holding 0..299,999, and how many
;; distinct values the low 19 bits of equal-hash take over those keys (a
;; 300,000-entry table has 2^19 buckets).  Single thread.
;;   scheme --script bench/threads-analysis/equal-hash-spread.ss
;;   /root/.cache/spindle/chez-10.0.0/bin/scheme --script bench/threads-analysis/equal-hash-spread.ss
(printf "~s\n" (map equal-hash '(0 1 2 3 4 5 1000 1001)))
(define h (make-hashtable equal-hash equal?))
(do ([i 0 (+ i 1)]) ((= i 300000)) (hashtable-set! h i i))
(define (t thunk) (let ([t0 (current-time 'time-process)]) (thunk) (let ([d (time-difference (current-time 'time-process) t0)]) (+ (* 1000. (time-second d)) (/ (time-nanosecond d) 1e6)))))
(printf "equal-hash x 300000: ~a ms\n" (t (lambda () (do ([i 0 (+ i 1)]) ((= i 300000)) (equal-hash i)))))
(printf "ref x 300000: ~a ms\n" (t (lambda () (do ([i 0 (+ i 1)]) ((= i 300000)) (hashtable-ref h i 0)))))
(define (distinct-low-bits f bits)   ; distinct values of the low BITS bits of (f i), i < 300,000
  (let ([seen (make-eqv-hashtable)] [m (- (expt 2 bits) 1)])
    (do ([i 0 (+ i 1)]) ((= i 300000)) (hashtable-set! seen (fxand (f i) m) #t))
    (hashtable-size seen)))
(printf "distinct low 19 bits of equal-hash over 0..299999: ~a of ~a\n" (distinct-low-bits equal-hash 19) (expt 2 19))
