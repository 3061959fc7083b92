#!chezscheme
;;; A small HTTP/1.1 server: a thread per connection, keep-alive, GET and
;;; HEAD (and POST bodies read by Content-Length), pipelined requests.
;;;   bin/spindle run examples/http-server.ss [--port N] [--pool K]
;;; --port 0 (the default) picks a free port; the first line printed is
;;; "listening on PORT".  --pool K runs the connection threads on a
;;; parallel thread pool of K OS workers instead of the main pool.
;;;
;;; The parser reads the request line and every header line, honours
;;; Content-Length (the body is read and dropped) and Connection
;;; (keep-alive is HTTP/1.1's default; HTTP/1.0 closes unless asked), and
;;; answers 400 to what it cannot parse.  / answers "Hello, world!".
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (options))

;; ---------------------------------------------------------------- reading
;; A connection's input: a buffer holding bytes [start, end).
(define-record-type conn (fields in (mutable buf) (mutable start) (mutable end)))

(define max-head 65536)

;; Reads more bytes into the buffer; #f at end of input.
(define (fill! c)
  (let ([buf (conn-buf c)] [start (conn-start c)] [end (conn-end c)])
    (when (fx> start 0)                         ; keep what is unread at the front
      (bytevector-copy! buf start buf 0 (fx- end start))
      (conn-start-set! c 0)
      (conn-end-set! c (fx- end start)))
    (when (fx= (conn-end c) (bytevector-length buf))
      (let ([bigger (make-bytevector (fx* 2 (bytevector-length buf)))])
        (bytevector-copy! buf 0 bigger 0 (conn-end c))
        (conn-buf-set! c bigger)))
    (let* ([buf (conn-buf c)]
           [n (get-bytevector-some! (conn-in c) buf (conn-end c) (fx- (bytevector-length buf) (conn-end c)))])
      (and (not (eof-object? n))
           (begin (conn-end-set! c (fx+ (conn-end c) n)) #t)))))

;; The index just past the next CRLF at or after i, or #f.
(define (line-end c i)
  (let ([buf (conn-buf c)] [end (conn-end c)])
    (let loop ([i i])
      (cond
        [(fx>= (fx+ i 1) end) #f]
        [(and (fx= (bytevector-u8-ref buf i) 13) (fx= (bytevector-u8-ref buf (fx+ i 1)) 10)) (fx+ i 2)]
        [else (loop (fx+ i 1))]))))

(define (text c from to)
  (let ([r (make-bytevector (fx- to from))])
    (bytevector-copy! (conn-buf c) from r 0 (fx- to from))
    (utf8->string r)))

;; A request: method, target, version and headers (name in lower case .
;; value).  Returns #f at a clean end of input, 'bad for a malformed head.
(define (read-head c)
  (let loop ([scan (conn-start c)])
    (let ([eol (line-end c scan)])
      (cond
        [(and eol (fx= eol (fx+ (conn-start c) 2)))       ; blank lines before a request
         (conn-start-set! c eol) (loop eol)]
        [(and eol (head-end c eol)) => (lambda (stop) (parse-head c stop))]
        [(fx> (fx- (conn-end c) (conn-start c)) max-head) 'bad]
        [else
         (let ([consumed (fx- scan (conn-start c))])
           (and (fill! c)
                (loop (fx+ (conn-start c) (fxmax 0 (fx- consumed 1))))))]))))

;; The index past the blank line ending the head that starts at the
;; connection's start, if all of it is buffered.
(define (head-end c from)
  (let loop ([i from])
    (let ([eol (line-end c i)])
      (cond
        [(not eol) #f]
        [(fx= eol (fx+ i 2)) eol]
        [else (loop eol)]))))

(define (parse-head c stop)
  (let* ([start (conn-start c)] [eol (line-end c start)] [line (text c start (fx- eol 2))]
         [parts (split line #\space)])
    (conn-start-set! c stop)
    (if (not (= (length parts) 3))
        'bad
        (let loop ([i eol] [headers '()])
          (let ([e (line-end c i)])
            (if (fx= e (fx+ i 2))
                (list (car parts) (cadr parts) (caddr parts) (reverse headers))
                (let* ([h (text c i (fx- e 2))] [colon (string-index h #\:)])
                  (if colon
                      (loop e (cons (cons (string-downcase (substring h 0 colon))
                                          (string-trim (substring h (fx+ colon 1) (string-length h))))
                                    headers))
                      'bad))))))))

;; Drops n body bytes.
(define (skip-body! c n)
  (let loop ([n n])
    (when (fx> n 0)
      (when (fx= (conn-start c) (conn-end c))
        (unless (fill! c) (set! n 0)))
      (let ([k (fxmin n (fx- (conn-end c) (conn-start c)))])
        (conn-start-set! c (fx+ (conn-start c) k))
        (loop (fx- n k))))))

(define (split s ch)
  (let loop ([i 0] [from 0] [acc '()])
    (cond
      [(fx= i (string-length s)) (reverse (cons (substring s from i) acc))]
      [(char=? (string-ref s i) ch) (loop (fx+ i 1) (fx+ i 1) (cons (substring s from i) acc))]
      [else (loop (fx+ i 1) from acc)])))

(define (string-index s ch)
  (let loop ([i 0]) (cond [(fx= i (string-length s)) #f] [(char=? (string-ref s i) ch) i] [else (loop (fx+ i 1))])))

(define (string-trim s)
  (let loop ([a 0] [b (string-length s)])
    (cond
      [(and (fx< a b) (char-whitespace? (string-ref s a))) (loop (fx+ a 1) b)]
      [(and (fx< a b) (char-whitespace? (string-ref s (fx- b 1)))) (loop a (fx- b 1))]
      [else (substring s a b)])))

;; ---------------------------------------------------------------- answering
(define (respond out status body keep-alive? head?)
  ;; one put: spindle's socket ports write each put call in one go
  (put-bytevector out
    (string->utf8
      (string-append "HTTP/1.1 " status "\r\nServer: spindle\r\nContent-Type: text/plain\r\nContent-Length: "
                     (number->string (bytevector-length (string->utf8 body)))
                     (if keep-alive? "\r\n\r\n" "\r\nConnection: close\r\n\r\n")
                     (if head? "" body)))))

(define (route method target)
  (cond
    [(not (member method '("GET" "HEAD" "POST"))) (values "405 Method Not Allowed" "method not allowed\n")]
    [(string=? target "/") (values "200 OK" "Hello, world!")]
    [else (values "404 Not Found" "not found\n")]))

(define (serve in out)
  (let ([c (make-conn in (make-bytevector 4096) 0 0)])
    (let loop ()
      (let ([req (read-head c)])
        (cond
          [(not req) (void)]
          [(eq? req 'bad) (respond out "400 Bad Request" "bad request\n" #f #f) (flush-output-port out)]
          [else
           (let* ([method (car req)] [version (caddr req)] [headers (cadddr req)]
                  [connection (let ([h (assoc "connection" headers)]) (and h (string-downcase (cdr h))))]
                  [keep-alive? (if (string=? version "HTTP/1.0")
                                   (equal? connection "keep-alive")
                                   (not (equal? connection "close")))]
                  [length (let ([h (assoc "content-length" headers)]) (if h (string->number (cdr h)) 0))])
             (if (not (and (fixnum? length) (fx>= length 0)))
                 (begin (respond out "400 Bad Request" "bad content-length\n" #f #f) (flush-output-port out))
                 (begin
                   (skip-body! c length)
                   (let-values ([(status body) (route method (cadr req))])
                     (respond out status body keep-alive? (string=? method "HEAD")))
                   ;; answers to pipelined requests go out together
                   (when (fx= (conn-start c) (conn-end c)) (flush-output-port out))
                   (when keep-alive? (loop)))))]))))
  (guard (c [#t (void)]) (flush-output-port out))
  (close-port in)
  (guard (c [#t (void)]) (close-port out)))

(define pool (let ([k (option "--pool" #f)]) (and k (make-parallel-thread-pool k))))
(define listener (tcp-listen (option "--port" 0) 1024 #t "127.0.0.1"))

(let-values ([(host port peer-host peer-port) (tcp-addresses listener #t)])
  (printf "listening on ~a\n" port)
  (flush-output-port (current-output-port)))

(let loop ()
  (let-values ([(in out) (tcp-accept listener)])
    ;; a client that resets ends its own thread only
    (thread (lambda () (guard (c [(i/o-error? c) (void)]) (serve in out))) #:pool pool))
  (loop))
