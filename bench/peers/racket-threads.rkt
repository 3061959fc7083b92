#lang racket/base
;; racket-threads.rkt -- Racket CS peer for `bin/spindle bench threads`.
;;
;; The same eight workloads as bench/threads.ss, N iterations at a time in four
;; modes (the two shared ones, whose N iterations share one mutable hash
;; table or one string port, have no places mode):
;;   sequential  N iterations in a row
;;   coroutine   N Racket threads (green threads on one OS thread in 8.7)
;;   futures     N racket/future futures, touched in order
;;   places      N places, one iteration each; the places are started (and
;;               have loaded this module) before the clock starts: place
;;               startup is reported apart, on a `#` line
;; and prints one line per cell on stdout:
;;   racket.WORKLOAD.MODE.nN SPEEDUP x REAL_MS CPU_MS GC_MS
;; (speedup over the sequential cell of the same N; CPU = the whole process,
;; (current-process-milliseconds), places included since they are OS threads
;; of this process; GC = (current-gc-milliseconds) of the main place).
;; Lines starting with `#` are notes; progress goes to stderr.
;;
;; Usage: racket bench/peers/racket-threads.rkt [--n 1,2] [--quick] [--runs K]
;;          [--workloads LIST] [--sizes WL=V,...] [--dirs D1,D2]
;; bench/threads.ss passes all of these, so the sizes match its own.

(require "racket-place-cache.rkt")
(require racket/place racket/future racket/list racket/string racket/path
         racket/file racket/port)

;; ---------------------------------------------------------------- workloads
;; Module level, so that place bodies can use them.
(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))

(define (strfib* n)
  (if (< n 2)
      n
      (string->number (number->string (+ (strfib* (- n 1)) (strfib* (- n 2)))))))

(define current-radix (make-parameter 10))
(define (num->str x) (number->string x (current-radix)))
(define (str->num s) (string->number s (current-radix)))
(define (strfib n)
  (if (< n 2)
      n
      (str->num (num->str (+ (strfib (- n 1)) (strfib (- n 2)))))))

(define hash-nums-rounds 3)
(define (hash-nums k)
  (define n (expt 10 k))
  (for/fold ([acc 0]) ([r (in-range hash-nums-rounds)])
    (define h (make-hash))
    (for ([i (in-range n)]) (hash-set! h i (+ i r)))
    (for/fold ([s acc]) ([i (in-range n)]) (+ s (hash-ref h i 0)))))

(define (hash-digs m)
  (define o (open-output-string))
  (for ([i (in-range m)]) (write i o))
  (equal-hash-code (get-output-string o)))

