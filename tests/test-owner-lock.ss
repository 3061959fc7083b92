#!chezscheme
;;; Owner locks ((spindle private core owner-lock)): a lock whose owner
;;; dies goes to a waiter at once, with no polling; and the descriptor
;;; ports' locks, built on it.
(import (except (chezscheme) thread? sleep make-parameter parameterize)
        (spindle) (harness)
        (spindle private core owner-lock))

(define (now) (current-inexact-milliseconds))

(test "acquire, try-acquire, release; a second thread waits its turn"
  (let ([l (make-owner-lock)] [order '()])
    (owner-lock-acquire! l)
    (check "owner" (eq? (owner-lock-owner l) (current-thread)))
    (let ([t (thread (lambda ()
                       (check "busy" (not (owner-lock-try-acquire! l)))
                       (owner-lock-acquire! l)
                       (set! order (cons 'other order))
                       (owner-lock-release! l)))])
      (sleep 0.02)
      (set! order (cons 'first order))
      (owner-lock-release! l)
      (thread-wait t)
      (check-equal "order" '(other first) order)
      (check "free" (not (owner-lock-owner l)))
      (check "try" (owner-lock-try-acquire! l))
      (owner-lock-release! l))))

(test "a killed owner's lock goes to its waiters, one after another"
  (let* ([l (make-owner-lock)] [got '()]
         [owner (thread (lambda () (owner-lock-acquire! l) (sleep 1000)))])
    (sleep 0.02)
    (let ([waiters (map (lambda (i)
                          (thread (lambda ()
                                    (owner-lock-acquire! l)
                                    (set! got (cons i got))
                                    (owner-lock-release! l))))
                        '(1 2 3))])
      (sleep 0.02)
      (kill-thread owner)
      (for-each thread-wait waiters)
      (check-equal "all" '(1 2 3) (list-sort < got)))))

(test "handed on when each holder is killed in turn (the head waiter watches each new owner)"
  (let* ([l (make-owner-lock)] [n 6] [done (make-semaphore 0)]
         [holders (map (lambda (i)
                         (thread (lambda () (owner-lock-acquire! l) (semaphore-post done) (sleep 1000))))
                       (iota n))])
    (let loop ([k 0] [left holders])
      (when (< k n)
        (semaphore-wait done)
        (let ([h (find (lambda (t) (eq? t (owner-lock-owner l))) left)])
          (check "a holder owns it" h)
          (kill-thread h)
          (loop (+ k 1) (remq h left)))))
    (check "free at last" (owner-lock-try-acquire! l))))

(test "many threads on several workers: mutual exclusion, nothing lost"
  (let* ([l (make-owner-lock)] [inside 0] [count 0] [bad #f]
         [pool (make-parallel-thread-pool 2)]
         [ts (map (lambda (i)
                    (thread (lambda ()
                              (do ([k 0 (+ k 1)]) ((= k 500))
                                (owner-lock-acquire! l)
                                (set! inside (+ inside 1))
                                (unless (= inside 1) (set! bad #t))
                                (when (= 0 (mod k 50)) (yield))
                                (set! count (+ count 1))
                                (set! inside (- inside 1))
                                (owner-lock-release! l)))
                            #:pool (if (even? i) pool #f)))
                  (iota 6))])
    (for-each thread-wait ts)
    (parallel-thread-pool-close pool)
    (check "exclusive" (not bad))
    (check-equal "count" 3000 count)))

;; Fails on the lock fd ports had before (waiters looked every 50 ms):
;; 10 handovers took about 400 ms there.
(test "a reader killed while parked in a read hands the port to the next reader at once"
  (let-values ([(in out) (make-pipe)])
    (let loop ([k 0] [total 0.])
      (if (< k 10)
          (let* ([a (thread (lambda () (get-u8 in)))]
                 [_ (sleep 0.01)]
                 [b (thread (lambda () (get-u8 in)))])
            (sleep 0.01)
            (let ([t0 (now)])
              (kill-thread a)
              (put-u8 out k)
              (thread-wait b)
              (loop (+ k 1) (+ total (- (now) t0)))))
          (check "prompt" (< total 200.))))
    (close-port in) (close-port out)))

(done)
