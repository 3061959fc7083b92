#!chezscheme
;;; A line server whose connections each run in a task scope with
;;; deadlines: a client gets --idle seconds for each line and --total
;;; seconds in all, so a client that sends nothing (or trickles bytes)
;;; cannot hold a connection, its thread or its socket.
;;;   bin/spindle run examples/deadline-server.ss [--port N] [--idle S] [--total S] [--demo 1]
;;; Each line is answered upper-cased; "quit" ends the connection.  The
;;; first line printed is "listening on PORT".  --demo 1 runs two clients
;;; against the server (a polite one and a silent one), prints what
;;; happened and exits.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (options))

(define idle-seconds (option "--idle" 2))
(define total-seconds (option "--total" 10))

;; One connection: a deadline for the whole session, and for each read a
;; shorter one.  The ports are closed in a dynamic-wind exit: a
;; cancellation unwinds, so they are closed however the connection ends
;; (the deadlines, or the server's scope cancelled).
(define (serve-connection raw-in raw-out)
  (let ([in (transcoded-port raw-in (native-transcoder))]
        [out (transcoded-port raw-out (native-transcoder))])
    (define (say line) (put-string out line) (newline out) (flush-output-port out))
    (dynamic-wind
      void
      (lambda () (session in say))
      (lambda () (close-port in) (guard (c [(i/o-error? c) (void)]) (close-port out))))))

(define (session in say)
  (let ([how (move-on-after total-seconds
               (let loop ()
                 (let ([line (move-on-after idle-seconds (get-line in))])
                   (cond
                     [(not line) (say "idle too long, bye") 'idle]
                     [(eof-object? line) 'closed]
                     [(string=? line "quit") (say "bye") 'quit]
                     [else (say (string-upcase line)) (loop)]))))])
    (or how
        ;; the session deadline passed: a shield lets the goodbye wait
        ;; for the socket (briefly: a deadline inside a shield still works)
        (begin (with-cancel-shield (move-on-after 0.5 (say "session too long, bye"))) 'total))))

;; The server is a task scope too: cancelling it (scope-cancel!) ends the
;; accept loop and every connection, each unwinding.
(define (run-server listener report)
  (call-with-task-scope
    (lambda (server)
      (let loop ([n 1])
        (let-values ([(in out) (tcp-accept listener)])
          (scope-thread server (lambda () (report n (serve-connection in out))))
          (loop (+ n 1)))))))

(define listener (tcp-listen (option "--port" 0) 64 #t "127.0.0.1"))
(define port (let-values ([(h p ph pp) (tcp-addresses listener #t)]) p))
(printf "listening on ~a\n" port)
(flush-output-port (current-output-port))

(define (report n how)
  (printf "connection ~a: ~a\n" n how)
  (flush-output-port (current-output-port)))

(if (option "--demo" #f)
    (call-with-task-scope
      (lambda (demo)
        (scope-thread demo (lambda () (run-server listener report)))
        (let-values ([(in out) (tcp-connect "127.0.0.1" port)])
          (let ([in (transcoded-port in (native-transcoder))]
                [out (transcoded-port out (native-transcoder))])
            (put-string out "hello\nquit\n")
            (flush-output-port out)
            (printf "polite client got: ~s ~s\n" (get-line in) (get-line in))))
        (let-values ([(in out) (tcp-connect "127.0.0.1" port)])
          (let ([t0 (current-inexact-monotonic-milliseconds)]
                [in (transcoded-port in (native-transcoder))])
            (printf "silent client got: ~s after ~a s\n" (get-line in)
                    (round (/ (- (current-inexact-monotonic-milliseconds) t0) 1000.)))))
        (sleep 0.1)
        (scope-cancel! demo)))
    (run-server listener report))
