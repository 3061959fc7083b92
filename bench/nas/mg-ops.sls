#!chezscheme
;;; MG's four grid operators (NPB 3.4 specification, MG), on the raw
;;; addresses of (nas mg-grid), each over a block of planes so that
;;; members of a group can share a grid:
;;;   resid   r = v - A u               (27-point stencil, a1 = 0)
;;;   psinv   u = u + C r               (the smoother, c3 = 0)
;;;   rprj3   s = P r                   (restriction to the coarser grid)
;;;   interp  u = u + Q z               (trilinear prolongation)
;;; The sums of four neighbours along a row are carried in loop variables
;;; (the value at i1-1, i1 and i1+1), so each is formed once, as the
;;; reference's row buffers do; the additions keep the reference's order.
(library (nas mg-ops)
  (export resid! psinv! rprj3! interp!)
  (import (chezscheme) (nas raw) (nas mg-grid))

  (define a0 (fl/ -8.0 3.0))
  (define a2 (fl/ 1.0 6.0))
  (define a3 (fl/ 1.0 12.0))
  (define c0 (fl/ -3.0 8.0))
  (define c1 (fl/ 1.0 32.0))
  (define c2 (fl/ -1.0 64.0))

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

;; Binds the byte offsets of the twelve rows that two neighbouring lines
  ;; (i2, i3) and (i2+1, i3) of a grid of side n read: bj, cj, tj are row
  ;; i2-1+j of planes i3-1, i3, i3+1 (j = 0 .. 3); c1 and c2 are the lines.
  (define-syntax with-rows2
    (syntax-rules ()
      [(_ n i2 i3 (b0 b1 b2 b3 c0 c1 c2 c3 t0 t1 t2 t3) body ...)
       (let* ([row (#3%fx* 8 n)] [plane (#3%fx* row n)]
              [c1 (#3%fx* (#3%fx+ (#3%fx* i3 n) i2) row)]
              [c0 (#3%fx- c1 row)] [c2 (#3%fx+ c1 row)] [c3 (#3%fx+ c2 row)]
              [b0 (#3%fx- c0 plane)] [b1 (#3%fx- c1 plane)] [b2 (#3%fx- c2 plane)] [b3 (#3%fx- c3 plane)]
              [t0 (#3%fx+ c0 plane)] [t1 (#3%fx+ c1 plane)] [t2 (#3%fx+ c2 plane)] [t3 (#3%fx+ c3 plane)])
         body ...)]))

  ;; At offset o of the rows of with-rows2, binds for line A (row c1) and
  ;; line B (row c2): x, the line's own value; s1, the sum of its four face
  ;; neighbours in the (i2, i3) plane; s2, the sum of its four diagonal
  ;; ones.  The twelve values are loaded once and the vertical pairs
  ;; bj + tj shared: 12 loads and 10 additions for both lines, against
  ;; 16 and 12 line by line (every flonum is a 16-byte box on 9.5.8).
  (define-syntax column2
    (syntax-rules ()
      [(_ a o (b0 b1 b2 b3 c0 c1 c2 c3 t0 t1 t2 t3) (xa s1a s2a xb s1b s2b) body ...)
       (let* ([p0 (f+ (g@ a (#3%fx+ b0 o)) (g@ a (#3%fx+ t0 o)))]
              [p1 (f+ (g@ a (#3%fx+ b1 o)) (g@ a (#3%fx+ t1 o)))]
              [p2 (f+ (g@ a (#3%fx+ b2 o)) (g@ a (#3%fx+ t2 o)))]
              [p3 (f+ (g@ a (#3%fx+ b3 o)) (g@ a (#3%fx+ t3 o)))]
              [xa (g@ a (#3%fx+ c1 o))] [xb (g@ a (#3%fx+ c2 o))]
              [s1a (f+ (f+ (g@ a (#3%fx+ c0 o)) xb) p1)] [s2a (f+ p0 p2)]
              [s1b (f+ (f+ xa (g@ a (#3%fx+ c3 o))) p2)] [s2b (f+ p1 p3)])
         body ...)]))

  ;; r = v - A u on the interior of planes lo .. hi-1 (v and r may be the
  ;; same grid: each point reads only its own v), two lines at a time (the
  ;; n-2 interior lines of a plane are even in number).  With a3 = a2/2 and
  ;; a0 = -16 a2, A u = a2 (s2 + g(i1-1) + g(i1+1) - 16 u) where
  ;; g = s1 + s2/2: 8 operations a point instead of 9.
  (define (resid! u v r n lo hi)
    (define-syntax g (syntax-rules () [(_ s1 s2) (f+ s1 (f* 0.5 s2))]))
    (define-syntax point!
      (syntax-rules ()
        [(_ co x s2 gm gp)
         (g! r co (f- (g@ v co) (f* a2 (f+ (f+ s2 (f+ gm gp)) (f* -16.0 x)))))]))
    (do ([i3 lo (#3%fx+ i3 1)]) ((#3%fx= i3 hi))
      (do ([i2 1 (#3%fx+ i2 2)]) ((#3%fx= i2 (#3%fx- n 1)))
        (with-rows2 n i2 i3 (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3)
          (let ([end (#3%fx* 8 (#3%fx- n 1))] [ca k1] [cb k2])
            (column2 u 0 (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3) (xa0 s1a0 s2a0 xb0 s1b0 s2b0)
              (column2 u 8 (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3) (xa1 s1a1 s2a1 xb1 s1b1 s2b1)
                (let loop ([o 8]
                           [gam (g s1a0 s2a0)] [gac (g s1a1 s2a1)] [s2ac s2a1] [xac xa1]
                           [gbm (g s1b0 s2b0)] [gbc (g s1b1 s2b1)] [s2bc s2b1] [xbc xb1])
                  (unless (#3%fx= o end)
                    (let ([op (#3%fx+ o 8)])
                      (column2 u op (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3) (xap s1ap s2ap xbp s1bp s2bp)
                        (let ([gap (g s1ap s2ap)] [gbp (g s1bp s2bp)])
                          (point! (#3%fx+ ca o) xac s2ac gam gap)
                          (point! (#3%fx+ cb o) xbc s2bc gbm gbp)
                          (loop op gac gap s2ap xap gbc gbp s2bp xbp)))))))))))))

  ;; u = u + C r on the interior of planes lo .. hi-1, two lines at a time;
  ;; r's own values along a line are carried, not reloaded.
  (define (psinv! r u n lo hi)
    (define-syntax point!
      (syntax-rules ()
        [(_ co rm rc rp s1m s1c s1p s2c)
         (g! u co (f+ (f+ (f+ (g@ u co) (f* c0 rc))
                          (f* c1 (f+ (f+ rm rp) s1c)))
                      (f* c2 (f+ (f+ s2c s1m) s1p))))]))
    (do ([i3 lo (#3%fx+ i3 1)]) ((#3%fx= i3 hi))
      (do ([i2 1 (#3%fx+ i2 2)]) ((#3%fx= i2 (#3%fx- n 1)))
        (with-rows2 n i2 i3 (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3)
          (let ([end (#3%fx* 8 (#3%fx- n 1))] [ca k1] [cb k2])
            (column2 r 0 (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3) (xa0 s1a0 s2a0 xb0 s1b0 s2b0)
              (column2 r 8 (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3) (xa1 s1a1 s2a1 xb1 s1b1 s2b1)
                (let loop ([o 8]
                           [xam xa0] [xac xa1] [s1am s1a0] [s1ac s1a1] [s2ac s2a1]
                           [xbm xb0] [xbc xb1] [s1bm s1b0] [s1bc s1b1] [s2bc s2b1])
                  (unless (#3%fx= o end)
                    (let ([op (#3%fx+ o 8)])
                      (column2 r op (b0 b1 b2 b3 k0 k1 k2 k3 t0 t1 t2 t3) (xap s1ap s2ap xbp s1bp s2bp)
                        (point! (#3%fx+ ca o) xam xac xap s1am s1ac s1ap s2ac)
                        (point! (#3%fx+ cb o) xbm xbc xbp s1bm s1bc s1bp s2bc)
                        (loop op xac xap s1ac s1ap s2ap xbc xbp s1bc s1bp s2bp))))))))))))

  ;; dst = P r: coarse planes j3 in lo .. hi-1 of dst (side nc) from the
  ;; fine grid r (side nf = 2 nc - 2); coarse point j is fine point 2j.
  (define (rprj3! r nf dst nc lo hi)
    (do ([j3 lo (#3%fx+ j3 1)]) ((#3%fx= j3 hi))
      (do ([j2 1 (#3%fx+ j2 1)]) ((#3%fx= j2 (#3%fx- nc 1)))
        (with-rows nf (#3%fx* 2 j2) (#3%fx* 2 j3) (c s nn b t sb nb st nt)
          (let ([out (#3%fx* 8 (#3%fx* (#3%fx+ (#3%fx* j3 nc) j2) nc))]
                [end (#3%fx* 8 (#3%fx- nc 1))])
            ;; x1, y1 at fine i1 = 2 j1 - 1, carried to the next j1
            (let loop ([j 8] [x1m (sum4 r 8 s nn b t)] [y1m (sum4 r 8 sb st nb nt)])
              (unless (#3%fx= j end)
                (let* ([o (#3%fx* 2 j)] [op (#3%fx+ o 8)]
                       [x1p (sum4 r op s nn b t)] [y1p (sum4 r op sb st nb nt)]
                       [x2 (sum4 r o s nn b t)] [y2 (sum4 r o sb st nb nt)]
                       [co (#3%fx+ c o)])
                  (g! dst (#3%fx+ out j)
                      (f+ (f+ (f+ (f* 0.5 (g@ r co))
                                  (f* 0.25 (f+ (f+ (g@ r (#3%fx- co 8)) (g@ r (#3%fx+ co 8))) x2)))
                              (f* 0.125 (f+ (f+ x1m x1p) y2)))
                          (f* 0.0625 (f+ y1m y1p))))
                  (loop (#3%fx+ j 8) x1p y1p)))))))))

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
            (let loop ([o 0] [z1 (f+ (z@ zn 0) (z@ zc 0))] [z2 (f+ (z@ zt 0) (z@ zc 0))]
                       [z3 (f+ (f+ (z@ znt 0) (z@ zt 0)) (f+ (z@ zn 0) (z@ zc 0)))])
              (unless (#3%fx= o end)
                (let* ([op (#3%fx+ o 8)]
                       [z1p (f+ (z@ zn op) (z@ zc op))]
                       [z2p (f+ (z@ zt op) (z@ zc op))]
                       [z3p (f+ (f+ (z@ znt op) (z@ zt op)) z1p)]
                       [fo (#3%fx* 2 o)] [fp (#3%fx+ fo 8)])
                  (add! f00 fo (z@ zc o))
                  (add! f00 fp (f* 0.5 (f+ (z@ zc op) (z@ zc o))))
                  (add! f10 fo (f* 0.5 z1))
                  (add! f10 fp (f* 0.25 (f+ z1 z1p)))
                  (add! f01 fo (f* 0.5 z2))
                  (add! f01 fp (f* 0.25 (f+ z2 z2p)))
                  (add! f11 fo (f* 0.25 z3))
                  (add! f11 fp (f* 0.125 (f+ z3 z3p)))
                  (loop op z1p z2p z3p))))))))))
