#!chezscheme
;;; Child program of tests/test-console.ss: a thread waits in get-line on
;;; (current-input-port), a pipe its parent leaves empty, while a coroutine
;;; ticker, an 'own ticker (both on 10 ms deadlines) and an allocating
;;; parallel spinner run.  After 2 s a monitor prints
;;;   coroutine-ticks own-ticks spinner-windows while-waiting
;;; (ideal: 200 200 20; a spinner window is 100 ms in which it made
;;; progress; "after-input" instead if the reader had its line by then)
;;; then the line it reads once the parent writes one.
;;; Argument: "main" (the reader is the main thread) or "own" (an 'own thread).
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

(define reader-kind (cadr (command-line)))
(define window-ms 2000.)

(define (ticker)
  (let ([count (box 0)])
    (values count
            (lambda ()
              (let loop ([next (+ (current-inexact-monotonic-milliseconds) 10.)])
                (let ([wait (- next (current-inexact-monotonic-milliseconds))])
                  (when (> wait 0.) (sleep (/ wait 1000.))))
                (set-box! count (+ (unbox count) 1))
                (loop (+ next 10.)))))))

(define-values (co-count co-body) (ticker))
(define-values (own-count own-body) (ticker))
(define spun (box 0))
(define line (box #f))
(define windows (box 0))

(define started (make-semaphore 0))
(define co (thread (lambda () (semaphore-wait started) (co-body))))
(define own (thread (lambda () (semaphore-wait started) (own-body)) #:pool 'own))
(define spinner
  (thread (lambda ()
            (let loop ([junk '()])
              (set-box! spun (+ (unbox spun) 1))
              (loop (if (> (length junk) 1000) '() (cons (make-vector 4) junk)))))
          #:pool 'own))
;; samples the spinner every 100 ms, from its own OS thread
(define sampler
  (thread (lambda ()
            (semaphore-wait started)
            (let loop ([last (unbox spun)] [k 0])
              (when (< k 20)
                (sleep 0.1)
                (let ([now (unbox spun)])
                  (when (> now last) (set-box! windows (+ (unbox windows) 1)))
                  (loop now (+ k 1))))))
          #:pool 'own))

(define monitor
  (thread (lambda ()
            (sleep 0.3)                 ; the reader is waiting by now
            (for-each (lambda (i) (semaphore-post started)) '(1 2 3))
            (let ([t0 (unbox co-count)] [o0 (unbox own-count)])
              (sleep (/ window-ms 1000.))
              (thread-wait sampler)
              (let ([out (current-output-port)])
                (put-string out (format "~a ~a ~a ~a\n" (- (unbox co-count) t0) (- (unbox own-count) o0) (unbox windows)
                                        (if (unbox line) "after-input" "while-waiting")))
                (flush-output-port out))))))

(define (read-one) (set-box! line (get-line (current-input-port))))

(if (string=? reader-kind "own")
    (thread-wait (thread read-one #:pool 'own))
    (read-one))
(thread-wait monitor)
(display (format "read ~a\n" (unbox line)))
(exit 0)
