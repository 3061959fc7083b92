#!chezscheme
;;; Deterministic simulation finds an ordering bug, prints the seed that
;;; shows it, replays that seed, and checks the fix over many seeds.
;;;
;;; The bug: clients of a server share one reply channel.  A client sends
;;; its request and then takes "its" reply, but when two requests are in
;;; flight a client may take the other's.  In a plain run the first client
;;; usually gets its answer before the second asks, so the bug hides.
;;;
;;; Run: bin/spindle run examples/simulation.ss
;;; Replay the seed it prints: SPINDLE_SEED=<seed> bin/spindle run examples/simulation.ss
(import (except (chezscheme) thread? sleep make-parameter parameterize)
        (spindle) (spindle simulation))

;; The server squares numbers: requests queue on an async channel as
;; (n . reply-to).
(define (start-server requests)
  (thread (lambda ()
            (let loop ()
              (let ([r (async-channel-get requests)])
                (sleep 0.01)                              ; some work
                (channel-put (cdr r) (* (car r) (car r)))
                (loop))))
          #:pool (make-parallel-thread-pool 2)))

;; Buggy: one reply channel for every client.
(define (buggy-program)
  (let* ([requests (make-async-channel)] [replies (make-channel)])
    (start-server requests)
    (let ([clients (map (lambda (n)
                          (thread (lambda ()
                                    (async-channel-put requests (cons n replies))
                                    (let ([answer (channel-get replies)])
                                      (unless (= answer (* n n))
                                        (error 'client (format "asked for ~a squared, got ~a" n answer)))))))
                        '(3 4))])
      (for-each thread-wait clients))))

;; Fixed: each request carries its own reply channel.
(define (fixed-program)
  (let ([requests (make-async-channel)])
    (start-server requests)
    (let ([clients (map (lambda (n)
                          (thread (lambda ()
                                    (let ([mine (make-channel)])
                                      (async-channel-put requests (cons n mine))
                                      (unless (= (channel-get mine) (* n n))
                                        (error 'client "wrong answer"))))))
                        '(3 4))])
      (for-each thread-wait clients))))

(define (show-failure c)
  (printf "~a\n\n" (condition-message c)))

(cond
  [(getenv "SPINDLE_SEED")
   ;; the replay of one seed: the same interleaving, the same failure
   (guard (c [(simulation-failure? c) (show-failure c)])
     (simulate buggy-program)
     (printf "seed ~a passes\n" (getenv "SPINDLE_SEED")))]
  [else
   (printf "Exploring seeds 1, 2, ... of the buggy program:\n")
   (let ([failure (guard (c [(simulation-failure? c) c])
                    (simulate-many buggy-program #:runs 1000 #:seed 1)
                    #f)])
     (if (not failure)
         (printf "no failing seed in 1000 runs\n")
         (let ([seed (simulation-failure-seed failure)])
           (show-failure failure)
           (printf "Replaying seed ~a:\n" seed)
           (guard (c [(simulation-failure? c)
                      (printf "the same failure at the same step: ~a\n"
                              (= (simulation-failure-steps c) (simulation-failure-steps failure)))])
             (simulate buggy-program #:seed seed))
           (printf "The fix over 1000 seeds: ~a runs passed\n"
                   (simulate-many fixed-program #:runs 1000 #:seed 1)))))])
