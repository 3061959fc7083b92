#!chezscheme
;;; SP's right-hand side (NPB compute_rhs), one k plane at a time: at each
;;; interior point, the forcing plus the xi, eta and zeta flux differences,
;;; each followed by its fourth-order dissipation, times dt; then, inside
;;; the time step, the block-diagonal product T^-1 rhs (NPB txinvr).  Each
;;; point is done in one pass: the reference's sweeps over the grid add the
;;; same terms in the same order.
;;;
;;; Reads u and the auxiliary array in planes k-2 .. k+2, writes rhs in
;;; plane k only, so members owning different planes never conflict.
(library (nas sp-rhs)
  (export sp-rhs-plane!)
  (import (except (chezscheme) fl+ fl- fl* fl/ flsqrt fl< fl> fx+ fx- fx* fx< fx<= fx= fx>= fx>)
          (nas sp-memory) (nas sp-constants))

  ;; (fourth-difference g n um2 um1 u0 six-u0 up1 up2): the dissipation
  ;; stencil at g of a line of n points; um2 and up2 are evaluated only
  ;; where used; six-u0 is 6 u0.
  (define-syntax fourth-difference
    (syntax-rules ()
      [(_ g n um2 um1 u0 six-u0 up1 up2)
       (cond
         [(fx= g 1) (fl+ (fl- (fl* 5.0 u0) (fl* 4.0 up1)) up2)]
         [(fx= g 2) (fl+ (fl- (fl+ (fl* -4.0 um1) six-u0) (fl* 4.0 up1)) up2)]
         [(fx= g (fx- n 3)) (fl- (fl+ (fl- um2 (fl* 4.0 um1)) six-u0) (fl* 4.0 up1))]
         [(fx= g (fx- n 2)) (fl+ (fl- um2 (fl* 4.0 um1)) (fl* 5.0 u0))]
         [else (fl+ (fl- (fl+ (fl- um2 (fl* 4.0 um1)) six-u0) (fl* 4.0 up1)) up2)])]))

  ;; (p - 2 c) + m, given 2 c
  (define-syntax second-difference
    (syntax-rules () [(_ p two-c m) (fl+ (fl- p two-c) m)]))

  ;; Adds one direction's flux differences and dissipation to r0 .. r4 and
  ;; evaluates body with them rebound.  rN is the momentum component normal
  ;; to the direction (byte offset oN in u, velocity slot sN in aux), rA and
  ;; rB the other two; u0 .. are the point's own values of u (in the same
  ;; order), w0 .. twice and x0 .. six times them, vN vA vB qs e its aux
  ;; values and dvN .. twice them, all formed once for the three
  ;; directions (the same products the reference forms per term); su and
  ;; sa: the neighbour's byte distance in u and in aux; g: the point's
  ;; index along the direction.
  (define-syntax with-direction
    (syntax-rules ()
      [(_ (r0 rN rA rB r4) (oN oA oB) (sN sA sB) (u0 uN uA uB u4) (w0 wN wA wB w4)
          (x0 xN xA xB x4) (vN vA vB qs e) (dvN dvA dvB dqs de)
          (u aux uo ao su sa g n) (dt1 t2 con2 con243 con3 con4 con5 c2 dssp) body ...)
       (let* ([uop (fx+ uo su)] [uom (fx- uo su)] [aop (fx+ ao sa)] [aom (fx- ao sa)]
              [u0p (fref u uop)] [u0m (fref u uom)]
              [uNp (fref u (fx+ uop oN))] [uNm (fref u (fx+ uom oN))]
              [uAp (fref u (fx+ uop oA))] [uAm (fref u (fx+ uom oA))]
              [uBp (fref u (fx+ uop oB))] [uBm (fref u (fx+ uom oB))]
              [u4p (fref u (fx+ uop 32))] [u4m (fref u (fx+ uom 32))]
              [vNp (fref aux (fx+ aop sN))] [vNm (fref aux (fx+ aom sN))]
              [r0 (fl- (fl+ r0 (fl* dt1 (second-difference u0p w0 u0m))) (fl* t2 (fl- uNp uNm)))]
              [rN (fl- (fl+ (fl+ rN (fl* dt1 (second-difference uNp wN uNm)))
                            (fl* con243 (second-difference vNp dvN vNm)))
                       (fl* t2 (fl+ (fl- (fl* uNp vNp) (fl* uNm vNm))
                                    (fl* (fl+ (fl- (fl- u4p (fref aux (fx+ aop aux-square))) u4m)
                                              (fref aux (fx+ aom aux-square)))
                                         c2))))]
              [rA (fl- (fl+ (fl+ rA (fl* dt1 (second-difference uAp wA uAm)))
                            (fl* con2 (second-difference (fref aux (fx+ aop sA)) dvA (fref aux (fx+ aom sA)))))
                       (fl* t2 (fl- (fl* uAp vNp) (fl* uAm vNm))))]
              [rB (fl- (fl+ (fl+ rB (fl* dt1 (second-difference uBp wB uBm)))
                            (fl* con2 (second-difference (fref aux (fx+ aop sB)) dvB (fref aux (fx+ aom sB)))))
                       (fl* t2 (fl- (fl* uBp vNp) (fl* uBm vNm))))]
              [r4 (fl- (fl+ (fl+ (fl+ (fl+ r4 (fl* dt1 (second-difference u4p w4 u4m)))
                                      (fl* con3 (second-difference (fref aux (fx+ aop aux-qs)) dqs
                                                                   (fref aux (fx+ aom aux-qs)))))
                                (fl* con4 (fl+ (fl- (fl* vNp vNp) (fl* dvN vN)) (fl* vNm vNm))))
                          (fl* con5 (second-difference (fref aux (fx+ aop aux-e)) de (fref aux (fx+ aom aux-e)))))
                       (fl* t2 (fl- (fl* (fref aux (fx+ aop aux-f)) vNp) (fl* (fref aux (fx+ aom aux-f)) vNm))))]
              [uo2p (fx+ uop su)] [uo2m (fx- uom su)]
              [r0 (fl- r0 (fl* dssp (fourth-difference g n (fref u uo2m) u0m u0 x0 u0p (fref u uo2p))))]
              [rN (fl- rN (fl* dssp (fourth-difference g n (fref u (fx+ uo2m oN)) uNm uN xN uNp
                                                       (fref u (fx+ uo2p oN)))))]
              [rA (fl- rA (fl* dssp (fourth-difference g n (fref u (fx+ uo2m oA)) uAm uA xA uAp
                                                       (fref u (fx+ uo2p oA)))))]
              [rB (fl- rB (fl* dssp (fourth-difference g n (fref u (fx+ uo2m oB)) uBm uB xB uBp
                                                       (fref u (fx+ uo2p oB)))))]
              [r4 (fl- r4 (fl* dssp (fourth-difference g n (fref u (fx+ uo2m 32)) u4m u4 x4 u4p
                                                       (fref u (fx+ uo2p 32)))))])
         body ...)]))

  ;; rhs at the interior points of plane k; with txinvr? also T^-1 rhs.
  (define (sp-rhs-plane! c u aux forcing rhs k txinvr?)
    (let* ([n (c-n c)] [dt (c-dt c)] [t2 (c-t2 c)] [con2 (c-con2 c)] [con3 (c-con3 c)]
           [con4 (c-con4 c)] [con5 (c-con5 c)] [c2 (c-c2 c)]
           [con243 (fl* con2 (c-con43 c))] [dssp (c-dssp c)] [bt (c-bt c)]
           [dx (vector-ref (c-ddt1 c) 0)] [dy (vector-ref (c-ddt1 c) 1)]
           [dz (vector-ref (c-ddt1 c) 2)]
           [sux 40] [suy (fx* 40 n)] [suz (fx* 40 (fx* n n))]
           [sax aux-width] [say (fx* aux-width n)] [saz (fx* aux-width (fx* n n))])
      (do ([j 1 (fx+ j 1)]) ((fx= j (fx- n 1)))
        (do ([i 1 (fx+ i 1)]) ((fx= i (fx- n 1)))
          (let* ([p (fx+ (fx* (fx+ (fx* k n) j) n) i)] [uo (fx* p 40)] [ao (fx* p aux-width)]
                 [r0 (fref forcing uo)] [r1 (fref forcing (fx+ uo 8))] [r2 (fref forcing (fx+ uo 16))]
                 [r3 (fref forcing (fx+ uo 24))] [r4 (fref forcing (fx+ uo 32))]
                 [u0 (fref u uo)] [u1 (fref u (fx+ uo 8))] [u2 (fref u (fx+ uo 16))]
                 [u3 (fref u (fx+ uo 24))] [u4 (fref u (fx+ uo 32))]
                 [us (fref aux (fx+ ao aux-us))] [vs (fref aux (fx+ ao aux-vs))]
                 [ws (fref aux (fx+ ao aux-ws))] [qs (fref aux (fx+ ao aux-qs))]
                 [e (fref aux (fx+ ao aux-e))]
                 [w0 (fl* 2.0 u0)] [w1 (fl* 2.0 u1)] [w2 (fl* 2.0 u2)] [w3 (fl* 2.0 u3)]
                 [w4 (fl* 2.0 u4)]
                 [x0 (fl* 6.0 u0)] [x1 (fl* 6.0 u1)] [x2 (fl* 6.0 u2)] [x3 (fl* 6.0 u3)]
                 [x4 (fl* 6.0 u4)]
                 [dus (fl* 2.0 us)] [dvs (fl* 2.0 vs)] [dws (fl* 2.0 ws)] [dqs (fl* 2.0 qs)]
                 [de (fl* 2.0 e)])
            (with-direction (r0 r1 r2 r3 r4) (8 16 24) (aux-us aux-vs aux-ws) (u0 u1 u2 u3 u4)
                            (w0 w1 w2 w3 w4) (x0 x1 x2 x3 x4) (us vs ws qs e) (dus dvs dws dqs de)
                            (u aux uo ao sux sax i n)
                            (dx t2 con2 con243 con3 con4 con5 c2 dssp)
              (with-direction (r0 r2 r1 r3 r4) (16 8 24) (aux-vs aux-us aux-ws) (u0 u2 u1 u3 u4)
                              (w0 w2 w1 w3 w4) (x0 x2 x1 x3 x4) (vs us ws qs e) (dvs dus dws dqs de)
                              (u aux uo ao suy say j n)
                              (dy t2 con2 con243 con3 con4 con5 c2 dssp)
                (with-direction (r0 r3 r1 r2 r4) (24 8 16) (aux-ws aux-us aux-vs) (u0 u3 u1 u2 u4)
                                (w0 w3 w1 w2 w4) (x0 x3 x1 x2 x4) (ws us vs qs e) (dws dus dvs dqs de)
                                (u aux uo ao suz saz k n)
                                (dz t2 con2 con243 con3 con4 con5 c2 dssp)
                  (let ([r0 (fl* r0 dt)] [r1 (fl* r1 dt)] [r2 (fl* r2 dt)] [r3 (fl* r3 dt)]
                        [r4 (fl* r4 dt)])
                    (if txinvr?
                        (let* ([ru1 (fref aux (fx+ ao aux-rho))] [uu us] [vv vs] [ww ws]
                               [ac (fref aux (fx+ ao aux-speed))] [ac2inv (fl* ac ac)]
                               [t1 (fl* (fl/ c2 ac2inv)
                                        (fl+ (fl- (fl- (fl- (fl* qs r0) (fl* uu r1)) (fl* vv r2))
                                                  (fl* ww r3))
                                             r4))]
                               [btru (fl* bt ru1)]
                               [t2 (fl* btru (fl- (fl* uu r0) r1))]
                               [t3 (fl* (fl* btru ac) t1)])
                          (fset! rhs uo (fl- r0 t1))
                          (fset! rhs (fx+ uo 8) (fl* (fl- ru1) (fl- (fl* ww r0) r3)))
                          (fset! rhs (fx+ uo 16) (fl* ru1 (fl- (fl* vv r0) r2)))
                          (fset! rhs (fx+ uo 24) (fl+ (fl- t2) t3))
                          (fset! rhs (fx+ uo 32) (fl+ t2 t3)))
                        (begin
                          (fset! rhs uo r0) (fset! rhs (fx+ uo 8) r1) (fset! rhs (fx+ uo 16) r2)
                          (fset! rhs (fx+ uo 24) r3) (fset! rhs (fx+ uo 32) r4)))))))))))))
