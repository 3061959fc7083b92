#!chezscheme
;;; Custodians (issue 10, part 10): threads killed, ports and listeners
;;; closed, places killed, nested custodians, managed lists, a server that
;;; gives each connection its own custodian, bad arguments.  The test of
;;; the custodian a thread and its children inherit runs under
;;; simulate-many (a sleep lines the threads up there); the others are
;;; about real ports, sockets, places and parallel pools, or line nothing
;;; up, and run for real.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (spindle simulation)
        (harness))

(test-limit 30)

;; Descriptors open now.  settled-fd-count first runs a collection, so that
;; ports an earlier test dropped (closed by a guardian when collected) are
;; closed before counting instead of during the count's test.
(define (open-fd-count) (length (directory-list "/proc/self/fd")))
(define (settled-fd-count) (collect-rendezvous) (open-fd-count))

(define (listener-port l)
  (let-values ([(lh lp ph pp) (tcp-addresses l #t)]) lp))

;; The poller's own descriptors (epoll, eventfd) open with the first socket.
(tcp-close (tcp-listen 0 4 #t "127.0.0.1"))

(define (shut-down-error? c)
  (and (message-condition? c) (string=? (condition-message c) "the custodian has been shut down")))

(test "threads made under a custodian die when it shuts down"
  (let* ([c (make-custodian)]
         [ts (parameterize ([current-custodian c])
               (list (thread (lambda () (sleep 100)))
                     (thread (lambda () (sync never-evt)))
                     (thread (lambda () (let loop () (loop))))
                     (thread (lambda () (sleep 100)) #:pool (make-parallel-thread-pool 1))))]
         [outside (thread (lambda () (sleep 100)))])
    (check-equal "managed" ts (custodian-managed-list c (current-custodian)))
    (custodian-shutdown-all c)
    (check "all dead" (for-all thread-dead? ts))
    (check "a thread of another custodian lives" (not (thread-dead? outside)))
    (check "shut down" (custodian-shut-down? c))
    (check-equal "nothing managed" '() (custodian-managed-list c (current-custodian)))
    (kill-thread outside)))

(test "a shutdown kills its threads before it closes their ports"
  ;; a thread blocked on a port of the custodian must die, not wake with
  ;; "port is closed" and run its handler; also when the port was made
  ;; first, in a sub-custodian, and for a parallel thread
  (for-each
    (lambda (pool sub?)
      (let* ([c (make-custodian)] [ran (box #f)] [started (make-semaphore 0)])
        (parameterize ([current-custodian c])
          (let-values ([(in out) (parameterize ([current-custodian (if sub? (make-custodian) c)]) (make-pipe))])
            (thread (lambda ()
                      (guard (e [#t (set-box! ran #t)])
                        (semaphore-post started)
                        (get-bytevector-some in)))
                    #:pool pool)))
        (check "started" (sync/timeout 2 started))
        (sleep 0.05)
        (custodian-shutdown-all c)
        (sleep 0.05)
        (check (format "pool ~a, port in a sub-custodian ~a: no handler ran" pool sub?) (not (unbox ran)))))
    (list #f #f 'own 'own)
    (list #f #t #f #t)))

(test "a thread inherits its creator's custodian; its children belong to it; under simulation"
  (simulate-many
    (lambda ()
      (let* ([c (make-custodian)] [child (box #f)]
             [t (parameterize ([current-custodian c])
                  (thread (lambda ()
                            (set-box! child (thread (lambda () (sleep 100))))
                            (check "current" (eq? (current-custodian) c))
                            (sleep 100))))])
        (sleep 0.001)                   ; t and its child sleep
        (check "the child was made" (thread? (unbox child)))
        (check-equal "managed" (list t (unbox child)) (custodian-managed-list c (current-custodian)))
        (custodian-shutdown-all c)
        (check "parent thread dead" (thread-dead? t))
        (check "grandchild dead" (thread-dead? (unbox child)))))
    #:runs 200 #:seed 1))

(test "a shut-down custodian refuses new objects"
  (let ([c (make-custodian)])
    (custodian-shutdown-all c)
    (custodian-shutdown-all c)            ; twice is fine
    (check-raises "thread" shut-down-error?
      (lambda () (parameterize ([current-custodian c]) (thread void))))
    (check-raises "make-custodian" shut-down-error? (lambda () (make-custodian c)))
    (let ([before (open-fd-count)])
      (check-raises "tcp-listen" shut-down-error?
        (lambda () (parameterize ([current-custodian c]) (tcp-listen 0 4 #t "127.0.0.1"))))
      (check-equal "the refused listener's descriptor is closed" before (open-fd-count)))))

(test "nested custodians: shutting down the parent shuts down the children"
  (let* ([parent (make-custodian)]
         [child (make-custodian parent)]
         [grandchild (make-custodian child)]
         [t1 (parameterize ([current-custodian child]) (thread (lambda () (sleep 100))))]
         [t2 (parameterize ([current-custodian grandchild]) (thread (lambda () (sleep 100))))])
    (check-equal "parent manages the child" (list child) (custodian-managed-list parent (current-custodian)))
    (check-equal "child manages its thread and the grandchild" (list grandchild t1)
                 (custodian-managed-list child parent))
    (custodian-shutdown-all child)
    (check "t1 dead" (thread-dead? t1))
    (check "t2 dead" (thread-dead? t2))
    (check "grandchild shut down" (custodian-shut-down? grandchild))
    (check "parent still open" (not (custodian-shut-down? parent)))
    (check-equal "parent no longer lists the child" '() (custodian-managed-list parent (current-custodian)))
    (let ([t3 (parameterize ([current-custodian parent]) (thread (lambda () (sleep 100))))])
      (custodian-shutdown-all parent)
      (check "t3 dead" (thread-dead? t3)))))

(test "shutting down the current thread's own custodian kills it last"
  (let* ([c (make-custodian)] [done (box '())]
         [other (parameterize ([current-custodian c]) (thread (lambda () (sleep 100))))]
         [t (parameterize ([current-custodian c])
              (thread (lambda ()
                        (custodian-shutdown-all c)
                        (set-box! done 'survived))))])
    (thread-wait t)
    (check "the other was killed" (thread-dead? other))
    (check-equal "the shutter did not survive" '() (unbox done))))

(test "ports and listeners are closed; a blocked reader wakes with an error"
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")]
         [port (listener-port l)]
         [c (make-custodian)]
         [result (box #f)])
    (let-values ([(cin cout) (parameterize ([current-custodian c]) (tcp-connect "127.0.0.1" port))])
      (let-values ([(sin sout) (tcp-accept l)])
        (let ([reader (thread (lambda ()
                                (set-box! result
                                  (guard (e [(i/o-error? e) 'error] [#t (list 'other e)])
                                    (get-bytevector-some cin)))))]
              [l2 (parameterize ([current-custodian c]) (tcp-listen 0 4 #t "127.0.0.1"))])
          (sleep 0.05)
          (check "both ports and the listener are managed"
                 (let ([m (custodian-managed-list c (current-custodian))])
                   (and (memq cin m) (memq cout m) (memq l2 m) #t)))
          (custodian-shutdown-all c)
          (thread-wait reader)
          (check-equal "the reader woke with an error" 'error (unbox result))
          (check "ports closed" (and (port-closed? cin) (port-closed? cout)))
          (check-raises "listener closed" error? (lambda () (tcp-accept l2)))
          (check-equal "the peer sees the end" (eof-object) (get-bytevector-some sin))
          (close-port sin) (close-port sout) (tcp-close l))))))

(test "server: a custodian per connection frees its descriptors"
  (let* ([l (tcp-listen 0 64 #t "127.0.0.1")]
         [port (listener-port l)]
         [conns (make-async-channel)]
         [server (thread (lambda ()
                           (let loop ()
                             (let ([c (make-custodian)])
                               (parameterize ([current-custodian c])
                                 (let-values ([(in out) (tcp-accept l)])
                                   ;; the connection's handler and a helper it starts
                                   (thread (lambda ()
                                             (thread (lambda () (sleep 100)))
                                             (let echo ()
                                               (let ([bv (get-bytevector-some in)])
                                                 (unless (eof-object? bv)
                                                   (put-bytevector out bv) (flush-output-port out) (echo))))))
                                   (async-channel-put conns c))))
                             (loop))))]
         [before (settled-fd-count)]
         [clients (map (lambda (i)
                         (let-values ([(in out) (tcp-connect "127.0.0.1" port)])
                           (put-bytevector out (bytevector i)) (flush-output-port out)
                           (check-equal "echo" (bytevector i) (get-bytevector-n in 1))
                           (cons in out)))
                       (iota 20))]
         [custs (map (lambda (i) (async-channel-get conns)) (iota 20))])
    (check "descriptors in use" (>= (open-fd-count) (+ before 40)))
    (check "each custodian manages ports and threads"
           (for-all (lambda (c) (>= (length (custodian-managed-list c (current-custodian))) 3)) custs))
    (for-each custodian-shutdown-all custs)
    (for-each (lambda (p)
                (check-equal "client sees the end" (eof-object) (get-bytevector-some (car p)))
                (close-port (car p)) (close-port (cdr p)))
              clients)
    (check-equal "descriptors back to where they were" before (open-fd-count))
    (kill-thread server)
    (tcp-close l)))

(test "places made under a custodian are killed"
  (let* ([c (make-custodian)]
         [p (parameterize ([current-custodian c]) (dynamic-place '(places worker) 'start))])
    (place-channel-put p 'hello)
    (check-equal "the place runs" '(worker . hello) (place-channel-get p))
    (check "managed" (memq p (custodian-managed-list c (current-custodian))))
    (custodian-shutdown-all c)
    (check "dead" (sync/timeout 10 (place-dead-evt p)))))

(test "bad arguments"
  (check-raises "make-custodian" (assertion-from? 'make-custodian) (lambda () (make-custodian 'x)))
  (check-raises "custodian-shutdown-all" (assertion-from? 'custodian-shutdown-all) (lambda () (custodian-shutdown-all 1)))
  (check-raises "current-custodian" (assertion-from? 'current-custodian) (lambda () (current-custodian 'x)))
  (check-raises "managed-list type" (assertion-from? 'custodian-managed-list)
    (lambda () (custodian-managed-list 'x (current-custodian))))
  (check-raises "managed-list of a non-subordinate" (assertion-from? 'custodian-managed-list)
    (lambda () (custodian-managed-list (current-custodian) (make-custodian))))
  (check "custodian?" (and (custodian? (current-custodian)) (not (custodian? 1))))
  (check-equal "prints" "#<custodian>" (with-output-to-string (lambda () (write (make-custodian))))))

(done)
