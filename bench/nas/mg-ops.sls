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

  ;; r = v - A u on the interior of planes lo .. hi-1 (v and r may be the
  ;; same grid: each point reads only its own v).
  (define (resid! u v r n lo hi)
    (do ([i3 lo (#3%fx+ i3 1)]) ((#3%fx= i3 hi))
      (do ([i2 1 (#3%fx+ i2 1)]) ((#3%fx= i2 (#3%fx- n 1)))
        (with-rows n i2 i3 (c s nn b t sb nb st nt)
          (let ([end (#3%fx* 8 (#3%fx- n 1))])
            (let loop ([o 8]
                       [u1m (sum4 u 0 s nn b t)] [u2m (sum4 u 0 sb nb st nt)]
                       [u1c (sum4 u 8 s nn b t)] [u2c (sum4 u 8 sb nb st nt)])
              (unless (#3%fx= o end)
                (let* ([op (#3%fx+ o 8)]
                       [u1p (sum4 u op s nn b t)] [u2p (sum4 u op sb nb st nt)]
                       [co (#3%fx+ c o)])
                  (g! r co (f- (f- (f- (g@ v co) (f* a0 (g@ u co)))
                                   (f* a2 (f+ (f+ u2c u1m) u1p)))
                               (f* a3 (f+ u2m u2p))))
                  (loop op u1c u2c u1p u2p)))))))))

  ;; u = u + C r on the interior of planes lo .. hi-1.
  (define (psinv! r u n lo hi)
    (do ([i3 lo (#3%fx+ i3 1)]) ((#3%fx= i3 hi))
      (do ([i2 1 (#3%fx+ i2 1)]) ((#3%fx= i2 (#3%fx- n 1)))
        (with-rows n i2 i3 (c s nn b t sb nb st nt)
          (let ([end (#3%fx* 8 (#3%fx- n 1))])
            (let loop ([o 8]
                       [r1m (sum4 r 0 s nn b t)]
                       [r1c (sum4 r 8 s nn b t)] [r2c (sum4 r 8 sb nb st nt)])
              (unless (#3%fx= o end)
                (let* ([op (#3%fx+ o 8)]
                       [r1p (sum4 r op s nn b t)] [r2p (sum4 r op sb nb st nt)]
                       [co (#3%fx+ c o)])
                  (g! u co (f+ (f+ (f+ (g@ u co) (f* c0 (g@ r co)))
                                   (f* c1 (f+ (f+ (g@ r (#3%fx- co 8)) (g@ r (#3%fx+ co 8))) r1c)))
                               (f* c2 (f+ (f+ r2c r1m) r1p))))
                  (loop op r1c r1p r2p)))))))))

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
