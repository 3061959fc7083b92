#!chezscheme
;;; One socket or pipe input port read by threads on several OS threads
;;; (parallel pools) and coroutine threads at once: every byte, character
;;; and line must arrive exactly once.  (Before the fd-port input handler
;;; took its lock around single-byte reads, get-u8 here duplicated and lost
;;; bytes: Chez's one-byte port buffer was read by two OS threads at once.)
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness))

(test-limit 60)

(define (listener-port l)
  (let-values ([(lh lp ph pp) (tcp-addresses l #t)]) lp))

;; A connected pair of binary socket ports: (values in out) where bytes put
;; on out arrive on in.
(define (socket-pair)
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")] [port (listener-port l)])
    (let-values ([(in out) (tcp-connect "127.0.0.1" port)] [(sin sout) (tcp-accept l)])
      (tcp-close l)
      (close-port out)
      (close-port sin)
      (values in sout))))

;; k readers, alternately on the main pool and on two parallel pools, each
;; calling (read-one in) until it gives eof; (values results-of-each).
(define (share-reads in k read-one)
  (let* ([pools (list (make-parallel-thread-pool 2) (make-parallel-thread-pool 2) #f)]
         [readers (map (lambda (r)
                         (thread (lambda ()
                                   (let loop ([acc '()])
                                     (let ([x (read-one in)])
                                       (if (eof-object? x) acc (loop (cons x acc))))))
                                 (list-ref pools (mod r 3)) 'results))
                       (iota k))])
    (map thread-wait readers)))

;; Writes data on out in chunks of random size, then closes it.
(define (feed out data)
  (thread (lambda ()
            (let loop ([i 0])
              (when (< i (bytevector-length data))
                (let ([n (min (- (bytevector-length data) i) (+ 1 (random 3000)))])
                  (put-bytevector out data i n)
                  (loop (+ i n)))))
            (close-port out))))

;; Counts of each byte value.
(define (histogram bytes)
  (let ([h (make-vector 256 0)])
    (for-each (lambda (b) (vector-set! h b (+ 1 (vector-ref h b)))) bytes)
    h))

(define total 300000)
(define data (let ([bv (make-bytevector total)])
               (do ([i 0 (+ i 1)]) ((= i total) bv) (bytevector-u8-set! bv i (mod (* i 7) 251)))))

(test "get-u8 from 6 threads on 3 pools: every byte once"
  (let-values ([(in out) (socket-pair)])
    (feed out data)
    (let ([results (share-reads in 6 get-u8)])
      (close-port in)
      (check-equal "count" total (apply + (map length results)))
      (check-equal "each value as often as sent" (histogram (bytevector->u8-list data))
                   (histogram (apply append results))))))

(test "lookahead-u8 then get-u8 from 6 threads: every byte once"
  (let-values ([(in out) (socket-pair)])
    (feed out data)
    (let ([results (share-reads in 6 (lambda (in)
                                       ;; the byte looked at may be taken by another thread
                                       (if (eof-object? (lookahead-u8 in)) (eof-object) (get-u8 in))))])
      (close-port in)
      (check-equal "count" total (apply + (map length results)))
      (check-equal "each value" (histogram (bytevector->u8-list data)) (histogram (apply append results))))))

;; Known text: numbered lines, some with characters of two and three bytes.
(define line-count 20000)
(define (line-text i) (format "~6,'0d ~a" i (case (mod i 3) [(0) "plain"] [(1) "caf\xe9;"] [else "\x3bb;x.y"])))
(define text-bytes
  (string->utf8 (apply string-append (map (lambda (i) (string-append (line-text i) "\n")) (iota line-count)))))

(define (char-histogram chars)
  (let ([h (make-eqv-hashtable)])
    (for-each (lambda (c) (hashtable-update! h c (lambda (n) (+ n 1)) 0)) chars)
    (list-sort (lambda (a b) (char<? (car a) (car b)))
               (let-values ([(ks vs) (hashtable-entries h)]) (map cons (vector->list ks) (vector->list vs))))))

;; A transcoded port is a Chez port with its own buffers: shared between
;; OS threads it must be synchronized ('parking: its reads may park).
(define (shared-text-port in)
  (make-synchronized-port (transcoded-port in (make-transcoder (utf-8-codec) (eol-style lf))) 'parking))

(test "get-char and peek-char on a synchronized transcoded socket port, 6 threads: every character once"
  (let-values ([(in out) (socket-pair)])
    (feed out text-bytes)
    (let* ([tin (shared-text-port in)]
           [results (share-reads tin 6 (lambda (p) (if (eof-object? (peek-char p)) (eof-object) (get-char p))))])
      (close-port tin)
      (let ([chars (apply append results)] [expected (string->list (utf8->string text-bytes))])
        (check-equal "count" (length expected) (length chars))
        (check-equal "each character as often as sent" (char-histogram expected) (char-histogram chars))))))

(test "get-line under with-port-lock, 6 threads: every line once and whole"
  (let-values ([(in out) (socket-pair)])
    (feed out text-bytes)
    (let* ([tin (shared-text-port in)]
           [results (share-reads tin 6 (lambda (p) (with-port-lock p (get-line p))))])
      (close-port tin)
      (check-equal "lines" (map line-text (iota line-count))
                   (list-sort string<? (apply append results))))))

;; Bulk and single reads mixed: get-bytevector-some, -n, get-u8 from
;; parallel threads, on a pipe (subprocess cat).
(test "mixed get-u8, get-bytevector-n and -some on a pipe from 6 threads: every byte once"
  (let-values ([(proc in out err) (subprocess #f #f #f "/bin/cat")])
    (feed out data)
    (let ([results (share-reads in 6 (lambda (p)
                                        (case (random 3)
                                          [(0) (let ([b (get-u8 p)]) (if (eof-object? b) b (list b)))]
                                          [(1) (let ([b (get-bytevector-n p (+ 1 (random 100)))]) (if (eof-object? b) b (bytevector->u8-list b)))]
                                          [else (let ([b (get-bytevector-some p)]) (if (eof-object? b) b (bytevector->u8-list b)))])))])
      (close-port in)
      (let ([bytes (apply append (apply append results))])
        (check-equal "count" total (length bytes))
        (check-equal "each value" (histogram (bytevector->u8-list data)) (histogram bytes))))
    (close-port err)
    (subprocess-wait proc)))

;; Readers parked in get-u8 and lookahead-u8 (one holds the input lock,
;; the others wait for it) on several pools: a write on the same socket
;; goes through meanwhile, and closing the port wakes every reader with
;; "port is closed".
(test "parked single-byte readers block no writer; closing wakes them all"
  (let* ([l (tcp-listen 0 4 #t "127.0.0.1")] [port (listener-port l)])
    (let-values ([(in out) (tcp-connect "127.0.0.1" port)] [(sin sout) (tcp-accept l)])
      (tcp-close l)
      (let* ([pools (list (make-parallel-thread-pool 2) #f (make-parallel-thread-pool 1))]
             [readers (map (lambda (r)
                             (thread (lambda ()
                                       (guard (c [(and (i/o-error? c) (message-condition? c)) (condition-message c)])
                                         ((if (even? r) get-u8 lookahead-u8) in)))
                                     (list-ref pools (mod r 3)) 'results))
                           (iota 4))])
        (sleep 0.1)
        (put-bytevector out (string->utf8 "ping"))
        (check-equal "the write went through" (string->utf8 "ping") (get-bytevector-n sin 4))
        (close-port in)
        (check-equal "every reader woke with the error" (make-list 4 "port is closed") (map thread-wait readers)))
      (for-each close-port (list out sin sout)))))

(done)
