#!chezscheme
;;; CG's test matrix (NPB 3.4 specification, CG, "makea"): a sum of n
;;; random sparse outer products, A = sum_i s_i v_i v_i^T + (rcond - shift) I,
;;; with s_i = rcond^((i-1)/n) and v_i a random sparse vector of nonzer
;;; positions (drawn with the NPB generator) plus 0.5 at position i.
;;;
;;; The result is in compressed rows, 0-based: row j's entries are
;;; rowstr[j] .. rowstr[j+1]-1 of colidx (ascending columns) and the
;;; values.  Duplicate (row, column) contributions are summed in the order
;;; they are generated, as the reference does, so the matrix is the
;;; reference's to the last bit.
(library (nas cg-matrix)
  (export build-cg-matrix cg-matrix? cg-matrix-n cg-matrix-rowstr cg-matrix-colidx
          cg-matrix-values)
  (import (chezscheme) (nas random))

  ;; rowstr, colidx: fxvectors; values: bytevector of doubles.
  (define-record-type cg-matrix
    (fields n rowstr colidx values)
    (sealed #t))

  (define rcond 0.1)

  ;; The smallest power of two, at least 2, not below n: random positions
  ;; are drawn in 1 .. nn1 and those beyond n are rejected.
  (define (power-of-two-above n)
    (let loop ([p 2]) (if (fx< p n) (loop (fx* p 2)) p)))

  ;; The random sparse vectors, one per outer product i (1-based), with the
  ;; generator state running through all of them: row i holds count[i]
  ;; positions (1-based) and values at i*(nonzer+1) .. of pos and val.
  ;; Returns (values count pos val).
  (define (generate-vectors n nonzer)
    (let* ([width (fx+ nonzer 1)]
           [nn1 (power-of-two-above n)]
           [count (make-fxvector (fx+ n 1) 0)]
           [pos (make-fxvector (fx* (fx+ n 1) width) 0)]
           [val (make-bytevector (fx* 8 (fx* (fx+ n 1) width)) 0)])
      (define (val-set! k x) (bytevector-ieee-double-native-set! val (fx* 8 k) x))
      (define (seen? base m p)
        (let loop ([k 0]) (and (fx< k m) (or (fx= (fxvector-ref pos (fx+ base k)) p) (loop (fx+ k 1))))))
      ;; the reference starts its generator with one draw before makea
      (let outer ([i 1] [x (random-next nas-seed nas-multiplier)])
        (when (fx<= i n)
          (let ([base (fx* i width)])
            (let draw ([m 0] [x x])
              (if (fx< m nonzer)
                  (let* ([x1 (random-next x nas-multiplier)]
                         [x2 (random-next x1 nas-multiplier)]
                         [p (fx+ 1 (flonum->fixnum (fl* (fixnum->flonum nn1) (random-scale x2))))])
                    (if (or (fx> p n) (seen? base m p))
                        (draw m x2)
                        (begin
                          (fxvector-set! pos (fx+ base m) p)
                          (val-set! (fx+ base m) (random-scale x1))
                          (draw (fx+ m 1) x2))))
                  ;; position i gets 0.5, replacing a drawn value or appended
                  (let ([k (let find ([k 0])
                             (cond [(fx= k m) #f]
                                   [(fx= (fxvector-ref pos (fx+ base k)) i) k]
                                   [else (find (fx+ k 1))]))])
                    (if k
                        (begin (val-set! (fx+ base k) 0.5) (fxvector-set! count i m))
                        (begin
                          (fxvector-set! pos (fx+ base m) i)
                          (val-set! (fx+ base m) 0.5)
                          (fxvector-set! count i (fx+ m 1))))
                    (outer (fx+ i 1) x)))))))
      (values count pos val)))

  ;; A as compressed rows.  The contributions are first laid out row by
  ;; row in generation order; each row is then sorted by (column,
  ;; generation order) and equal columns are summed.
  (define (build-cg-matrix n nonzer shift)
    (let-values ([(count pos val) (generate-vectors n nonzer)])
      (let* ([width (fx+ nonzer 1)]
             [ratio (expt rcond (/ 1.0 n))]
             [start (make-fxvector (fx+ n 1) 0)]) ; contributions to row j (0-based) begin at start[j]
        (define (vref k) (bytevector-ieee-double-native-ref val (fx* 8 k)))
        (do ([i 1 (fx+ i 1)]) ((fx> i n))
          (let ([c (fxvector-ref count i)] [base (fx* i width)])
            (do ([k 0 (fx+ k 1)]) ((fx= k c))
              (let ([j (fx- (fxvector-ref pos (fx+ base k)) 1)])
                (fxvector-set! start (fx+ j 1) (fx+ (fxvector-ref start (fx+ j 1)) c))))))
        (do ([j 1 (fx+ j 1)]) ((fx> j n))
          (fxvector-set! start j (fx+ (fxvector-ref start j) (fxvector-ref start (fx- j 1)))))
        (let* ([total (fxvector-ref start n)]
               [tcol (make-fxvector total)]
               [tval (make-bytevector (fx* 8 total))]
               [fill (make-fxvector n 0)])
          (let loop ([i 1] [size 1.0])
            (when (fx<= i n)
              (let ([c (fxvector-ref count i)] [base (fx* i width)])
                (do ([k 0 (fx+ k 1)]) ((fx= k c))
                  (let* ([j (fxvector-ref pos (fx+ base k))]
                         [scale (fl* size (vref (fx+ base k)))])
                    (do ([l 0 (fx+ l 1)]) ((fx= l c))
                      (let* ([jcol (fxvector-ref pos (fx+ base l))]
                             [va (fl* (vref (fx+ base l)) scale)]
                             [va (if (and (fx= jcol j) (fx= j i)) (fl- (fl+ va rcond) shift) va)]
                             [slot (fx+ (fxvector-ref start (fx- j 1)) (fxvector-ref fill (fx- j 1)))])
                        (fxvector-set! fill (fx- j 1) (fx+ (fxvector-ref fill (fx- j 1)) 1))
                        (fxvector-set! tcol slot (fx- jcol 1))
                        (bytevector-ieee-double-native-set! tval (fx* 8 slot) va))))))
              (loop (fx+ i 1) (fl* size ratio))))
          (compress n start tcol tval total)))))

  ;; Sorts each row's contributions and sums equal columns in order.
  (define (compress n start tcol tval total)
    (let ([rowstr (make-fxvector (fx+ n 1) 0)]
          [colidx (make-fxvector total)]
          [vals-out (make-bytevector (fx* 8 total))])
      (let row ([j 0] [out 0])
        (if (fx= j n)
            (begin
              (fxvector-set! rowstr n out)
              (let ([cols (make-fxvector out)] [vals (make-bytevector (fx* 8 out))])
                (do ([k 0 (fx+ k 1)]) ((fx= k out))
                  (fxvector-set! cols k (fxvector-ref colidx k)))
                (bytevector-copy! vals-out 0 vals 0 (fx* 8 out))
                (make-cg-matrix n rowstr cols vals)))
            (let* ([lo (fxvector-ref start j)]
                   [c (fx- (fxvector-ref start (fx+ j 1)) lo)]
                   ;; key: column, then position in generation order
                   [keys (let ([v (make-vector c)])
                           (do ([k 0 (fx+ k 1)]) ((fx= k c) v)
                             (vector-set! v k (fx+ (fx* (fxvector-ref tcol (fx+ lo k)) c) k))))])
              (vector-sort! fx< keys)
              (fxvector-set! rowstr j out)
              (let merge ([k 0] [out out] [col -1] [sum 0.0])
                (define (flush out)
                  (if (fx< col 0)
                      out
                      (begin
                        (fxvector-set! colidx out col)
                        (bytevector-ieee-double-native-set! vals-out (fx* 8 out) sum)
                        (fx+ out 1))))
                (if (fx= k c)
                    (row (fx+ j 1) (flush out))
                    (let* ([key (vector-ref keys k)]
                           [kc (fxquotient key c)]
                           [v (bytevector-ieee-double-native-ref tval (fx* 8 (fx+ lo (fxremainder key c))))])
                      (if (fx= kc col)
                          (merge (fx+ k 1) out col (fl+ sum v))
                          (merge (fx+ k 1) (flush out) kc (fl+ 0.0 v))))))))))))
