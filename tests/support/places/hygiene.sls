#!chezscheme
;;; Start procedures for tests/test-inherit.ss: what a place and its
;;; children inherit.
(library (places hygiene)
  (export start-signal-report start-interrupt-sleep start-deep start-echo)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

  ;; Replies with the "Sig..." lines a child of this place sees in its
  ;; /proc/self/status.
  (define (start-signal-report ch)
    (let-values ([(code out) (run-command "/bin/grep" "^Sig" "/proc/self/status")])
      (place-channel-put ch out)))

  ;; Starts `sleep 30`, interrupts it with (subprocess-kill p #f), and
  ;; replies with its exit status 3 s later ('running if still alive).
  (define (start-interrupt-sleep ch)
    (let-values ([(p o i e) (subprocess #f #f #f "/bin/sleep" "30")])
      (sleep 0.1)
      (subprocess-kill p #f)
      (place-channel-put ch (if (sync/timeout 3 p) (subprocess-status p) 'running))
      (subprocess-kill p #t)))

  ;; Replies with a list nested n deep, n got first; or with the
  ;; condition's message if the put raised.
  (define (start-deep ch)
    (let* ([n (place-channel-get ch)]
           [v (let loop ([i 0] [acc '()]) (if (= i n) acc (loop (+ i 1) (list acc))))])
      (place-channel-put ch
        (guard (c [(message-condition? c) (list 'refused (condition-message c))])
          (place-channel-put ch v)
          'sent))))

  ;; Echoes one message.
  (define (start-echo ch) (place-channel-put ch (place-channel-get ch))))
