;; armed-timer.ss -- plain Chez (no spindle): what an armed timer
;; (set-timer, as every preemptive green-thread system on Chez keeps it)
;; costs code that disables and enables interrupts.  With a timer armed,
;; Chez keeps the thread's something-pending flag set, so every
;; enable-interrupts and every end of a critical section (Chez's global
;; mutex sections included: two per number->string) runs the whole event
;; check instead of returning at once.  Each row: CPU ms of a loop with no
;; timer, with a timer armed at 10^4 ticks and at 10^6 ticks (the cost does
;; not depend on the interval), median of 9 alternated runs, one thread.
;;   scheme --script bench/threads-analysis/armed-timer.ss
;;   /root/.cache/spindle/chez-10.0.0/bin/scheme --script bench/threads-analysis/armed-timer.ss
(define (strfib* n) (if (< n 2) n (string->number (number->string (+ (strfib* (- n 1)) (strfib* (- n 2)))))))
(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(define (cpu-ms thunk)
  (let ([t0 (current-time 'time-thread)])
    (thunk)
    (let ([d (time-difference (current-time 'time-thread) t0)])
      (+ (* 1e3 (time-second d)) (/ (time-nanosecond d) 1e6)))))
(define (median l) (list-ref (list-sort < l) (quotient (length l) 2)))
(define (armed ticks thunk)
  (if (= ticks 0)
      (begin (set-timer 0) (cpu-ms thunk))
      (begin
        (timer-interrupt-handler (lambda () (set-timer ticks)))
        (set-timer ticks)
        (let ([ms (cpu-ms thunk)]) (set-timer 0) ms))))
(define (row name calls thunk)
  (let loop ([r 0] [a '()] [b '()] [c '()])
    (if (= r 9)
        (let ([a (median a)] [b (median b)] [c (median c)])
          (printf "~a: ~,1f / ~,1f / ~,1f ms (armed: ~a~,1f%~a)\n" name a b c
                  (if (>= (min b c) a) "+" "") (* 100 (- (/ (min b c) a) 1))
                  (if (> calls 1) (format ", ~,2f ns a call" (/ (* 1e6 (- (min b c) a)) calls)) "")))
        (let* ([x (armed 0 thunk)] [y (armed 10000 thunk)] [z (armed 1000000 thunk)])
          (loop (+ r 1) (cons x a) (cons y b) (cons z c))))))
(define k 3000000)
(printf "# ~a, one thread; columns: no timer / armed 10^4 / armed 10^6\n" (scheme-version))
(row "disable-interrupts + enable-interrupts" k (lambda () (do ([i 0 (+ i 1)]) ((= i k)) (disable-interrupts) (enable-interrupts))))
(row "with-interrupts-disabled (inline critical section)" k (lambda () (do ([i 0 (+ i 1)]) ((= i k)) (with-interrupts-disabled i))))
(row "number->string of a fixnum" 1000000 (lambda () (do ([i 0 (+ i 1)]) ((= i 1000000)) (number->string i))))
(row "string->number" 1000000 (lambda () (do ([i 0 (+ i 1)]) ((= i 1000000)) (string->number "12345"))))
(row "make-string 5" k (lambda () (do ([i 0 (+ i 1)]) ((= i k)) (make-string 5))))
(row "(fib 32)" 1 (lambda () (fib 32)))
(row "(strfib* 27)" 1 (lambda () (strfib* 27)))