(define skipped-dirs '("results" "compiled" "__pycache__"))
(define (hash-tree dir acc)
  (for/fold ([acc acc])
            ([name (sort (map path->string (directory-list dir)) string<?)])
    (define p (build-path dir name))
    (cond
      [(regexp-match? #rx"^[.]" name) acc]
      [(link-exists? p) acc]
      [(directory-exists? p) (if (member name skipped-dirs) acc (hash-tree p acc))]
      [(file-exists? p)
       (define s (call-with-input-file p
                   (lambda (in) (port->string (reencode-input-port in "UTF-8" #\uFFFD)))))
       (bitwise-and (+ acc (equal-hash-code s)) #xffffffff)]
      [else acc])))
(define (hash-dir passes dirs)
  (for/fold ([acc 0]) ([i (in-range passes)])
    (for/fold ([acc acc]) ([d (in-list dirs)])
      (if (directory-exists? d) (hash-tree d acc) acc))))

;; Shared variants: (make-shared-work name size) -> a thunk whose calls (one
;; per thread) share one table or port.  hash-nums-shared: each call takes its
;; own 10^k keys of one mutable hash table (same checksum as hash-nums);
;; hash-digs-shared: each call writes the digits of 0 .. m-1 to one string
;; port and returns m.
(define shared-workloads '("hash-nums-shared" "hash-digs-shared"))
(define (make-shared-work name size)
  (case name
    [("hash-nums-shared")
     (define n (expt 10 size))
     (define h (make-hash))
     (define next (box 0))
     (lambda ()
       (define base (* n (let claim () (define j (unbox next)) (if (box-cas! next j (add1 j)) j (claim)))))
       (for/fold ([acc 0]) ([r (in-range hash-nums-rounds)])
         (for ([i (in-range n)]) (hash-set! h (+ base i) (+ i r)))
         (for/fold ([s acc]) ([i (in-range n)]) (+ s (hash-ref h (+ base i) 0)))))]
    [("hash-digs-shared")
     (define o (open-output-string))
     (lambda ()
       (for ([i (in-range size)]) (write i o))
       size)]
    [else (error 'racket-threads "unknown workload ~a" name)]))

;; workload name, size, dirs -> checksum
(define (run-workload name size dirs)
  (case name
    [("fib") (fib size)]
    [("strfib*") (strfib* size)]
    [("strfib") (strfib size)]
    [("hash-nums") (hash-nums size)]
    [("hash-digs") (hash-digs size)]
    [("hash-dir") (hash-dir size dirs)]
    [else (error 'racket-threads "unknown workload ~a" name)]))

;; A place that runs the workload it is sent, once per message.
(define (start-worker-place)
  (place ch
    (let loop ()
      (define msg (place-channel-get ch))
      (cond
        [(eq? msg 'stop) (void)]
        [(eq? msg 'ping) (place-channel-put ch 'pong) (loop)]
        [else
         (place-channel-put ch (run-workload (car msg) (cadr msg) (caddr msg)))
         (loop)]))))

(module+ main
  (define args (vector->list (current-command-line-arguments)))
  (define (option name default)
    (let loop ([a args])
      (cond [(or (null? a) (null? (cdr a))) default]
            [(equal? (car a) name) (cadr a)]
            [else (loop (cdr a))])))
  (define (split-list s) (filter (lambda (x) (> (string-length x) 0)) (string-split s ",")))
  (define quick? (and (member "--quick" args) #t))
  (define runs (string->number (option "--runs" "3")))
  (define ns (map string->number
                  (split-list (option "--n" (string-join
                                              (map number->string
                                                   (filter (lambda (n) (<= n (processor-count))) '(1 2 4 8)))
                                              ",")))))
  (define default-sizes
    (if quick?
        '(("fib" . 36) ("strfib*" . 27) ("strfib" . 27) ("hash-nums" . 5) ("hash-digs" . 600000) ("hash-dir" . 40)
          ("hash-nums-shared" . 5) ("hash-digs-shared" . 600000))
        '(("fib" . 40) ("strfib*" . 30) ("strfib" . 30) ("hash-nums" . 6) ("hash-digs" . 3000000) ("hash-dir" . 200)
          ("hash-nums-shared" . 6) ("hash-digs-shared" . 3000000))))
  (define sizes
    (append (for/list ([kv (split-list (option "--sizes" ""))])
              (define parts (string-split kv "="))
              (cons (car parts) (string->number (cadr parts))))
            default-sizes))
  (define workloads (split-list (option "--workloads" "fib,strfib*,strfib,hash-nums,hash-digs,hash-dir,hash-nums-shared,hash-digs-shared")))
  (define here (let-values ([(dir name _) (split-path (simplify-path (path->complete-path
                                                                      (variable-reference->module-source
                                                                       (#%variable-reference)))))])
                 dir))
  (define dirs (split-list (option "--dirs" (string-join
                                              (for/list ([d '("lib" "tests" "bench" "examples")])
                                                (path->string (simplify-path (build-path here 'up 'up d))))
                                              ","))))
  (define all-modes '(sequential coroutine futures places))

  (define place-roots (compiled-roots-for-places (variable-reference->module-source (#%variable-reference)) "racket-threads"))
  (define start (current-inexact-milliseconds))
  (define (progress fmt . xs)
    (eprintf "  [racket ~a s] ~a\n" (real->decimal-string (/ (- (current-inexact-milliseconds) start) 1000.0) 1)
             (apply format fmt xs)))

  ;; n iterations in the mode; returns their results.
  (define (run-mode mode n work wl size)
    (case mode
      [(sequential) (for/list ([i (in-range n)]) (work))]
      [(coroutine)
       (define boxes (for/list ([i (in-range n)]) (box #f)))
       (define ts (for/list ([b (in-list boxes)]) (thread (lambda () (set-box! b (work))))))
       (for-each thread-wait ts)
       (map unbox boxes)]
      [(futures)
       (define fs (for/list ([i (in-range n)]) (future work)))
       (map touch fs)]
      [else (error 'run-mode "~a" mode)]))

  ;; Places: started and pinged before timing; the timed part sends the work
  ;; and collects the results.
  (define (start-places n)
    (parameterize ([current-compiled-file-roots (or place-roots (current-compiled-file-roots))])
      (define ps (for/list ([i (in-range n)]) (start-worker-place)))
      (for ([p ps]) (place-channel-put p 'ping))
      (for ([p ps]) (place-channel-get p))
      ps))
  (define (stop-places ps)
    (for ([p ps]) (place-channel-put p 'stop))
    (for-each place-wait ps))

  ;; #(real cpu gc results)
  (define (measure thunk)
    (collect-garbage)
    (define g0 (current-gc-milliseconds))
    (define c0 (current-process-milliseconds))
    (define t0 (current-inexact-milliseconds))
    (define v (thunk))
    (define t1 (current-inexact-milliseconds))
    (vector (- t1 t0) (- (current-process-milliseconds) c0) (- (current-gc-milliseconds) g0) v))

  (define (fmt v) (real->decimal-string v 3))
  (define startups (make-hasheqv))          ; n -> (min-ms . max-ms) of place startup

  (for ([wl (in-list workloads)])
    (define size (cdr (assoc wl sizes)))
    (define shared? (member wl shared-workloads))
    ;; a fresh thunk per measurement: the shared ones get a fresh table or port
    (define (fresh-work) (if shared? (make-shared-work wl size) (lambda () (run-workload wl size dirs))))
    (define modes (if shared? (remq 'places all-modes) all-modes))
    (define expected ((fresh-work)))
    (define changed 0)                      ; measurements whose results differed
    (for ([n (in-list ns)])
      (define best (make-hasheq))
      (define startup-ms +inf.0)
      (for ([r (in-range runs)])
        (for ([m (in-list modes)])
          (define res
            (if (eq? m 'places)
                (let* ([t0 (current-inexact-milliseconds)]
                       [ps (start-places n)]
                       [t1 (current-inexact-milliseconds)])
                  (set! startup-ms (min startup-ms (- t1 t0)))
                  (begin0
                    (measure (lambda ()
                               (for ([p ps]) (place-channel-put p (list wl size dirs)))
                               (for/list ([p ps]) (place-channel-get p))))
                    (stop-places ps)))
                (measure (lambda () (run-mode m n (fresh-work) wl size)))))
          (unless (andmap (lambda (v) (equal? v expected)) (vector-ref res 3))
            (set! changed (add1 changed)))
          (define old (hash-ref best m #f))
          (when (or (not old) (< (vector-ref res 0) (vector-ref old 0)))
            (hash-set! best m res))))
      (define seq (vector-ref (hash-ref best 'sequential) 0))
      (for ([m (in-list modes)])
        (define res (hash-ref best m))
        (printf "racket.~a.~a.n~a ~a x ~a ~a ~a\n" wl m n (fmt (/ seq (max (vector-ref res 0) 1e-3)))
                (fmt (vector-ref res 0)) (fmt (vector-ref res 1)) (fmt (vector-ref res 2))))
      (unless shared?
        (hash-update! startups n (lambda (r) (cons (min (car r) startup-ms) (max (cdr r) startup-ms)))
                      (cons startup-ms startup-ms)))
      (flush-output)
      (progress "~a n=~a: ~a" wl n
                (string-join (for/list ([m modes])
                               (format "~a ~ax" m (real->decimal-string
                                                   (/ seq (vector-ref (hash-ref best m) 0)) 2)))
                             ", ")))
    (unless (zero? changed)
      (printf "# ~a: ~a measurement(s) gave other results than the warmup (hash-dir: files changed)\n" wl changed)))
  (unless (zero? (hash-count startups))
    (printf "# places cells exclude starting the places (and pinging them): ~a\n"
            (string-join (for/list ([n (sort (hash-keys startups) <)])
                           (define r (hash-ref startups n))
                           (format "~a place(s) ~a-~a ms" n (inexact->exact (round (car r)))
                                   (inexact->exact (round (cdr r)))))
                         ", "))))
