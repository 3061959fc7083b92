#!chezscheme
;;; bench/bench-workloads.sls -- the workloads of bench/threads.ss, in a
;;; library so that places (bench/bench-places.sls) and bench/places.ss run
;;; the very same code as the threads suite.  The bench commands of
;;; bin/spindle put bench/ on the library path.
(library (bench-workloads)
  (export fib strfib* strfib hash-nums hash-nums-rounds full-string-hash hash-digs hash-dir
          hash-nums-shared hash-digs-shared
          consfib n2sfib portfib strfib-sp digs-only strhash range-sum
          workload-procedure)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (rename (only (chezscheme) make-parameter) (make-parameter chez-make-parameter))
          (only (spindle) make-parameter make-concurrent-hashtable concurrent-hashtable-set!
                concurrent-hashtable-ref make-synchronized-port))

  (define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))

  ;; Every sum goes to a string and back.
  (define (strfib* n)
    (if (< n 2)
        n
        (string->number (number->string (+ (strfib* (- n 1)) (strfib* (- n 2)))))))

  ;; The same through a conversion path that reads a (Chez) parameter on each
  ;; call and passes it on.
  (define current-radix (chez-make-parameter 10))
  (define (num->str x) (number->string x (current-radix)))
  (define (str->num s) (string->number s (current-radix)))
  (define (strfib n)
    (if (< n 2)
        n
        (str->num (num->str (+ (strfib (- n 1)) (strfib (- n 2)))))))

  ;; 10^k fixnum keys into a fresh equal?-based table, then read back; 3 rounds.
  (define hash-nums-rounds 3)
  (define (hash-nums k)
    (let ([n (expt 10 k)])
      (let round ([r 0] [acc 0])
        (if (= r hash-nums-rounds)
            acc
            (let ([h (make-hashtable equal-hash equal?)])
              (do ([i 0 (+ i 1)]) ((= i n)) (hashtable-set! h i (+ i r)))
              (round (+ r 1)
                     (let sum ([i 0] [s acc])
                       (if (= i n) s (sum (+ i 1) (+ s (hashtable-ref h i 0)))))))))))

  ;; Chez's string-hash (and equal-hash) look at only part of a long
  ;; string (two 6M-char strings that differ at index 5000000 hash the
  ;; same), where Racket's, Guile's and CPython's hash every character: hash
  ;; every character here too, in Scheme.
  (define (full-string-hash s)
    (let ([n (string-length s)])
      (let loop ([i 0] [h 5381])
        (if (fx= i n)
            h
            (loop (fx+ i 1)
                  (fxlogand (fx+ (fx* h 33) (char->integer (string-ref s i))) #xffffffffff))))))

  ;; The decimal digits of 0 .. m-1 written to a string port, then hashed.
  (define (hash-digs m)
    (let-values ([(p get) (open-string-output-port)])
      (do ([i 0 (+ i 1)]) ((= i m)) (write i p))
      (full-string-hash (get))))

;; ---- shared variants (bench/threads.ss): (WORKLOAD size) returns a fresh
  ;; work thunk, whose calls (one per thread) share one structure.

  ;; hash-nums with one concurrent table for all threads: each call takes
  ;; its own 10^k keys (same checksum as hash-nums).
  (define (hash-nums-shared k)
    (let ([n (expt 10 k)] [t (make-concurrent-hashtable equal-hash equal?)] [next (box 0)])
      (lambda ()
        (let ([base (* n (let claim () (let ([j (unbox next)]) (if (box-cas! next j (+ j 1)) j (claim)))))])
          (let round ([r 0] [acc 0])
            (if (= r hash-nums-rounds)
                acc
                (begin
                  (do ([i 0 (+ i 1)]) ((= i n)) (concurrent-hashtable-set! t (+ base i) (+ i r)))
                  (round (+ r 1)
                         (let sum ([i 0] [s acc])
                           (if (= i n) s (sum (+ i 1) (+ s (concurrent-hashtable-ref t (+ base i) 0)))))))))))))

  ;; Every call writes the digits of 0 .. m-1 to one synchronized string
  ;; port; returns m.
  (define (hash-digs-shared m)
    (let-values ([(p get) (open-string-output-port)])
      (let ([sp (make-synchronized-port p)])
        (lambda ()
          (do ([i 0 (+ i 1)]) ((= i m)) (write i sp))
          m))))

  (define (string-prefix? p s)
    (and (<= (string-length p) (string-length s)) (string=? p (substring s 0 (string-length p)))))

  ;; Every file under the trees (no dot entries, no results/ compiled/ or
  ;; __pycache__ directories), read as UTF-8 text and hashed; `passes` times.
  (define skipped-dirs '("results" "compiled" "__pycache__"))
  (define utf-8 (make-transcoder (utf-8-codec) (eol-style none) (error-handling-mode replace)))
  (define (read-text path)
    (call-with-port (open-file-input-port path (file-options) (buffer-mode block) utf-8)
      get-string-all))
  (define (hash-tree dir acc)
    (fold-left
      (lambda (acc name)
        (let ([p (string-append dir "/" name)])
          (cond
            [(string-prefix? "." name) acc]
            [(file-directory? p #f) (if (member name skipped-dirs) acc (hash-tree p acc))]
            [(file-regular? p #f)
             (let ([s (read-text p)])
               (if (eof-object? s) acc (fxlogand (+ acc (full-string-hash s)) #xffffffff)))]
            [else acc])))
      acc
      (sort string<? (directory-list dir))))
  (define (hash-dir passes dirs)
    (let loop ([i 0] [acc 0])
      (if (= i passes)
          acc
          (loop (+ i 1) (fold-left (lambda (acc d) (if (file-directory? d) (hash-tree d acc) acc)) acc dirs)))))

  ;; ---- analysis workloads
  ;; (the identity goes through a mutable vector so that the compiler cannot
  ;; fold (car (cons x '())) away)
  (define identity-cell (vector (lambda (x) x)))
  (define (consfib n)
    (if (< n 2) n (car ((vector-ref identity-cell 0) (cons (+ (consfib (- n 1)) (consfib (- n 2))) '())))))
  (define (n2sfib n)
    (if (< n 2)
        n
        (let ([s (+ (n2sfib (- n 1)) (n2sfib (- n 2)))])
          (if (string? (number->string s)) s 0))))
  (define (port->str x)
    (let-values ([(p get) (open-string-output-port)]) (write x p) (get)))
  (define (portfib n)
    (if (< n 2) n (string->number (port->str (+ (portfib (- n 1)) (portfib (- n 2)))))))
  (define spindle-radix (make-parameter 10))
  (define (strfib-sp n)
    (if (< n 2)
        n
        (string->number (number->string (+ (strfib-sp (- n 1)) (strfib-sp (- n 2))) (spindle-radix))
                        (spindle-radix))))
  (define (digs-only m)
    (let-values ([(p get) (open-string-output-port)])
      (do ([i 0 (+ i 1)]) ((= i m)) (write i p))
      (string-length (get))))
  (define big-string #f)                ; made on first use (places import this library too)
  (define (strhash reps)
    (unless big-string (set! big-string (make-string 1000000 #\7)))
    (let loop ([i 0] [acc 0])
      (if (= i reps) acc (loop (+ i 1) (fxlogxor acc (full-string-hash big-string))))))

  ;; bench/executors.ss: lo + ... + hi
  (define (range-sum lo hi)
    (let loop ([i lo] [s 0]) (if (> i hi) s (loop (+ i 1) (+ s i)))))

  ;; name -> procedure (hash-dir takes passes and the list of directories)
  (define (workload-procedure name)
    (cond
      [(assoc name `(("fib" . ,fib) ("strfib*" . ,strfib*) ("strfib" . ,strfib)
                     ("hash-nums" . ,hash-nums) ("hash-digs" . ,hash-digs) ("hash-dir" . ,hash-dir)
                     ("consfib" . ,consfib) ("n2sfib" . ,n2sfib) ("portfib" . ,portfib)
                     ("strfib-sp" . ,strfib-sp) ("digs-only" . ,digs-only) ("strhash" . ,strhash)
                     ("range-sum" . ,range-sum)))
       => cdr]
      [else (error 'workload-procedure "unknown workload" name)])))
