#!chezscheme
;;; MG's four grid operators (NPB 3.4 specification, MG), on the raw
;;; addresses of (nas mg-grid), each over a block of planes so that
;;; members of a group can share a grid:
;;;   resid   r = v - A u               (27-point stencil, a1 = 0)
;;;   psinv   u = u + C r               (the smoother, c3 = 0)
;;;   rprj3   s = P r                   (restriction to the coarser grid)
;;;   interp  u = u + Q z               (trilinear prolongation)
;;; Chez 9.5.8 boxes every flonum, each load included, so the cost of an
;;; operator is the number of loads and operations a point: values and
;;; sums needed at i1-1, i1 and i1+1 are carried in loop variables (as the
;;; reference's row buffers do), and resid and psinv share loads and sums
;;; among neighbouring lines and use the stencils' coefficient relations.
;;; Sums are reassociated from the reference's order (rnm2 moves in the
;;; 13th digit), but each point's expression does not depend on np.
(library (nas mg-ops)
  (export resid! psinv! rprj3! interp!)
  (import (chezscheme) (nas raw) (nas mg-grid))

  ;; A's a2 (a0 = -8/3 = -16 a2, a1 = 0, a3 = 1/12 = a2/2) and C's c1
  ;; (c0 = -3/8 = -12 c1, c2 = -1/64 = -c1/2, c3 = 0): the others are
  ;; written through these relations below.
  (define a2 (fl/ 1.0 6.0))
  (define c1 (fl/ 1.0 32.0))

  ;; Binds the byte offsets of row (i2, i3) of a grid of side n and of its
  ;; eight neighbour rows in the (i2, i3) plane: c is the row itself; s, nn
  ;; are i2-1, i2+1; b, t are i3-1, i3+1; sb, nb, st, nt the diagonals.
  (define-syntax with-rows
    (syntax-rules ()
      [(_ n i2 i3 (c s nn b t sb nb st nt) body ...)
       (let* ([row (#3%fx* 8 n)] [plane (#3%fx* row n)]
              [c (#3%fx* (#3%fx+ (#3%fx* i3 n) i2) row)]
              [s (#3%fx- c row)] [nn (#3%fx+ c row)] [b (#3%fx- c plane)] [t (#3%fx+ c plane)]
              [sb (#3%fx- s plane)] [nb (#3%fx- nn plane)] [st (#3%fx+ s plane)] [nt (#3%fx+ nn plane)])
         body ...)]))

  ;; The sum of a's four values at offset o of rows w, x, y, z, left to right.
  (define-syntax sum4
    (syntax-rules ()
      [(_ a o w x y z)
       (f+ (f+ (f+ (g@ a (#3%fx+ w o)) (g@ a (#3%fx+ x o))) (g@ a (#3%fx+ y o))) (g@ a (#3%fx+ z o)))]))

  ;; Every flonum is a 16-byte box on 9.5.8, loads included: resid and
  ;; psinv sweep L = 4 neighbouring lines (i2 .. i2+L-1, i3) of a plane at
  ;; once (2 when the n-2 interior lines are not a multiple of 4), so that
  ;; the 3 (L+2) rows they read are loaded once and the vertical pairs
  ;; (i3-1) + (i3+1) are shared: 18 loads and 18 additions for 4 lines
  ;; against 36 and 24 line by line.  Chez 10 keeps them unboxed but has
  ;; few registers for them: there L = 1 (fewer values live, fewer spilled
  ;; to the stack) takes 11% less time in resid and 17% in psinv.

  ;; with-rowsL binds the byte offsets bj, kj, tj of row i2-1+j
  ;; (j = 0 .. L+1) of planes i3-1, i3, i3+1 of a grid of side n.
  (define-syntax with-rows1
    (syntax-rules ()
      [(_ n i2 i3 (b0 b1 b2 k0 k1 k2 t0 t1 t2) body ...)
       (let* ([row (#3%fx* 8 n)] [plane (#3%fx* row n)]
              [k1 (#3%fx* (#3%fx+ (#3%fx* i3 n) i2) row)] [k0 (#3%fx- k1 row)] [k2 (#3%fx+ k1 row)]
              [b0 (#3%fx- k0 plane)] [b1 (#3%fx- k1 plane)] [b2 (#3%fx- k2 plane)]
              [t0 (#3%fx+ k0 plane)] [t1 (#3%fx+ k1 plane)] [t2 (#3%fx+ k2 plane)])
         body ...)]))

  (define-syntax with-rows2
    (syntax-rules ()
      [(_ n i2 i3 (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3) body ...)
       (let* ([row (#3%fx* 8 n)] [plane (#3%fx* row n)]
              [k1 (#3%fx* (#3%fx+ (#3%fx* i3 n) i2) row)] [k0 (#3%fx- k1 row)]
              [k2 (#3%fx+ k1 row)] [k3 (#3%fx+ k2 row)]
              [b0 (#3%fx- k0 plane)] [b1 (#3%fx- k1 plane)] [b2 (#3%fx- k2 plane)] [b3 (#3%fx- k3 plane)]
              [t0 (#3%fx+ k0 plane)] [t1 (#3%fx+ k1 plane)] [t2 (#3%fx+ k2 plane)] [t3 (#3%fx+ k3 plane)])
         body ...)]))

  (define-syntax with-rows4
    (syntax-rules ()
      [(_ n i2 i3 (b0 b1 b2 b3 b4 b5 k0 k1 k2 k3 k4 k5 t0 t1 t2 t3 t4 t5) body ...)
       (let* ([row (#3%fx* 8 n)] [plane (#3%fx* row n)]
              [k1 (#3%fx* (#3%fx+ (#3%fx* i3 n) i2) row)] [k0 (#3%fx- k1 row)]
              [k2 (#3%fx+ k1 row)] [k3 (#3%fx+ k2 row)] [k4 (#3%fx+ k3 row)] [k5 (#3%fx+ k4 row)]
              [b0 (#3%fx- k0 plane)] [b1 (#3%fx- k1 plane)] [b2 (#3%fx- k2 plane)] [b3 (#3%fx- k3 plane)] [b4 (#3%fx- k4 plane)] [b5 (#3%fx- k5 plane)]
              [t0 (#3%fx+ k0 plane)] [t1 (#3%fx+ k1 plane)] [t2 (#3%fx+ k2 plane)] [t3 (#3%fx+ k3 plane)] [t4 (#3%fx+ k4 plane)] [t5 (#3%fx+ k5 plane)])
         body ...)]))

  ;; columnL binds, at offset o of with-rowsL's rows, for each line j
  ;; (row kj, j = 1 .. L): xj, the line's own value; s1j, the sum of its
  ;; four face neighbours in the (i2, i3) plane, (kj-1 + kj+1) + (bj + tj);
  ;; s2j, the sum of its four diagonal ones, (bj-1 + tj-1) + (bj+1 + tj+1).
  ;; Each point's sums are the same expression whatever L.
  (define-syntax column1
    (syntax-rules ()
      [(_ a o (b0 b1 b2 k0 k1 k2 t0 t1 t2) ((x1 s11 s21)) body ...)
       (let* ([p0 (f+ (g@ a (#3%fx+ b0 o)) (g@ a (#3%fx+ t0 o)))]
              [p1 (f+ (g@ a (#3%fx+ b1 o)) (g@ a (#3%fx+ t1 o)))]
              [p2 (f+ (g@ a (#3%fx+ b2 o)) (g@ a (#3%fx+ t2 o)))]
              [x1 (g@ a (#3%fx+ k1 o))]
              [s11 (f+ (f+ (g@ a (#3%fx+ k0 o)) (g@ a (#3%fx+ k2 o))) p1)] [s21 (f+ p0 p2)])
         body ...)]))

  (define-syntax column2
    (syntax-rules ()
      [(_ a o (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3) ((x1 s11 s21) (x2 s12 s22)) body ...)
       (let* ([p0 (f+ (g@ a (#3%fx+ b0 o)) (g@ a (#3%fx+ t0 o)))]
              [p1 (f+ (g@ a (#3%fx+ b1 o)) (g@ a (#3%fx+ t1 o)))]
              [p2 (f+ (g@ a (#3%fx+ b2 o)) (g@ a (#3%fx+ t2 o)))]
              [p3 (f+ (g@ a (#3%fx+ b3 o)) (g@ a (#3%fx+ t3 o)))]
              [x1 (g@ a (#3%fx+ k1 o))] [x2 (g@ a (#3%fx+ k2 o))]
              [s11 (f+ (f+ (g@ a (#3%fx+ k0 o)) x2) p1)] [s21 (f+ p0 p2)]
              [s12 (f+ (f+ x1 (g@ a (#3%fx+ k3 o))) p2)] [s22 (f+ p1 p3)])
         body ...)]))

  (define-syntax column4
    (syntax-rules ()
      [(_ a o (b0 b1 b2 b3 b4 b5 k0 k1 k2 k3 k4 k5 t0 t1 t2 t3 t4 t5) ((x1 s11 s21) (x2 s12 s22) (x3 s13 s23) (x4 s14 s24)) body ...)
       (let* ([p0 (f+ (g@ a (#3%fx+ b0 o)) (g@ a (#3%fx+ t0 o)))]
              [p1 (f+ (g@ a (#3%fx+ b1 o)) (g@ a (#3%fx+ t1 o)))]
              [p2 (f+ (g@ a (#3%fx+ b2 o)) (g@ a (#3%fx+ t2 o)))]
              [p3 (f+ (g@ a (#3%fx+ b3 o)) (g@ a (#3%fx+ t3 o)))]
              [p4 (f+ (g@ a (#3%fx+ b4 o)) (g@ a (#3%fx+ t4 o)))]
              [p5 (f+ (g@ a (#3%fx+ b5 o)) (g@ a (#3%fx+ t5 o)))]
              [x1 (g@ a (#3%fx+ k1 o))] [x2 (g@ a (#3%fx+ k2 o))] [x3 (g@ a (#3%fx+ k3 o))] [x4 (g@ a (#3%fx+ k4 o))]
              [s11 (f+ (f+ (g@ a (#3%fx+ k0 o)) x2) p1)] [s21 (f+ p0 p2)]
              [s12 (f+ (f+ x1 x3) p2)] [s22 (f+ p1 p3)]
              [s13 (f+ (f+ x2 x4) p3)] [s23 (f+ p2 p4)]
              [s14 (f+ (f+ x3 (g@ a (#3%fx+ k5 o))) p4)] [s24 (f+ p3 p5)])
         body ...)]))

  ;; r = v - A u.  With a3 = a2/2 and a0 = -16 a2,
  ;; A u = a2 (h + g(i1-1) + g(i1+1)) where g = s1 + s2/2 and
  ;; h = s2 - 16 u: 8 operations a point instead of 9, and 3 values a line
  ;; carried from point to point.
  (define-syntax resid-g (syntax-rules () [(_ s1 s2) (f+ s1 (f* 0.5 s2))]))
  (define-syntax resid-h (syntax-rules () [(_ s2 x) (f+ s2 (f* -16.0 x))]))
  (define-syntax resid-sweep
    (syntax-rules ()
      [(_ u v r n lo hi step with-rows column rows
          ((kc x0 s10 s20 x1 s11 s21 xp s1p s2p gm gc s2c xc gp) ...))
       (do ([i3 lo (#3%fx+ i3 1)]) ((#3%fx= i3 hi))
         (do ([i2 1 (#3%fx+ i2 step)]) ((#3%fx= i2 (#3%fx- n 1)))
           (with-rows n i2 i3 rows
             (let ([end (#3%fx* 8 (#3%fx- n 1))])
               (column u 0 rows ((x0 s10 s20) ...)
                 (column u 8 rows ((x1 s11 s21) ...)
                   (let loop ([o 8] [gm (resid-g s10 s20)] ... [gc (resid-g s11 s21)] ...
                              [s2c (resid-h s21 x1)] ...)
                     (unless (#3%fx= o end)
                       (let ([op (#3%fx+ o 8)])
                         (column u op rows ((xp s1p s2p) ...)
                           (let ([gp (resid-g s1p s2p)] ...)
                             (let ([co (#3%fx+ kc o)])
                               (g! r co (f- (g@ v co) (f* a2 (f+ s2c (f+ gm gp))))))
                             ...
                             (loop op gc ... gp ... (resid-h s2p xp) ...))))))))))))]))

  ;; r = v - A u on the interior of planes lo .. hi-1 (v and r may be the
  ;; same grid: each point reads only its own v).
  (define (resid! u v r n lo hi)
    (by-chez
     (if (#3%fx= 0 (#3%fxand (#3%fx- n 2) 3))
         (resid-sweep u v r n lo hi 4 with-rows4 column4 (b0 b1 b2 b3 b4 b5 k0 k1 k2 k3 k4 k5 t0 t1 t2 t3 t4 t5)
                      ((k1 x0_1 s10_1 s20_1 x1_1 s11_1 s21_1 xp1 s1p1 s2p1 gm1 gc1 s2c1 xc1 gp1) (k2 x0_2 s10_2 s20_2 x1_2 s11_2 s21_2 xp2 s1p2 s2p2 gm2 gc2 s2c2 xc2 gp2) (k3 x0_3 s10_3 s20_3 x1_3 s11_3 s21_3 xp3 s1p3 s2p3 gm3 gc3 s2c3 xc3 gp3) (k4 x0_4 s10_4 s20_4 x1_4 s11_4 s21_4 xp4 s1p4 s2p4 gm4 gc4 s2c4 xc4 gp4)))
         (resid-sweep u v r n lo hi 2 with-rows2 column2 (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3)
                      ((k1 x0_1 s10_1 s20_1 x1_1 s11_1 s21_1 xp1 s1p1 s2p1 gm1 gc1 s2c1 xc1 gp1) (k2 x0_2 s10_2 s20_2 x1_2 s11_2 s21_2 xp2 s1p2 s2p2 gm2 gc2 s2c2 xc2 gp2))))
     (resid-sweep u v r n lo hi 1 with-rows1 column1 (b0 b1 b2 k0 k1 k2 t0 t1 t2)
                  ((k1 x0_1 s10_1 s20_1 x1_1 s11_1 s21_1 xp1 s1p1 s2p1 gm1 gc1 s2c1 xc1 gp1)))))

  ;; u = u + C r.  With c0 = -12 c1 and c2 = -c1/2 (c3 = 0),
  ;; C r = c1 (k(i1-1) + k(i1+1) + m) where k = r - s1/2 and
  ;; m = s1 - s2/2 - 12 r: 10 operations a point as the reference's form,
  ;; but 3 values a line carried from point to point instead of 5 (fewer
  ;; spilled to the stack).
  (define-syntax psinv-k (syntax-rules () [(_ x s1) (f- x (f* 0.5 s1))]))
  (define-syntax psinv-m (syntax-rules () [(_ x s1 s2) (f- (f- s1 (f* 0.5 s2)) (f* 12.0 x))]))
  (define-syntax psinv-sweep
    (syntax-rules ()
      [(_ r u n lo hi step with-rows column rows
          ((kc x0 s10 s20 x1 s11 s21 xp s1p s2p xm xc s1m s1c s2c) ...))
       (do ([i3 lo (#3%fx+ i3 1)]) ((#3%fx= i3 hi))
         (do ([i2 1 (#3%fx+ i2 step)]) ((#3%fx= i2 (#3%fx- n 1)))
           (with-rows n i2 i3 rows
             (let ([end (#3%fx* 8 (#3%fx- n 1))])
               (column r 0 rows ((x0 s10 s20) ...)
                 (column r 8 rows ((x1 s11 s21) ...)
                   (let loop ([o 8] [xm (psinv-k x0 s10)] ... [xc (psinv-k x1 s11)] ...
                              [s2c (psinv-m x1 s11 s21)] ...)
                     (unless (#3%fx= o end)
                       (let ([op (#3%fx+ o 8)])
                         (column r op rows ((xp s1p s2p) ...)
                           (let ([s1c (psinv-k xp s1p)] ...)
                             (let ([co (#3%fx+ kc o)])
                               (g! u co (f+ (g@ u co) (f* c1 (f+ (f+ xm s1c) s2c)))))
                             ...
                             (loop op xc ... s1c ... (psinv-m xp s1p s2p) ...))))))))))))]))

  ;; u = u + C r on the interior of planes lo .. hi-1.
  (define (psinv! r u n lo hi)
    (by-chez
     (if (#3%fx= 0 (#3%fxand (#3%fx- n 2) 3))
         (psinv-sweep r u n lo hi 4 with-rows4 column4 (b0 b1 b2 b3 b4 b5 k0 k1 k2 k3 k4 k5 t0 t1 t2 t3 t4 t5)
                      ((k1 x0_1 s10_1 s20_1 x1_1 s11_1 s21_1 xp1 s1p1 s2p1 xm1 xc1 s1m1 s1c1 s2c1) (k2 x0_2 s10_2 s20_2 x1_2 s11_2 s21_2 xp2 s1p2 s2p2 xm2 xc2 s1m2 s1c2 s2c2) (k3 x0_3 s10_3 s20_3 x1_3 s11_3 s21_3 xp3 s1p3 s2p3 xm3 xc3 s1m3 s1c3 s2c3) (k4 x0_4 s10_4 s20_4 x1_4 s11_4 s21_4 xp4 s1p4 s2p4 xm4 xc4 s1m4 s1c4 s2c4)))
         (psinv-sweep r u n lo hi 2 with-rows2 column2 (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3)
                      ((k1 x0_1 s10_1 s20_1 x1_1 s11_1 s21_1 xp1 s1p1 s2p1 xm1 xc1 s1m1 s1c1 s2c1) (k2 x0_2 s10_2 s20_2 x1_2 s11_2 s21_2 xp2 s1p2 s2p2 xm2 xc2 s1m2 s1c2 s2c2))))
     (psinv-sweep r u n lo hi 1 with-rows1 column1 (b0 b1 b2 k0 k1 k2 t0 t1 t2)
                  ((k1 x0_1 s10_1 s20_1 x1_1 s11_1 s21_1 xp1 s1p1 s2p1 xm1 xc1 s1m1 s1c1 s2c1)))))

  ;; dst = P r: coarse planes j3 in lo .. hi-1 of dst (side nc) from the
  ;; fine grid r (side nf = 2 nc - 2); coarse point j is fine point 2j.
  (define (rprj3! r nf dst nc lo hi)
    (do ([j3 lo (#3%fx+ j3 1)]) ((#3%fx= j3 hi))
      (do ([j2 1 (#3%fx+ j2 1)]) ((#3%fx= j2 (#3%fx- nc 1)))
        (with-rows nf (#3%fx* 2 j2) (#3%fx* 2 j3) (c s nn b t sb nb st nt)
          (let ([out (#3%fx* 8 (#3%fx* (#3%fx+ (#3%fx* j3 nc) j2) nc))]
                [end (#3%fx* 8 (#3%fx- nc 1))])
            ;; x1, y1 and r itself at fine i1 = 2 j1 - 1, carried to the next j1
            (let loop ([j 8] [x1m (sum4 r 8 s nn b t)] [y1m (sum4 r 8 sb st nb nt)] [rm (g@ r (#3%fx+ c 8))])
              (unless (#3%fx= j end)
                (let* ([o (#3%fx* 2 j)] [op (#3%fx+ o 8)]
                       [x1p (sum4 r op s nn b t)] [y1p (sum4 r op sb st nb nt)]
                       [x2 (sum4 r o s nn b t)] [y2 (sum4 r o sb st nb nt)]
                       [co (#3%fx+ c o)] [rp (g@ r (#3%fx+ co 8))])
                  (g! dst (#3%fx+ out j)
                      (f+ (f+ (f+ (f* 0.5 (g@ r co))
                                  (f* 0.25 (f+ (f+ rm rp) x2)))
                              (f* 0.125 (f+ (f+ x1m x1p) y2)))
                          (f* 0.0625 (f+ y1m y1p))))
                  (loop (#3%fx+ j 8) x1p y1p rp)))))))))

  ;; u = u + Q z: coarse planes i3 in lo .. hi-1 (of 0 .. mm-2) of z (side
  ;; mm) add into fine planes 2 i3 and 2 i3 + 1 of u (side 2 mm - 2), the
  ;; ghost layers included.
  (define (interp! z mm u n lo hi)
    (let* ([zrow (#3%fx* 8 mm)] [zplane (#3%fx* zrow mm)]
           [row (#3%fx* 8 n)] [plane (#3%fx* row n)] [end (#3%fx* 8 (#3%fx- mm 1))])
      (do ([i3 lo (#3%fx+ i3 1)]) ((#3%fx= i3 hi))
        (do ([i2 0 (#3%fx+ i2 1)]) ((#3%fx= i2 (#3%fx- mm 1)))
          (let* ([zc (#3%fx* (#3%fx+ (#3%fx* i3 mm) i2) zrow)] [zn (#3%fx+ zc zrow)]
                 [zt (#3%fx+ zc zplane)] [znt (#3%fx+ zn zplane)]
                 [f00 (#3%fx+ (#3%fx* (#3%fx* 2 i3) plane) (#3%fx* (#3%fx* 2 i2) row))]
                 [f10 (#3%fx+ f00 row)] [f01 (#3%fx+ f00 plane)] [f11 (#3%fx+ f10 plane)])
            (define-syntax z@ (syntax-rules () [(_ base o) (g@ z (#3%fx+ base o))]))
            (define-syntax add!
              (syntax-rules () [(_ base o x) (let ([k (#3%fx+ base o)]) (g! u k (f+ (g@ u k) x)))]))
            ;; z's four values at o are carried to the next point
            (let loop ([o 0] [c (z@ zc 0)] [z1 (f+ (z@ zn 0) (z@ zc 0))] [z2 (f+ (z@ zt 0) (z@ zc 0))]
                       [z3 (f+ (f+ (z@ znt 0) (z@ zt 0)) (f+ (z@ zn 0) (z@ zc 0)))])
              (unless (#3%fx= o end)
                (let* ([op (#3%fx+ o 8)]
                       [cp (z@ zc op)] [tp (z@ zt op)]
                       [z1p (f+ (z@ zn op) cp)]
                       [z2p (f+ tp cp)]
                       [z3p (f+ (f+ (z@ znt op) tp) z1p)]
                       [fo (#3%fx* 2 o)] [fp (#3%fx+ fo 8)])
                  (add! f00 fo c)
                  (add! f00 fp (f* 0.5 (f+ cp c)))
                  (add! f10 fo (f* 0.5 z1))
                  (add! f10 fp (f* 0.25 (f+ z1 z1p)))
                  (add! f01 fo (f* 0.5 z2))
                  (add! f01 fp (f* 0.25 (f+ z2 z2p)))
                  (add! f11 fo (f* 0.25 z3))
                  (add! f11 fp (f* 0.125 (f+ z3 z3p)))
                  (loop op cp z1p z2p z3p))))))))))
