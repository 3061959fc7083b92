#!chezscheme
;;; The scheduler's rules (issue 22 items 2, 3, 4, 5, 11, 12; issue 17 item
;;; 5): the poll role passes on when its holder's worker exits; spin lock
;;; holders never stall a collection; exit from any thread ends the process;
;;; Ctrl-C breaks the main thread; no park inside a disabled-interrupts
;;; region; a time slice is bounded in time; an 'own thread's pool starts
;;; siblings.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness)
        (only (spindle private host collector) collector-helper-threads))

(test-limit 30)

(define (now-ms) (current-inexact-monotonic-milliseconds))
(define (read-all-string in) (let ([b (get-bytevector-all in)]) (if (eof-object? b) "" (utf8->string b))))
;; A pipe port that gets "hi\n" after secs seconds.
(define (delayed-pipe secs)
  (let-values ([(p out in err) (subprocess #f #f #f "/bin/sh" "-c" (format "sleep ~a; echo hi" secs))])
    (close-port in) (close-port err)
    out))

;; ---------------------------------------------------------------- poll role
;; First in the file: the worker of the 'own thread must be the one waiting
;; in epoll when the main thread parks.
(test "the poll role passes on when its holder's worker exits (issue 22 item 2)"
  (let* ([a (delayed-pipe 0.3)] [b (delayed-pipe 1)]
         [t (thread (lambda () (get-bytevector-some a)) #:pool 'own #:keep 'results)])
    ;; main stays busy, so the 'own worker takes the poll role when its
    ;; thread parks on a
    (let ([t0 (now-ms)]) (let spin () (when (< (- (now-ms) t0) 150) (spin))))
    (let* ([t0 (now-ms)]
           ;; the timeout bounds the test: without a poller the main worker
           ;; sleeps until it, then finds b ready
           [got (sync/timeout 5 (wrap-evt b (lambda (_) (get-bytevector-some b))))]
           [ms (- (now-ms) t0)])
      (check-equal "main read its pipe" (string->utf8 "hi\n") got)
      (check-equal "the 'own thread read its pipe" (string->utf8 "hi\n") (thread-wait t))
      (printf "  main woke after ~a ms (data at ~~850 ms)\n" (round ms))
      (check "main woke when its data came, not at the timeout" (< ms 3000)))))

;; ---------------------------------------------------------------- 'own pools
(test "an 'own thread's current-thread-pool starts siblings; it closes after (issue 17 item 5)"
  (let* ([p #f]
         [t (thread (lambda ()
                      (set! p (current-thread-pool))
                      (let ([sib (thread (lambda () (get-thread-id)) #:pool (current-thread-pool) #:keep 'results)])
                        (list (get-thread-id) (thread-wait sib))))
                    #:pool 'own #:keep 'results)]
         [ids (thread-wait t)])
    (check "a parallel thread pool" (parallel-thread-pool? p))
    (check-equal "the sibling ran on the same OS thread" (car ids) (cadr ids))
    ;; the pool closes when its last thread has ended
    (let loop ([k 0])
      (unless (or (= k 100)
                  (guard (c [#t #t]) (thread-wait (thread void #:pool p)) #f))
        (sleep 0.01)
        (loop (+ k 1))))
    (check-raises "closed once its threads ended" (assertion-from? 'thread)
      (lambda () (thread void #:pool p)))))

;; ---------------------------------------------------------------- disabled interrupts
(test "a park inside with-interrupts-disabled raises, naming the operation (issue 22 item 11)"
  (check-raises "sleep" (both (assertion-from? 'sync) (lambda (c) (string-contains? (condition-message c) "interrupts are disabled")))
    (lambda () (with-interrupts-disabled (sleep 0.05))))
  (check-raises "sync on two evts" (assertion-from? 'sync)
    (lambda () (with-interrupts-disabled (sync (make-channel) (make-semaphore 0)))))
  (check-raises "sync/timeout" (assertion-from? 'sync/timeout)
    (lambda () (with-interrupts-disabled (sync/timeout 1 (make-channel)))))
  (let ([s (make-semaphore 0)])
    (check-raises "semaphore-wait" (assertion-from? 'sync)
      (lambda () (disable-interrupts) (dynamic-wind void (lambda () (semaphore-wait s)) enable-interrupts)))
    ;; the refused wait left nothing behind: the next post goes to a real waiter
    (let ([t (thread (lambda () (semaphore-wait s) 'took) #:keep 'results)])
      (sleep 0.02)
      (semaphore-post s)
      (check-equal "a later waiter takes the post" 'took (thread-wait t))))
  ;; what does not block is allowed
  (let ([ch (make-async-channel)])
    (async-channel-put ch 1)
    (check-equal "a ready get" 1 (with-interrupts-disabled (async-channel-get ch)))
    (check-equal "a poll" #f (with-interrupts-disabled (sync/timeout 0 (make-channel))))
    (check "yield does nothing there" (begin (with-interrupts-disabled (yield)) #t)))
  ;; and the worker still preempts: a busy neighbour does not hold up a sleep
  (let* ([stop #f] [busy (thread (lambda () (let loop () (unless stop (loop)))))]
         [ms (let ([t0 (now-ms)]) (sleep 0.05) (- (now-ms) t0))])
    (set! stop #t)
    (thread-wait busy)
    (printf "  a 50 ms sleep beside a busy thread took ~a ms\n" (round ms))
    (check "preemption still works" (< ms 1000))))

;; ---------------------------------------------------------------- time slices
(define (sleep-lateness n)
  (let loop ([i 0] [acc '()])
    (if (= i n)
        (list->vector (sort < acc))
        (let ([t0 (now-ms)])
          (sleep 0.01)
          (loop (+ i 1) (cons (- (now-ms) t0 10.) acc))))))

(define (overloaded?)
  (let ([load (guard (c [#t 0]) (call-with-input-file "/proc/loadavg" read))])
    (> load (* 1.5 (processor-count)))))

(define (p95 v) (vector-ref v (exact (floor (* 0.95 (- (vector-length v) 1))))))

(test "a neighbour doing system calls leaves 10 ms sleeps on time (issue 22 item 12)"
  ;; a Chez file port without a buffer: every read is a system call, where
  ;; Chez's ticks stand still.  The bound is over a control run without the
  ;; neighbour, so a machine loaded by other processes does not fail it.
  (let* ([control (sleep-lateness 30)]
         [in (open-file-input-port "/dev/zero" (file-options) (buffer-mode none))]
         [buf (make-bytevector 65536)]
         [stop #f]
         [reads 0]
         [reader (thread (lambda ()
                           (let loop ()
                             (unless stop
                               (get-bytevector-n! in buf 0 65536)
                               (set! reads (+ reads 1))
                               (loop)))))]
         [v (sleep-lateness 60)])
    (set! stop #t)
    (thread-wait reader)
    (close-port in)
    (printf "  ~a reads of 64 KB; sleeps late by p50 ~,1f ms, p95 ~,1f ms, max ~,1f ms (alone: p95 ~,1f ms)\n"
            reads (vector-ref v 30) (p95 v) (vector-ref v 59) (p95 control))
    (check "the reader ran" (> reads 1000))
    ;; before time-bounded slices: p95 93-150 ms on an idle machine.  On a
    ;; machine that other processes overload (1-minute load over 1.5 a
    ;; core) real time runs several times faster than this process, and
    ;; only starvation is checked.
    (let ([bound (if (overloaded?) 400. (+ 25. (p95 control)))])
      (check (format "p95 lateness under ~a ms" bound) (< (p95 v) bound)))))

;; ---------------------------------------------------------------- collector and spin locks
(test "six 'own threads making custodians, threads and listeners keep going (issue 22 item 3)"
  (let* ([count (box 0)]
         [stop #f]
         [inc! (lambda () (let loop () (let ([v (unbox count)]) (unless (box-cas! count v (+ v 1)) (loop)))))]
         [work (lambda ()
                 (let loop ()
                   (unless stop
                     (let ([c (make-custodian)])
                       (parameterize ([current-custodian c])
                         (thread (lambda () (sync never-evt)))
                         (thread (lambda () (sync never-evt)) #:pool (current-thread-pool))
                         (tcp-close (tcp-listen 0 4 #t "127.0.0.1")))
                       (custodian-shutdown-all c))
                     (inc!)
                     (loop))))]
         ;; the OS threads, less the collector's helpers (Chez 10 starts
         ;; them at collections, and they stay)
         [tasks (lambda () (- (length (directory-list "/proc/self/task")) (collector-helper-threads)))]
         [tasks-before (tasks)]
         [ts (map (lambda (i) (thread work #:pool 'own)) '(1 2 3 4 5 6))])
    ;; a collection must happen every window, and each window must see progress
    (let loop ([k 0] [last 0] [stalls 0])
      (if (< k 6)
          (begin
            (sleep 0.5)
            (collect-rendezvous)
            (let ([n (unbox count)])
              (loop (+ k 1) n (if (= n last) (+ stalls 1) stalls))))
          (begin
            (set! stop #t)
            (for-each thread-wait ts)
            (printf "  ~a rounds in 3 s\n" (unbox count))
            (check-equal "no stalled window" 0 stalls)
            ;; the siblings were killed (none was collected uncounted while
            ;; parked), so each 'own pool emptied and its worker exited
            (check "the six workers exited"
              (let wait ([k 0]) (or (<= (tasks) tasks-before) (and (< k 200) (begin (sleep 0.01) (wait (+ k 1))))))))))))

;; ---------------------------------------------------------------- exit and Ctrl-C
(define child (string-append (current-directory) "/tests/support/sched-child.ss"))
(define spindle (string-append (current-directory) "/bin/spindle"))

;; Runs the child in mode; signal?: send SIGINT once it says "ready".
;; Returns (status stdout stderr ms), ms from the signal (or start) to its end.
(define (run-child mode signal?)
  (let-values ([(p out in err) (subprocess #f #f #f spindle "run" child (symbol->string mode))])
    (close-port in)
    (when signal?
      (let ([line (get-bytevector-n out 6)])
        (unless (equal? line (string->utf8 "ready\n")) (error 'run-child "no ready line" mode line))))
    (let ([t0 (now-ms)])
      (when signal? (subprocess-kill p #f))
      (let ([done (sync/timeout 8 p)])
        (unless done (subprocess-kill p #t) (subprocess-wait p))
        (let ([ms (- (now-ms) t0)] [o (read-all-string out)] [e (read-all-string err)])
          (close-port out) (close-port err)
          (list (subprocess-status p) o e ms))))))

(test "exit in a parallel thread ends the process with its code (issue 22 item 4)"
  (for-each
    (lambda (mode code)
      (let ([r (run-child mode #f)])
        (check-equal (list mode 'status) code (car r))
        (check-equal (list mode "output flushed, nothing after") "bye" (cadr r))
        (check (list mode "ends at once, not after the main thread's sleep") (< (cadddr r) 4000))))
    '(exit-own exit-pool) '(7 9)))

;; A signal taken just before an idle main OS thread's sleep used to wait
;; for the next wake-up (int-accept failed about once in 80 runs).
(test "SIGINT breaks the main thread promptly, idle or busy (issue 22 item 5)"
  (for-each
    (lambda (mode)
      (let ([r (run-child mode #t)])
        (printf "  ~a: status ~a after ~a ms\n" mode (car r) (round (cadddr r)))
        (check-equal (list mode 'status) 255 (car r))
        (check (list mode "says user break") (string-contains? (caddr r) "user break"))
        (check (list mode "within 2 s") (< (cadddr r) 2000))))
    '(int-accept int-sleep int-sync int-pool int-spin))
  (let ([r (run-child 'int-catch #t)])
    (check-equal "a handler in the main thread catches the break" '(0 "caught\n") (list (car r) (cadr r)))))

(done)
