#!chezscheme
;;; Place channels over shared-memory rings (lib/spindle/private/places/shm-ring.sls):
;;; a channel gets a ring after a few messages (or one large one), so each
;;; test first makes its channel busy.  Order and exactly-once with several
;;; writer and reader threads, messages larger than a ring, descriptors
;;; between ring messages, peers killed mid-stream, and endpoints sent to
;;; other places after their rings were used.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness)
        (places rings)
        (only (spindle private places shm-ring) make-writer-ring ring-memfd ring-put! ring-capacity ring-release!)
        (only (spindle private os memory) map-shared unmap))

(test-limit 60)

(define created '())
(define (start name)
  (let ([p (dynamic-place '(places rings) name)])
    (set! created (cons p created))
    p))

(define (peer-ended? c)
  (and (error? c) (message-condition? c) (string=? (condition-message c) "peer place ended")))

;; The condition (thunk) raised, or #f.
(define (raised thunk)
  (call/cc (lambda (k) (with-exception-handler (lambda (c) (k c)) (lambda () (thunk) #f)))))

(define (get-n ep n) (let loop ([k 0] [acc '()]) (if (= k n) (reverse acc) (loop (+ k 1) (cons (place-channel-get ep) acc)))))
;; A get that fails the test, naming what, after secs.
(define (get/timeout ep secs what)
  (let ([m (sync/timeout secs ep)])
    (unless m (error 'get/timeout "nothing arrived in time" what))
    m))
(define (numbers ms) (map (lambda (m) (vector-ref m 1)) ms))
(define (range from to) (if (>= from to) '() (cons from (range (+ from 1) to))))
;; messages from..to-1 of sender 0
(define (put-range ep from to) (for-each (lambda (i) (place-channel-put ep (ring-message 0 i #f 0))) (range from to)))
;; 'stop to each place; each must end with 0
(define (stop-all . ps)
  (for-each (lambda (p) (place-channel-put p 'stop)) ps)
  (check-equal "codes" (map (lambda (p) 0) ps) (map place-wait ps)))

(test "a busy local channel: 4 writer threads (two on a parallel pool), 3 readers, 3 MB messages among small ones; each message once, each writer's in order"
  (let-values ([(a b) (place-channel)])
    (let* ([W 4] [N 300] [every 50] [size (* 3 1024 1024)] [R 3]
           [pool (make-parallel-thread-pool 2)]
           [readers (map (lambda (r)
                           (thread (lambda ()
                                     (let loop ([acc '()])
                                       (let ([m (place-channel-get b)])
                                         (if (eq? m 'end) (reverse acc) (loop (cons m acc))))))
                                   (if (= r 0) pool #f) 'results))
                         (iota R))]
           [writers (map (lambda (w)
                           (thread (lambda ()
                                     (do ([i 0 (+ i 1)]) ((= i N)) (place-channel-put a (ring-message w i every size))))
                                   (if (even? w) pool #f)))
                         (iota W))])
      (for-each thread-wait writers)
      (for-each (lambda (r) (place-channel-put a 'end)) readers)
      (let ([got (map thread-wait readers)])
        (check-equal "count" (* W N) (apply + (map length got)))
        (check "payloads" (for-all (lambda (ms) (for-all (lambda (m) (ring-message-ok? m every size)) ms)) got))
        ;; each reader sees each writer's messages in increasing order
        (for-each
          (lambda (ms)
            (let ([last (make-vector W -1)])
              (for-each (lambda (m)
                          (let ([w (vector-ref m 0)] [i (vector-ref m 1)])
                            (check (list 'order w i) (> i (vector-ref last w)))
                            (vector-set! last w i)))
                        ms)))
          got)
        (let ([seen (make-hashtable equal-hash equal?)])
          (for-each (lambda (ms) (for-each (lambda (m) (hashtable-update! seen (cons (vector-ref m 0) (vector-ref m 1)) add1 0)) ms)) got)
          (check-equal "distinct" (* W N) (hashtable-size seen)))))))

(test "a place streams 2000 messages with a 6 MB one (larger than a ring) every 200th, then 1 MB ones: all arrive whole, in order"
  (let ([p (start 'stream)])
    (place-channel-put p (vector 2000 200 (* 6 1024 1024)))
    (let ([ms (get-n p 2000)])
      (check-equal "numbers" (range 0 2000) (numbers ms))
      (check "payloads" (for-all (lambda (m) (ring-message-ok? m 200 (* 6 1024 1024))) ms))
      (check-equal "sent" 'sent (place-channel-get p)))
    (place-channel-put p (vector 100 1 (* 1024 1024)))
    (let ([ms (get-n p 100)])
      (check-equal "numbers 1 MB" (range 0 100) (numbers ms))
      (check "payloads 1 MB" (for-all (lambda (m) (ring-message-ok? m 1 (* 1024 1024))) ms))
      (check-equal "sent again" 'sent (place-channel-get p)))
    (stop-all p)))

(test "a place echoes ring messages with a shared vector and a place channel between them: order kept, descriptors work"
  (let ([p (start 'echo)] [sb (make-shared-bytes 16 0)])
    (let-values ([(x y) (place-channel)])
      (define (plain from to) (for-each (lambda (i) (place-channel-put p (ring-message 0 i #f 0))) (range from to)))
      (plain 0 30)
      (place-channel-put p (list 'shared sb))
      (plain 30 60)
      (place-channel-put p (list 'channel y))
      (plain 60 90)
      (let* ([first (get-n p 30)] [shared (place-channel-get p)] [second (get-n p 30)]
             [channel (place-channel-get p)] [third (get-n p 30)])
        (check-equal "before" (range 0 30) (numbers first))
        (check-equal "between" (range 30 60) (numbers second))
        (check-equal "after" (range 60 90) (numbers third))
        (check "shared vector back" (and (pair? shared) (eq? (car shared) 'shared) (shared-bytes? (cadr shared))))
        (shared-bytes-set! (cadr shared) 3 77)
        (check-equal "same memory" 77 (shared-bytes-ref sb 3))
        (check "channel back" (and (pair? channel) (place-channel? (cadr channel))))
        (place-channel-put x 'through)
        (check-equal "channel works" 'through (place-channel-get (cadr channel)))))
    (stop-all p)))

(test "a place killed while it streams 10 MB messages (larger than its ring): the parent's get raises, nothing hangs"
  (let ([p (start 'flood)])
    (place-channel-put p (vector (* 10 1024 1024)))
    (check "first" (bytevector? (place-channel-get p)))
    (check "second" (bytevector? (place-channel-get p)))
    (place-kill p)
    (let ([t (thread (lambda () (raised (lambda () (let loop () (place-channel-get p) (loop))))) #f 'results)])
      (check "ended in time" (sync/timeout 20 (thread-dead-evt t)))
      (check "peer ended" (peer-ended? (thread-wait t))))))

(define live-child #f)
(test "a ring whose lock a dead process holds is broken at once; a live holder is waited for"
  ;; the control block: lock at 0, the writer's pid at 48, the reader's at 56
  (let* ([r (make-writer-ring 'test 4096)]
         [a (map-shared 'test (ring-memfd r) (+ 128 (ring-capacity r)))]
         [dead-pid (let-values ([(p out in err) (subprocess #f #f #f "/bin/true")])
                     (subprocess-wait p) (close-port out) (close-port in) (close-port err)
                     (subprocess-pid p))]
         [fill (lambda (addr) (foreign-set! 'unsigned-8 addr 0 1))]
         [put-ms (lambda () (let ([t0 (current-inexact-monotonic-milliseconds)])
                              (let ([v (ring-put! r 1 1 fill)])
                                (cons v (- (current-inexact-monotonic-milliseconds) t0)))))])
    (foreign-set! 'iptr a 0 1)
    (foreign-set! 'iptr a 56 dead-pid)
    (let ([r1 (put-ms)])
      (check-equal "dead holder: closed" 'closed (car r1))
      (check (format "dead holder: at once (~a ms)" (cdr r1)) (< (cdr r1) 1000)))
    ;; a live holder (this process) that lets go after 50 ms
    (foreign-set! 'iptr a 56 (let-values ([(p out in err) (subprocess #f #f #f "/bin/sleep" "5")])
                               (thread (lambda () (sleep 0.05) (foreign-set! 'iptr a 0 0)) 'own)
                               (set! live-child p)
                               (subprocess-pid p)))
    (let ([r2 (put-ms)])
      (check-equal "live holder: waited for" 'ok (car r2)))
    (subprocess-kill live-child #t)
    (unmap a (+ 128 (ring-capacity r)))
    (ring-release! r)))

(test "killing places that stream small messages never stalls the parent (a dead ring holder)"
  ;; the place may die holding its ring's lock; a heartbeat thread beside
  ;; an allocating thread must never see a gap of a second
  (let* ([pool (make-parallel-thread-pool 2)] [stop (box #f)] [worst (box 0.)]
         [beat (thread (lambda ()
                         (let loop ([last (current-inexact-monotonic-milliseconds)])
                           (unless (unbox stop)
                             (sleep 0.002)
                             (let ([now (current-inexact-monotonic-milliseconds)])
                               (when (> (- now last) (unbox worst)) (set-box! worst (- now last)))
                               (loop now)))))
                       pool)]
         [alloc (thread (lambda () (let loop ([l '()]) (unless (unbox stop) (loop (if (> (length l) 1000) '() (cons (make-vector 10) l))))))
                        'own)])
    (do ([k 0 (+ k 1)]) ((= k 40))
      (let* ([p (start 'counter)]
             [drain (thread (lambda () (guard (e [#t 'ended]) (let loop () (place-channel-get p) (loop)))) pool)])
        (sleep (/ (+ 5 (random 20)) 1000.))
        (place-kill p)
        (check (format "kill ~a: drainer ended" k) (sync/timeout 10 drain))))
    (set-box! stop #t)
    (thread-wait beat) (thread-wait alloc)
    (parallel-thread-pool-close pool)
    (printf "  longest heartbeat gap ~a ms\n" (round (unbox worst)))
    (check (format "longest heartbeat gap ~a ms" (round (unbox worst))) (< (unbox worst) 1000.))))

(test "a getter parked on a ring wakes for a later message, and raises when the writing place is killed"
  (let ([p (start 'quiet-sender)])
    (check-equal "first 20" (range 0 20) (numbers (get-n p 20)))
    (let ([t (thread (lambda () (place-channel-get p)) #f 'results)])
      (sleep 0.1)                        ; t has parked by now
      (place-channel-put p 'again)
      (check "woken" (sync/timeout 10 (thread-dead-evt t)))
      (check-equal "message 20" 20 (vector-ref (thread-wait t) 1)))
    (check-equal "evt" 21 (begin (place-channel-put p 'again) (vector-ref (sync/timeout 10 p) 1)))
    (let ([t (thread (lambda () (raised (lambda () (place-channel-get p)))) #f 'results)])
      (sleep 0.1)
      (place-kill p)
      (check "ended in time" (sync/timeout 10 (thread-dead-evt t)))
      (check "peer ended" (peer-ended? (thread-wait t))))))

(test "an endpoint read here through a ring, then sent to a place: the place gets the rest, in order, and what comes after"
  (let ([c (start 'collector)])
    (let-values ([(a b) (place-channel)])
      (put-range a 0 100)
      (check-equal "read here" (range 0 30)
                   (let loop ([i 0] [acc '()])
                     (if (= i 30) (reverse acc) (loop (+ i 1) (cons (vector-ref (get/timeout b 5 (list 'here i)) 1) acc)))))
      (place-channel-put c (list 'collect b 140))
      (put-range a 100 170)
      (check-equal "collected" (range 30 170) (get/timeout c 10 'collected))
      ;; the writer goes on over the socket, or a new ring
      (place-channel-put c (list 'collect b 50))
      (put-range a 170 220)
      (check-equal "collected again" (range 170 220) (get/timeout c 10 'collected-again)))
    (stop-all c)))

(test "an endpoint that wrote through a ring, sent to a place that writes on: the reader gets both, the parent's first"
  (let ([w (start 'write-on)])
    (let-values ([(a b) (place-channel)])
      (put-range a 0 50)
      (place-channel-put w (list 'write a 0 50 100))
      (check-equal "all, in order" (range 0 100) (numbers (get-n b 100)))
      (check-equal "written" 'written (place-channel-get w)))
    (stop-all w)))

(test "an endpoint sent to two places that both write: each message once, each sender's in order"
  (let ([w1 (start 'write-on)] [w2 (start 'write-on)])
    (let-values ([(a b) (place-channel)])
      (put-range a 0 20)
      (place-channel-put w1 (list 'write a 1 0 300))
      (place-channel-put w2 (list 'write a 2 0 300))
      (let* ([ms (get-n b 620)] [of (lambda (s) (numbers (filter (lambda (m) (= s (vector-ref m 0))) ms)))])
        (check-equal "parent's" (range 0 20) (of 0))
        (check-equal "first place's" (range 0 300) (of 1))
        (check-equal "second place's" (range 0 300) (of 2)))
      (check-equal "written" '(written written) (list (place-channel-get w1) (place-channel-get w2))))
    (stop-all w1 w2)))

(test "puts into a full ring nobody reads return; the reader then gets everything in order"
  (let-values ([(a b) (place-channel)])
    (let ([bv (make-bytevector (* 1024 1024) 5)])
      (for-each (lambda (i) (place-channel-put a (vector 0 i bv))) (range 0 40))
      (let ([ms (get-n b 40)])
        (check-equal "numbers" (range 0 40) (numbers ms))
        (check "payloads" (for-all (lambda (m) (equal? bv (vector-ref m 2))) ms))))))

(for-each place-kill created)
(done)
