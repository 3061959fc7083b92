#lang racket/base
;; racket-places.rkt -- Racket CS peer of `bin/spindle bench places`
;; (bench/places.ss): the same figures with Racket 8.7's places, one line each
;; on stdout, `places.racket-NAME VALUE UNIT`; notes go to stderr.
;;
;;   create-first     ms    first place of this program: `place` until its
;;                          first message arrives
;;   create           ms    the same, mean over the next 20 (--quick 10),
;;                          each stopped and waited for outside the timing
;;   create-min       ms    the fastest of those
;;   roundtrip-small  us    place-channel-put + place-channel-get of a fixnum
;;                          that an echo place sends back
;;   throughput-1mb   MB/s  (make-bytes 2^20) messages one way into a place
;;                          that counts them and acknowledges at the end
;;   throughput-1mb-pipe MB/s the same bytes written to the stdin pipe of
;;                          `sh -c 'read x; echo ready; cat >/dev/null; echo done'`
;;   memcpy-1mb       MB/s  bytes-copy! of 2^20 bytes
;;   strfib-seq       ms    (strfib K) twice (K = 30, --quick 27; the strfib
;;                          of racket-threads.rkt: a radix parameter read on
;;                          every conversion)
;;   strfib-par       ms    once in each of two places at the same time; the
;;                          places have started and sent their first message
;;                          before the clock
;;   strfib-speedup-2 x     seq / par; -with-start: place start in the clock;
;;                          -warm: the same two places again, right after
;; MB = 2^20 bytes.  Best of --runs (default 3; strfib: 5).  Places load this
;; module's compiled code from a .zo cache in the temp directory (the trick of
;; racket-micro.rkt), so no place compiles this file.
;;
;; Usage: racket bench/peers/racket-places.rkt [--quick] [--runs K]

(require "racket-place-cache.rkt")
(require racket/place racket/list racket/file racket/path racket/port racket/format racket/future
         racket/system)

;; ---------------------------------------------------------------- workloads
;; Module level, so that place bodies can use them.
(define current-radix (make-parameter 10))
(define (num->str x) (number->string x (current-radix)))
(define (str->num s) (string->number s (current-radix)))
(define (strfib n)
  (if (< n 2)
      n
      (str->num (num->str (+ (strfib (- n 1)) (strfib (- n 2)))))))

