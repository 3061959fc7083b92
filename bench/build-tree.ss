;;; scheme --program bench/build-tree.ss DIR N [SEED]: writes N generated
;;; R6RS libraries, DIR/gen/lib0.sls ... (gen libN-1), for `spindle build`
;;; benchmarks.  Each has a record type, a macro and 8 procedures of 7-11
;;; lines (numeric loops, list, string and record work, calls into what it
;;; imports), 70-100 lines in all, and imports 1-3 earlier
;;; libraries (none for lib0), chosen by a fixed pseudo-random sequence, so
;;; the same N and SEED give the same tree.
(import (chezscheme))

(define seed 1)
(define (next! k)                       ; -> 0 .. k-1
  (set! seed (mod (+ (* seed 1103515245) 12345) 2147483648))
  (mod (quotient seed 65536) k))

(define procedures 8)

(define (body i j imports)
  (let ([callee (and (pair? imports)
                     (let ([m (list-ref imports (next! (length imports)))])
                       (format "p~a-~a" m (next! procedures))))])
    (case (next! 4)
      [(3)
       `(define (,(string->symbol (format "p~a-~a" i j)) n)
          (let ([cells (map (lambda (k) (,(string->symbol (format "make-cell~a" i)) k (* k ,(+ 1 (next! 7)))))
                            (iota (fxmin n 12)))])
            (let loop ([cs cells] [lo 0] [hi 0])
              (if (null? cs)
                  (+ lo hi ,(if callee `(,(string->symbol callee) (fxmin n 2)) (next! 10)))
                  (let ([a (,(string->symbol (format "cell~a-key" i)) (car cs))]
                        [b (,(string->symbol (format "cell~a-value" i)) (car cs))])
                    (,(string->symbol (format "order~a!" i)) a b)
                    (loop (cdr cs) (+ lo a) (+ hi b)))))))]
      [(0)
       `(define (,(string->symbol (format "p~a-~a" i j)) n)
          (let loop ([k 0] [acc ,(next! 100)])
            (cond
              [(fx>= k n) ,(if callee `(+ acc (,(string->symbol callee) (fxmin n 3))) 'acc)]
              [(fxeven? k) (loop (fx+ k 1) (+ acc (* k ,(+ 1 (next! 9)))))]
              [(fx= (fxmodulo k ,(+ 3 (next! 5))) 0) (loop (fx+ k 2) (- acc k))]
              [else (loop (fx+ k 1) (+ acc (quotient k ,(+ 2 (next! 7)))))])))]
      [(1)
       `(define (,(string->symbol (format "p~a-~a" i j)) n)
          (let* ([xs (iota (fxmin n 20))]
                 [ys (map (lambda (x) (* x ,(+ 1 (next! 5)))) xs)]
                 [zs (filter (lambda (y) (odd? (+ y ,(next! 4)))) ys)])
            (fold-left (lambda (acc z)
                         (if (> z ,(next! 30))
                             (+ acc ,(if callee `(,(string->symbol callee) (fxmin z 3)) 'z))
                             (- acc 1)))
                       0 zs)))]
      [else
       `(define (,(string->symbol (format "p~a-~a" i j)) n)
          (let ([s (make-string (fxmin n 16) #\a)])
            (do ([k 0 (fx+ k 1)]) ((fx= k (string-length s)))
              (string-set! s k (integer->char (+ 97 (fxmodulo (* k ,(+ 3 (next! 11))) 26)))))
            (let ([t (list->string (reverse (string->list s)))])
              (+ (string-length t)
                 (if (string=? s t) 1 0)
                 ,(if callee `(,(string->symbol callee) (fxmin n 2)) (next! 10))))))])))

(define (write-library dir i)
  (let* ([imports (if (= i 0)
                      '()
                      (let loop ([k (+ 1 (next! 3))] [acc '()])
                        (if (= k 0) acc
                            (let ([m (next! i)]) (loop (- k 1) (if (memv m acc) acc (cons m acc)))))))]
         [file (format "~a/gen/lib~a.sls" dir i)])
    (call-with-output-file file
      (lambda (out)
        (pretty-print
          `(library (gen ,(string->symbol (format "lib~a" i)))
             (export ,@(map (lambda (j) (string->symbol (format "p~a-~a" i j))) (iota procedures)))
             (import (chezscheme) ,@(map (lambda (m) `(gen ,(string->symbol (format "lib~a" m)))) imports))
             (define-record-type ,(string->symbol (format "cell~a" i)) (fields key value))
             (define-syntax ,(string->symbol (format "order~a!" i))
               (syntax-rules ()
                 [(_ a b) (when (> a b) (let ([t a]) (set! a b) (set! b t)))]))
             ,@(map (lambda (j) (body i j imports)) (iota procedures)))
          out))
      'replace)))

(let ([args (cdr (command-line))])
  (unless (<= 2 (length args) 3)
    (display "usage: scheme --program build-tree.ss DIR N [SEED]\n" (current-error-port))
    (exit 2))
  (let ([dir (car args)] [n (string->number (cadr args))])
    (when (= (length args) 3) (set! seed (string->number (caddr args))))
    (unless (file-directory? dir) (mkdir dir))
    (unless (file-directory? (string-append dir "/gen")) (mkdir (string-append dir "/gen")))
    (for-each (lambda (i) (write-library dir i)) (iota n))))
