#lang racket/base
;; Racket peers for `bench io`: threads and racket/tcp.
;;   racket racket-io.rkt http          hello-world HTTP/1.1 server, a thread per connection
;;                                      (request line, headers, Content-Length, keep-alive)
;;   racket racket-io.rkt echo          echo server, a thread per connection
;;   racket racket-io.rkt fetch W R URL W threads share R GETs (new connection each)
(require racket/tcp racket/string racket/port)

(define (listen)
  (define l (tcp-listen 0 1024 #t "127.0.0.1"))
  (define-values (h port ph pp) (tcp-addresses l #t))
  (printf "listening on ~a\n" port)
  (flush-output)
  l)

(define (http-conn in out)
  (let loop ()
    (define line (read-line in 'return-linefeed))
    (unless (eof-object? line)
      (define parts (string-split line " "))
      (define headers
        (let h ([acc '()])
          (define l (read-line in 'return-linefeed))
          (if (or (eof-object? l) (string=? l ""))
              acc
              (let ([i (let find ([i 0]) (cond [(= i (string-length l)) #f] [(char=? (string-ref l i) #\:) i] [else (find (add1 i))]))])
                (h (if i (cons (cons (string-downcase (substring l 0 i)) (string-trim (substring l (add1 i)))) acc) acc))))))
      (define n (let ([v (assoc "content-length" headers)]) (if v (string->number (cdr v)) 0)))
      (when (> n 0) (read-bytes n in))
      (define conn (let ([v (assoc "connection" headers)]) (and v (string-downcase (cdr v)))))
      (define keep? (if (and (= (length parts) 3) (string=? (caddr parts) "HTTP/1.1")) (not (equal? conn "close")) (equal? conn "keep-alive")))
      (write-bytes (if keep?
                       #"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, world!"
                       #"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nConnection: close\r\n\r\nHello, world!")
                   out)
      (flush-output out)
      (when keep? (loop))))
  (close-input-port in)
  (close-output-port out))

(define (echo-conn in out)
  (define buf (make-bytes 65536))
  (let loop ()
    (define n (read-bytes-avail! buf in))
    (unless (eof-object? n)
      (write-bytes buf out 0 n)
      (flush-output out)
      (loop)))
  (close-input-port in)
  (close-output-port out))

(define (serve handler)
  (define l (listen))
  (let loop ()
    (define-values (in out) (tcp-accept l))
    (thread (lambda () (with-handlers ([exn:fail? void]) (handler in out))))
    (loop)))

(define (fetch workers requests url)
  (define m (regexp-match #rx"^http://([^:/]+):([0-9]+)(.*)$" url))
  (define host (cadr m)) (define port (string->number (caddr m))) (define path (if (string=? (cadddr m) "") "/" (cadddr m)))
  (define left requests)
  (define (take!) (and (> left 0) (begin (set! left (sub1 left)) #t)))
  (define t0 (current-inexact-milliseconds))
  (define ts
    (for/list ([i workers])
      (thread (lambda ()
                (let loop ()
                  (when (take!)
                    (define-values (in out) (tcp-connect host port))
                    (write-string (format "GET ~a HTTP/1.1\r\nHost: ~a\r\nConnection: close\r\n\r\n" path host) out)
                    (flush-output out)
                    (port->bytes in)
                    (close-input-port in) (close-output-port out)
                    (loop)))))))
  (for-each thread-wait ts)
  (printf "elapsed ~a\n" (real->decimal-string (/ (- (current-inexact-milliseconds) t0) 1000) 3)))

(define args (current-command-line-arguments))
(case (vector-ref args 0)
  [("http") (serve http-conn)]
  [("echo") (serve echo-conn)]
  [("fetch") (fetch (string->number (vector-ref args 1)) (string->number (vector-ref args 2)) (vector-ref args 3))])
