#!chezscheme
;;; MG's grids: cubes of n^3 doubles in shared flvectors, n = 2^k + 2 at
;;; level k (the interior 1 .. n-2 and one periodic ghost layer, 0-based
;;; indices), element (i1, i2, i3) at byte offset ((i3 n + i2) n + i1) 8,
;;; read and written through the vector's raw address (nas raw).
;;;
;;; A grid may hold only some of its planes (a member's slab in mode mpi):
;;; planes p0 .. p1-1 in a vector of (p1 - p0) n^2 doubles, and a base
;;; shifted back by p0 planes, so that the operators' absolute offsets
;;; land in it as long as they stay within those planes.
;;;
;;; Also: the split of planes and rows among members, the periodic
;;; border exchange (comm3) in two halves around a barrier, the
;;; initial right-hand side (zran3) and the sum of squares of the norm.
(library (nas mg-grid)
  (export split make-planes
          borders! ghost-planes! zero-planes! sum-squares
          zran3! zran3-extremes zran3-charges!)
  (import (chezscheme) (only (spindle) make-shared-flvector) (nas random) (nas raw))

  ;; Member id's block of first .. end-1: with q = count div np and
  ;; r = count mod np, members below r get q+1.  Returns (values lo hi).
  (define (split first end np id)
    (let-values ([(q r) (fxdiv-and-mod (fx- end first) np)])
      (let ([lo (fx+ first (fx* id q) (fxmin id r))])
        (values lo (fx+ lo q (if (fx< id r) 1 0))))))

  ;; -> (values vector base): planes p0 .. p1-1 of a grid of side n, 0.0.
  ;; The vector must stay reachable while base is in use.
  (define (make-planes n p0 p1)
    (let ([v (make-shared-flvector (fx* (fx- p1 p0) (fx* n n)) 0.0)])
      (values v (fx- (shared-address v) (fx* p0 (fx* n n))))))

  ;; comm3, first half: the i1 and i2 ghosts of planes lo .. hi-1, from
  ;; their own interior; the producer of those planes calls it.
  (define (borders! a n lo hi)
    (let ([row (fx* 8 n)] [last (fx* 8 (fx- n 2))] [end (fx* 8 (fx- n 1))])
      (do ([i3 lo (fx+ i3 1)]) ((fx= i3 hi))
        (let ([p (fx* (fx* i3 n) row)])
          (do ([i2 1 (fx+ i2 1)]) ((fx= i2 (fx- n 1)))
            (let ([c (fx+ p (fx* i2 row))])
              (g! a c (g@ a (fx+ c last)))
              (g! a (fx+ c end) (g@ a (fx+ c 8)))))
          (let ([r0 p] [r1 (fx+ p row)] [rl (fx+ p (fx* (fx- n 2) row))] [re (fx+ p (fx* (fx- n 1) row))])
            (do ([o 0 (fx+ o 8)]) ((fx= o row))
              (g! a (fx+ r0 o) (g@ a (fx+ rl o)))
              (g! a (fx+ re o) (g@ a (fx+ r1 o)))))))))

  ;; comm3, second half, after a barrier: rows lo .. hi-1 of the ghost
  ;; planes 0 and n-1, copied whole (ghosts included) from planes n-2 and 1.
  (define (ghost-planes! a n lo hi)
    (let* ([row (fx* 8 n)] [plane (fx* n row)]
           [last (fx* (fx- n 2) plane)] [end (fx* (fx- n 1) plane)])
      (do ([i2 lo (fx+ i2 1)]) ((fx= i2 hi))
        (let ([r (fx* i2 row)])
          (do ([o r (fx+ o 8)]) ((fx= o (fx+ r row)))
            (g! a o (g@ a (fx+ last o)))
            (g! a (fx+ end o) (g@ a (fx+ plane o))))))))

  ;; Planes lo .. hi-1 (ghosts included) set to 0.
  (define (zero-planes! a n lo hi)
    (let ([plane (fx* 8 (fx* n n))])
      (do ([o (fx* lo plane) (fx+ o 8)]) ((fx>= o (fx* hi plane)))
        (g! a o 0.0))))

  ;; The sum of squares over the interior points of planes lo .. hi-1.
  ;; The running sum enters and leaves each row's loop through a flonum
  ;; operation (s + -0.0 is s, bit for bit): Chez 10 keeps a loop's flonum
  ;; unboxed only then, and boxes it at every point when it comes in and
  ;; goes out as a plain value.
  (define (sum-squares a n lo hi)
    (let ([row (fx* 8 n)])
      (let planes ([i3 lo] [s 0.0])
        (if (fx= i3 hi)
            s
            (let rows ([i2 1] [s s])
              (if (fx= i2 (fx- n 1))
                  (planes (fx+ i3 1) s)
                  (let* ([c (fx* (fx+ (fx* i3 n) i2) row)] [end (fx+ c (fx* 8 (fx- n 1)))])
                    (rows (fx+ i2 1)
                          (f+ -0.0
                              (let points ([o (fx+ c 8)] [s (f+ s -0.0)])
                                (if (fx= o end)
                                    s
                                    (let ([x (g@ a o)]) (points (fx+ o 8) (f+ s (f* x x)))))))))))))))

  ;; zran3: the interior of the top grid (n = nx + 2) 0 but at the 10
  ;; largest (+1) and the 10 smallest (-1) of the NPB generator's deviates,
  ;; drawn in i1, i2, i3 order from the standard seed; then the ghosts.
  ;; The deviates are distinct (the generator's states are), so the two
  ;; sets do not depend on the scan order, and the extremes of a union of
  ;; slabs are the extremes of the slabs' extremes.
  (define (zran3! a nx)
    (let ([n (fx+ nx 2)])
      (let-values ([(large small) (zran3-extremes nx 1 (fx+ nx 1))])
        (zero-planes! a n 0 n)
        (zran3-charges! a large small)
        (borders! a n 1 (fx- n 1))
        (ghost-planes! a n 0 n))))

  ;; The 10 largest and the 10 smallest deviates of interior planes
  ;; lo .. hi-1 (1 .. nx) of the top grid: (values large small), lists of
  ;; (deviate . byte offset in a grid of side nx + 2); the deviates of plane
  ;; i3 start nx^2 (i3 - 1) states after the seed.  Fewer than 10 points
  ;; leave entries with offset #f.
  (define (zran3-extremes nx lo hi)
    (let* ([n (fx+ nx 2)] [row (fx* 8 n)] [plane (fx* n row)]
           [a1 (random-power nas-multiplier nx)]
           [a2 (random-power nas-multiplier (fx* nx nx))]
           [large (make-vector 10 (cons 0.0 #f))]  ; (value . offset), ascending
           [small (make-vector 10 (cons 1.0 #f))]) ; descending
      ;; puts entry in sorted best (better? orders it), dropping best[0]
      (define (insert! best entry better?)
        (vector-set! best 0 entry)
        (let loop ([i 0])
          (when (and (fx< (fx+ i 1) 10)
                     (better? (car (vector-ref best i)) (car (vector-ref best (fx+ i 1)))))
            (let ([t (vector-ref best i)])
              (vector-set! best i (vector-ref best (fx+ i 1)))
              (vector-set! best (fx+ i 1) t)
              (loop (fx+ i 1))))))
      (let fill ([i3 lo] [x3 (random-next nas-seed (random-power a2 (fx- lo 1)))])
        (when (fx< i3 hi)
          (let rows ([i2 1] [x2 x3])
            (when (fx<= i2 nx)
              (let ([off (fx+ (fx* i3 plane) (fx* i2 row) 8)])
                (let points ([i1 0] [x x2])
                  (when (fx< i1 nx)
                    (let* ([x (random-next x nas-multiplier)]
                           [o (fx+ off (fx* 8 i1))]
                           [d (random-scale x)])
                      (when (fl> d (car (vector-ref large 0))) (insert! large (cons d o) fl>))
                      (when (fl< d (car (vector-ref small 0))) (insert! small (cons d o) fl<))
                      (points (fx+ i1 1) x)))))
              (rows (fx+ i2 1) (random-next x2 a1))))
          (fill (fx+ i3 1) (random-next x3 a2))))
      (values (vector->list large) (vector->list small))))

  ;; +1 at the offsets of large, -1 at those of small (entries of
  ;; zran3-extremes; offsets #f skipped).
  (define (zran3-charges! a large small)
    (for-each (lambda (e) (when (cdr e) (g! a (cdr e) -1.0))) small)
    (for-each (lambda (e) (when (cdr e) (g! a (cdr e) 1.0))) large)))