(define (start-echo)
  (place ch
    (place-channel-put ch 'ready)
    (let loop ()
      (define m (place-channel-get ch))
      (unless (eq? m 'stop)
        (place-channel-put ch m)
        (loop)))))

(define (start-sink)
  (place ch
    (place-channel-put ch 'ready)
    (let loop ([n 0])
      (define m (place-channel-get ch))
      (cond
        [(bytes? m) (loop (+ n (bytes-length m)))]
        [(eq? m 'done) (place-channel-put ch n) (loop 0)]
        [(eq? m 'stop) (void)]
        [else (loop n)]))))

(define (start-worker)
  (place ch
    (place-channel-put ch 'ready)
    (let loop ()
      (define m (place-channel-get ch))
      (unless (eq? m 'stop)
        (place-channel-put ch (strfib m))
        (loop)))))

(module+ main
  (define args (vector->list (current-command-line-arguments)))
  (define quick? (and (member "--quick" args) #t))
  (define runs (let ([l (member "--runs" args)]) (if l (string->number (cadr l)) 3)))
  (define strfib-runs (if (member "--runs" args) runs 5))
  (define n-create (if quick? 10 20))
  (define n-roundtrip (if quick? 5000 20000))
  (define n-mb (if quick? 50 200))
  (define n-memcpy (if quick? 500 2000))
  (define strfib-k (if quick? 27 30))
  (define mib 1048576)

  (define (now) (current-inexact-milliseconds))
  (define (fmt v)
    (cond [(>= v 100) (~r v #:precision 0)]
          [(>= v 1) (~r v #:precision 2)]
          [else (~r v #:precision 3)]))
  (define (report name value unit)
    (printf "places.racket-~a ~a ~a\n" name (fmt value) unit)
    (flush-output))
  (define (best-of k thunk)
    (for/fold ([best +inf.0]) ([_ (in-range k)]) (min best (thunk))))

  ;; As in bench/places.ss: a strfib timing during which other processes took
  ;; over a quarter of the machine (/proc/stat busy time minus this process's
  ;; CPU, places included) is taken again after a quiet moment, and every
  ;; group of figures starts at a quiet moment.
  (define (machine-busy-ms)
    (with-handlers ([exn:fail? (lambda (e) #f)])
      (define xs (map string->number
                      (cdr (regexp-split #rx" +" (call-with-input-file "/proc/stat" read-line)))))
      (* 10 (- (apply + (take xs (min 8 (length xs)))) (list-ref xs 3) (list-ref xs 4)))))
  (define quiet-budget (if quick? 30000.0 120000.0))
  (define retimed 0)
  (define (wait-for-quiet)
    (let loop ()
      (when (> quiet-budget 0)
        (define m0 (machine-busy-ms))
        (define c0 (current-process-milliseconds))
        (define t0 (now))
        (sleep 0.25)
        (define dt (- (now) t0))
        (define m1 (machine-busy-ms))
        (set! quiet-budget (- quiet-budget dt))
        (when (and m0 m1 (> (- m1 m0 (- (current-process-milliseconds) c0)) (* 0.1 (processor-count) dt)))
          (loop)))))
  (define (timed/quiet thunk)          ; thunk -> ms
    (let retry ()
      (define m0 (machine-busy-ms))
      (define c0 (current-process-milliseconds))
      (define ms (thunk))
      (define others (and m0 (let ([m1 (machine-busy-ms)])
                               (and m1 (- m1 m0 (- (current-process-milliseconds) c0))))))
      (if (and others (> ms 0) (> (/ others (* (processor-count) ms)) 0.25) (> quiet-budget 0))
          (begin (set! retimed (add1 retimed)) (wait-for-quiet) (retry))
          ms)))
  (define roots (or (compiled-roots-for-places (variable-reference->module-source (#%variable-reference)) "racket-places") (current-compiled-file-roots)))
  (define started '())
  (define (start make)
    (define p (parameterize ([current-compiled-file-roots roots]) (make)))
    (set! started (cons p started))
    p)
  (define (expect p what)
    (define m (place-channel-get p))
    (unless (equal? m what) (error 'racket-places "expected ~s, got ~s" what m)))
  (define (stop! p)
    (place-channel-put p 'stop)
    (define code (place-wait p))
    (unless (eqv? code 0) (error 'racket-places "a place ended with ~s" code)))

  ;; No with-handlers around the figures: in Racket CS a parameter lookup
  ;; (strfib reads current-radix on every conversion) costs about twice as
  ;; much under a with-handlers frame.  An error ends the main place, which
  ;; ends every place.
  (let ()
    ;; ---- create
    (wait-for-quiet)
    (let* ([t0 (now)] [p (start start-echo)])
      (expect p 'ready)
      (report "create-first" (- (now) t0) "ms")
      (stop! p))
    (let ([times (for/list ([i (in-range n-create)])
                   (define t0 (now))
                   (define p (start start-echo))
                   (expect p 'ready)
                   (define dt (- (now) t0))
                   (stop! p)
                   dt)])
      (report "create" (/ (apply + times) n-create) "ms")
      (report "create-min" (apply min times) "ms"))

    ;; ---- round trip
    (wait-for-quiet)
    (let ([p (start start-echo)])
      (expect p 'ready)
      (for ([i (in-range 1000)]) (place-channel-put p i) (place-channel-get p))
      (report "roundtrip-small"
              (best-of runs
                       (lambda ()
                         (define t0 (now))
                         (for ([i (in-range n-roundtrip)])
                           (place-channel-put p i)
                           (unless (eqv? (place-channel-get p) i) (error 'racket-places "echo mismatch")))
                         (/ (* 1000.0 (- (now) t0)) n-roundtrip)))
              "us")
      (stop! p))

    ;; ---- throughput
    (wait-for-quiet)
    (define payload (make-bytes mib 7))
    (let ([p (start start-sink)])
      (expect p 'ready)
      (define (send-mb k)
        (define t0 (now))
        (for ([i (in-range k)]) (place-channel-put p payload))
        (place-channel-put p 'done)
        (define n (place-channel-get p))
        (unless (eqv? n (* k mib)) (error 'racket-places "sink counted ~s bytes" n))
        (/ k (/ (- (now) t0) 1000.0)))
      (send-mb 5)
      (collect-garbage)
      (report "throughput-1mb" (- (best-of runs (lambda () (- (send-mb n-mb))))) "MB/s")
      (stop! p))

    (define (pipe-run k)
      (define-values (sp out in err)
        (subprocess #f #f #f "/bin/sh" "-c" "read x; echo ready; cat >/dev/null; echo done"))
      (write-bytes #"go\n" in)
      (flush-output in)
      (unless (equal? (read-line out) "ready") (error 'racket-places "pipe: no ready line"))
      (define t0 (now))
      (for ([i (in-range k)]) (write-bytes payload in))
      (close-output-port in)
      (define l (read-line out))
      (unless (equal? l "done") (error 'racket-places "pipe: expected done, got ~s" l))
      (define mbs (/ k (/ (- (now) t0) 1000.0)))
      (close-input-port out)
      (close-input-port err)
      (subprocess-wait sp)
      mbs)
    (wait-for-quiet)
    (pipe-run 5)
    (report "throughput-1mb-pipe" (- (best-of runs (lambda () (- (pipe-run n-mb))))) "MB/s")

    (wait-for-quiet)
    (let ([dst (make-bytes mib 0)])
      (bytes-copy! dst 0 payload)
      (report "memcpy-1mb"
              (- (best-of runs
                          (lambda ()
                            (define t0 (now))
                            (for ([i (in-range n-memcpy)]) (bytes-copy! dst 0 payload))
                            (- (/ n-memcpy (/ (- (now) t0) 1000.0))))))
              "MB/s"))

    ;; ---- strfib
    (wait-for-quiet)
    (define expected (strfib strfib-k))
    (define seq (best-of strfib-runs
                         (lambda ()
                           (timed/quiet
                            (lambda ()
                              (collect-garbage)
                              (define t0 (now))
                              (strfib strfib-k) (strfib strfib-k)
                              (- (now) t0))))))
    (define (both a b)
      (place-channel-put a strfib-k)
      (place-channel-put b strfib-k)
      (define ra (place-channel-get a))
      (define rb (place-channel-get b))
      (unless (and (eqv? ra expected) (eqv? rb expected))
        (error 'racket-places "strfib: wrong results ~s ~s" ra rb)))
    (define results
      (for/list ([i (in-range strfib-runs)])
        (define r #f)
        (timed/quiet
         (lambda ()
           (collect-garbage)
           (define t0 (now))
           (define a (start start-worker))
           (define b (start start-worker))
           (expect a 'ready)
           (expect b 'ready)
           (define t1 (now))
           (both a b)
           (define t2 (now))
           (both a b)
           (define t3 (now))
           (stop! a)
           (stop! b)
           (set! r (list (- t2 t1) (- t2 t0) (- t3 t2)))
           (- t3 t0)))
        r))
    (unless (zero? retimed)
      (eprintf "~a strfib timing(s) taken again because other processes took over a quarter of the machine\n"
               retimed))
    (define par (apply min (map first results)))
    (report "strfib-seq" seq "ms")
    (report "strfib-par" par "ms")
    (report "strfib-speedup-2" (/ seq par) "x")
    (report "strfib-speedup-2-with-start" (/ seq (apply min (map second results))) "x")
    (report "strfib-speedup-2-warm" (/ seq (apply min (map third results))) "x")))
