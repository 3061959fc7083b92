;;; Hello-world HTTP/1.1 server for `bench io`: Guile 3, a POSIX thread per
;;; connection (Debian 12 packages no Guile Fibers).  Parses the request
;;; line and headers, honours Content-Length and keep-alive.  Prints
;;; "listening on PORT" and serves until killed.
(use-modules (ice-9 threads) (ice-9 rdelim) (ice-9 binary-ports) (rnrs bytevectors) (srfi srfi-1))

(define (trim-cr s)
  (if (and (> (string-length s) 0) (char=? (string-ref s (- (string-length s) 1)) #\return))
      (substring s 0 (- (string-length s) 1))
      s))

(define (read-headers port)
  (let loop ((acc '()))
    (let ((line (read-line port)))
      (if (or (eof-object? line) (string=? (trim-cr line) ""))
          acc
          (let* ((l (trim-cr line)) (i (string-index l #\:)))
            (loop (if i
                      (cons (cons (string-downcase (substring l 0 i)) (string-trim-both (substring l (+ i 1)))) acc)
                      acc)))))))

(define reply-keep (string->utf8 "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, world!"))
(define reply-close (string->utf8 "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nConnection: close\r\n\r\nHello, world!"))

(define (serve port)
  (let loop ()
    (let ((line (read-line port)))
      (unless (eof-object? line)
        (let* ((parts (string-split (trim-cr line) #\space))
               (headers (read-headers port))
               (n (let ((h (assoc "content-length" headers))) (if h (string->number (cdr h)) 0)))
               (conn (let ((h (assoc "connection" headers))) (and h (string-downcase (cdr h)))))
               (keep? (if (and (= (length parts) 3) (string=? (third parts) "HTTP/1.1"))
                          (not (equal? conn "close"))
                          (equal? conn "keep-alive"))))
          (when (> n 0) (get-bytevector-n port n))
          (put-bytevector port (if keep? reply-keep reply-close))
          (force-output port)
          (when keep? (loop))))))
  (close-port port))

(define s (socket PF_INET SOCK_STREAM 0))
(setsockopt s SOL_SOCKET SO_REUSEADDR 1)
(bind s AF_INET INADDR_LOOPBACK 0)
(listen s 1024)
(format #t "listening on ~a~%" (sockaddr:port (getsockname s)))
(force-output)
(let loop ()
  (let ((c (car (accept s))))
    (setsockopt c IPPROTO_TCP TCP_NODELAY 1)
    (setvbuf c 'block 65536)
    (call-with-new-thread (lambda () (catch #t (lambda () (serve c)) (lambda _ #f))))
    (loop)))
