;;; The collector policy of every spindle program: when to collect which
;;; generation (collect-adaptively, installed as Chez's collect-request
;;; handler by the scheduler when it starts), and the one full collection
;;; that moves the compiled libraries to the oldest generation.
;;; SPINDLE_GCDEBUG=1 prints a line per collection.
(library (spindle private core gc-policy)
  (export install-gc-policy! collect-libraries!)
  (import (chezscheme) (only (spindle private host collector) collect-generation))

  ;; Compiled libraries load into the youngest generation, and a program's
  ;; first collections would copy them again, generation by generation,
  ;; with every worker stopped (the demo's 45 ms parallel run took 10%
  ;; longer).  One full collection when the scheduler starts (3 ms) moves
  ;; them to the oldest.  Chez refuses it once other OS threads exist; then
  ;; it is skipped.
  (define (collect-libraries!)
    (guard (c [#t #f]) (collect (collect-maximum-generation)) #t))

  ;; ---------------------------------------------------------------- collector policy
  ;; Chez's default handler collects generation g every radix^g collections,
  ;; whatever it finds there, and Chez 9.5.8 copies every object it keeps,
  ;; one generation up (at ~1 ns a byte for parked continuations).  A
  ;; program that parks many threads keeps most of what it allocates, and
  ;; the radix rule copied each parked thread four times into the oldest
  ;; generation, then again at every collection of it (a million parked
  ;; threads: 9.5 s of collections, 4.7 s of them two of the oldest).
  ;; This handler, installed once for every spindle program (a program's
  ;; own handler replaces it):
  ;; - growing: when the last collection kept more than 1/8 of what was
  ;;   allocated since the one before, the program is building long-lived
  ;;   data; it collects generations 0 to maxg-1 into the oldest, so each
  ;;   survivor is copied once, and the oldest generation only once the heap
  ;;   is `growth` times what it held after its last collection (each such
  ;;   collection costs a copy of the live heap: paced geometrically, they
  ;;   add a fraction of the final heap).  growth starts at 4 and grows 4x
  ;;   (to 64 at most) each time a collection of the oldest generation frees
  ;;   less than a quarter of the heap, and returns to 4 when one frees more;
  ;; - otherwise the radix rule, except that the oldest generation waits
  ;;   until the heap is twice what it held after its last collection, so a
  ;;   program whose heap does not grow never copies it again.
  ;; The heap bound is that of a copying collector paced at 2x-4x.
  (define gc-count 0)          ; collections requested so far
  (define gc-after 0)          ; bytes-allocated after the last collection
  (define gc-full-after 0)     ; ... after the last collection of the oldest generation
  (define gc-growing? #f)      ; the last collection kept more than 1/8 of what was new
  (define gc-floor 16777216)   ; pacing starts from a 16 MB heap
  (define gc-growth 4)         ; see above
  ;; The largest g <= maxg such that radix^g divides n (Chez's own rule).
  (define (radix-due n radix maxg)
    (let loop ([g 0] [m radix])
      (if (and (fx< g maxg) (fx= 0 (fxmodulo n m))) (loop (fx+ g 1) (fx* m radix)) g)))
  (define (collect-adaptively)
    (set! gc-count (fx+ gc-count 1))
    (let* ([maxg (collect-maximum-generation)]
           [before (bytes-allocated)]
           [paced (lambda (k) (>= before (* k (max gc-full-after gc-floor))))]
           [g (if gc-growing?
                  (if (paced gc-growth) maxg (fx- maxg 1))
                  (let ([g (radix-due gc-count (collect-generation-radix) maxg)])
                    (if (and (fx= g maxg) (not (paced 2))) (fx- maxg 1) g)))]
           [t0 (and gc-debug (real-time))])
      (collect-generation g)
      (let ([after (bytes-allocated)])
        (set! gc-growing? (> (* 8 (- after gc-after)) (- before gc-after)))
        (set! gc-after after)
        (when (fx= g maxg)
          (set! gc-growth (if (> (* 4 after) (* 3 before)) (fxmin 64 (fx* 4 gc-growth)) 4))
          (set! gc-full-after after)))
      (when gc-debug
        (fprintf (console-error-port) "gc g=~a ~a ms heap ~a MB\n" g (- (real-time) t0)
                 (quotient (bytes-allocated) 1000000)))))
  (define gc-debug (getenv "SPINDLE_GCDEBUG"))
  (define (install-gc-policy!) (collect-request-handler collect-adaptively)))
