#!chezscheme
;;; The fetcher of the threads article: W worker threads share R HTTP GETs
;;; of one URL, each on a new connection.  With coroutine threads the
;;; waits overlap, so 20 workers take about 1/20 of the time of one.
;;;   bin/spindle run examples/fetch.ss [--workers W] [--requests R] URL
;;; Prints each worker's count, then "elapsed SECONDS".
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (options))

(define url (let ([args (cdr (command-line))]) (if (null? args) "http://127.0.0.1:8080/" (list-ref args (- (length args) 1)))))

;; "http://host:port/path" -> (values host port path)
(define (parse-url url)
  (let* ([rest (if (and (> (string-length url) 7) (string=? (substring url 0 7) "http://")) (substring url 7 (string-length url)) url)]
         [slash (let loop ([i 0]) (cond [(= i (string-length rest)) i] [(char=? (string-ref rest i) #\/) i] [else (loop (+ i 1))]))]
         [hostport (substring rest 0 slash)]
         [path (if (= slash (string-length rest)) "/" (substring rest slash (string-length rest)))]
         [colon (let loop ([i (- (string-length hostport) 1)]) (cond [(< i 0) #f] [(char=? (string-ref hostport i) #\:) i] [else (loop (- i 1))]))])
    (if colon
        (values (substring hostport 0 colon) (string->number (substring hostport (+ colon 1) (string-length hostport))) path)
        (values hostport 80 path))))

(define-values (host port path) (parse-url url))

;; One GET on a new connection; returns the status code.
(define (get!)
  (let-values ([(in out) (tcp-connect host port)])
    (put-bytevector out (string->utf8 (string-append "GET " path " HTTP/1.1\r\nHost: " host "\r\nConnection: close\r\n\r\n")))
    (flush-output-port out)
    (let* ([reply (get-bytevector-all in)]
           [status (and (bytevector? reply) (>= (bytevector-length reply) 12)
                        (string->number (utf8->string (let ([b (make-bytevector 3)]) (bytevector-copy! reply 9 b 0 3) b))))])
      (close-port in)
      (close-port out)
      status)))

(define workers (option "--workers" 20))
(define requests (option "--requests" 400))
(define left requests)                  ; coroutine threads: no lock needed

(define (take!) (and (> left 0) (begin (set! left (- left 1)) #t)))

(define t0 (current-inexact-monotonic-milliseconds))
(define threads
  (map (lambda (i)
         (thread (lambda ()
                   (let loop ([n 0])
                     (if (take!)
                         (begin
                           (unless (eqv? (get!) 200) (error 'fetch "request failed" url))
                           (loop (+ n 1)))
                         n)))
                 #:keep 'results))
       (iota workers)))
(printf "per worker ~a\n" (map thread-wait threads))
(printf "elapsed ~,3f\n" (/ (- (current-inexact-monotonic-milliseconds) t0) 1000))
