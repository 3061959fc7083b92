;; remote-poke.ss -- plain Chez (no spindle): can one OS thread make another
;; run its keyboard-interrupt-handler by writing the other's thread-context
;; fields keyboard-interrupt-pending and something-pending?  That is a way
;; to reach a thread that runs with no timer armed (section 7 of
;; PARALLEL-ALLOCATION.md): a child loops with (set-timer 0); the main
;; thread pokes it 1000 times, waiting each time for the handler to run.
;;   scheme -q bench/threads-analysis/remote-poke.ss
;;   /root/.cache/spindle/chez-10.0.0/bin/scheme -q bench/threads-analysis/remote-poke.ss
(define hits 0)
(define where #f)
(define stop #f)
(define m (make-mutex))
(define c (make-condition))
(define child-ready #f)
(define child-thread #f)
(fork-thread
  (lambda ()
    (keyboard-interrupt-handler (lambda () (set! hits (+ hits 1)) (set! where (get-thread-id))))
    (with-mutex m (set! child-ready #t) (condition-broadcast c))
    (set-timer 0)
    (let loop ([i 0]) (unless stop (loop (+ i 1))))))
(with-mutex m (let w () (unless child-ready (condition-wait c m) (w))))
(define th (let ([l (#%$thread-list)]) (find (lambda (t) (not (eq? (#%$thread-tc t) (#%$tc)))) l)))
(define tc (#%$thread-tc th))
(printf "main id ~a, other tc ~a\n" (get-thread-id) tc)
(define (poke!) (#%$tc-field 'keyboard-interrupt-pending tc #t) (#%$tc-field 'something-pending tc #t))
(define (wait-hits n) (let loop ([k 0]) (cond [(>= hits n) k] [(> k 10000000) #f] [else (loop (+ k 1))])))
(let ([t0 (real-time)])
  (do ([i 1 (+ i 1)]) ((> i 1000))
    (poke!)
    (unless (wait-hits i) (printf "lost at ~a\n" i)))
  (printf "1000 pokes: ~a hits, in ~a ms, handler ran in thread ~a\n" hits (- (real-time) t0) where))
(set! stop #t)
(printf "main's keyboard-interrupt-handler untouched: ~a\n" (procedure? (keyboard-interrupt-handler)))
