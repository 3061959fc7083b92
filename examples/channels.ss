#!chezscheme
;;; A producer coroutine thread and a parallel consumer meet on a channel;
;;; then a sync/timeout over the channel and an alarm.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
(define ch (make-channel))
(define producer (thread (lambda () (for-each (lambda (i) (channel-put ch i)) '(1 2 3)))))
(define consumer
  (thread (lambda () (list (channel-get ch) (channel-get ch) (channel-get ch)))
          #:pool 'own #:keep 'results))
(printf "~s\n" (thread-wait consumer))
(printf "~s\n" (sync/timeout 0.5 ch (alarm-evt (+ (current-inexact-milliseconds) 100))))
