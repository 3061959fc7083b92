;; ops-table.ss -- the operations measured by ops.ss and lock-count.ss
;; (loaded, not run).  Expects N (calls per work unit) to be defined.
;; ops: alist name -> thunk doing N calls of the operation.
;; fixnum -> decimal string by hand: no port, no parameter, one allocation.
(define (fixnum->decimal n)
  (if (fx= n 0)
      "0"
      (let* ([neg? (fx< n 0)]
             [digits (let count ([m n] [k 0]) (if (fx= m 0) k (count (fxquotient m 10) (fx+ k 1))))]
             [len (if neg? (fx+ digits 1) digits)]
             [s (make-string len)])
        (when neg? (string-set! s 0 #\-))
        (let fill ([m n] [i (fx- len 1)])
          (unless (fx= m 0)
            (string-set! s i (integer->char (fx+ 48 (fxabs (fxremainder m 10)))))
            (fill (fxquotient m 10) (fx- i 1))))
        s)))

(define-syntax defop
  (syntax-rules ()
    [(_ table (name i) setup ... body) (defop* table 1 (name i) setup ... body)]))
;; defop* runs REPS x N calls (for operations much cheaper than the rest)
(define-syntax defop*
  (syntax-rules ()
    [(_ table reps (name i) setup ... body)
     (set! table
       (cons (cons 'name
                   (lambda ()
                     setup ...
                     ;; the last result is returned, so that no call can
                     ;; be dropped as dead code (Chez 10's cptypes would
                     ;; drop a discardable call whose value is only tested)
                     (let loop ([i 0] [last #f])
                       (if (fx= i (if use-reps? (fx* reps N) N))
                           last
                           (loop (fx+ i 1) body)))))
             table))]))
(define ops '())
(define use-reps? #t)                  ; lock-count.ss turns the REPS factors off
(define user-thread-param (make-thread-parameter 0))
(define user-global-param (make-parameter 0))
(define big (expt 10 30))
;; conversions
(defop ops (number->string i) (number->string (fx+ i 1000000)))
(defop ops (number->string-radix i) (number->string (fx+ i 1000000) 10))
(defop ops (number->string-flonum i) (number->string (fixnum->flonum i)))
(defop ops (number->string-bignum i) (number->string big))
(defop ops (format-d i) (format "~d" (fx+ i 1000000)))
(defop ops (format-a i) (format "~a" (fx+ i 1000000)))
(defop ops (format-x i) (format "~x" (fx+ i 1000000)))
(defop ops (format-2f i) (format "~,2f" (fixnum->flonum i)))
(defop ops (number->string-precision i) (number->string (fixnum->flonum i) 10 53))
(defop ops (with-output-to-string i) (with-output-to-string (lambda () (display (fx+ i 1000000)))))
(defop* ops 2 (fresh-port i) (let ([p (open-output-string)]) (display (fx+ i 1000000) p) (get-output-string p)))
(defop* ops 3 (reused-port i) [define p (open-output-string)] (begin (display (fx+ i 1000000) p) (get-output-string p)))
(defop* ops 3 (fixnum->decimal i) (fixnum->decimal (fx+ i 1000000)))
(defop* ops 5 (string->number i) [define s (string-copy "1234567")] (string->number s))
;; parameters
(defop ops (parameterize-radix i) (parameterize ([print-radix 10]) i))
(defop* ops 2 (set-thread-param i) (user-thread-param i))
(defop* ops 20 (read-thread-param i) (user-thread-param))
(defop* ops 20 (set-global-param i) (user-global-param i))
(defop ops (guard i) (guard (c [#t 0]) i))
(defop ops (with-exception-handler i) (with-exception-handler (lambda (c) 0) (lambda () i)))
(defop ops (dynamic-wind i) (dynamic-wind void (lambda () i) void))
(defop ops (call/cc i) (call/cc (lambda (k) i)))
(defop ops (set-exception-state i) [define s (current-exception-state)] (current-exception-state s))
(defop ops (set-current-output-port i) [define p (current-output-port)] (current-output-port p))
;; allocation, hashing, symbols
(defop* ops 20 (list-of-4 i) (list i 2 3 4))
(defop* ops 10 (make-string-7 i) (make-string 7 #\a))
(defop* ops 10 (equal-hash-fixnum i) (equal-hash (fx+ i 1000000)))
(defop* ops 5 (equal-table-set i) [define h (make-hashtable equal-hash equal?)] (hashtable-set! h (fxand i 4095) i))
(defop* ops 5 (eq-table-set i) [define h (make-eq-hashtable)] (eq-hashtable-set! h (fxand i 4095) i))
(defop ops (string->symbol-old i) [define name (string-copy "lambda")] (string->symbol name))   ; a literal would be folded
(defop ops (string->symbol-new i) [define pre (symbol->string (gensym))]
  (string->symbol (string-append pre (fixnum->decimal i))))
(set! ops (reverse ops))

