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

  ;; (fourth-difference g n um2 um1 u0 up1 up2): the dissipation stencil at
  ;; g of a line of n points; um2 and up2 are evaluated only where used.
  (define-syntax fourth-difference
    (syntax-rules ()
      [(_ g n um2 um1 u0 up1 up2)
       (cond
         [(fx= g 1) (fl+ (fl- (fl* 5.0 u0) (fl* 4.0 up1)) up2)]
         [(fx= g 2) (fl+ (fl- (fl+ (fl* -4.0 um1) (fl* 6.0 u0)) (fl* 4.0 up1)) up2)]
         [(fx= g (fx- n 3)) (fl- (fl+ (fl- um2 (fl* 4.0 um1)) (fl* 6.0 u0)) (fl* 4.0 up1))]
         [(fx= g (fx- n 2)) (fl+ (fl- um2 (fl* 4.0 um1)) (fl* 5.0 u0))]
         [else (fl+ (fl- (fl+ (fl- um2 (fl* 4.0 um1)) (fl* 6.0 u0)) (fl* 4.0 up1)) up2)])]))

  (define-syntax second-difference
    (syntax-rules () [(_ p c m) (fl+ (fl- p (fl* 2.0 c)) m)]))

  ;; Adds one direction's flux differences and dissipation to r0 .. r4 and
  ;; evaluates body with them rebound.  rN is the momentum component normal
  ;; to the direction (byte offset oN in u, velocity slot sN in aux), rA and
  ;; rB the other two; su and sa: the neighbour's byte distance in u and in
  ;; aux; g: the point's index along the direction.
  (define-syntax with-direction
    (syntax-rules ()
      [(_ (r0 rN rA rB r4) (oN oA oB) (sN sA sB) (u aux uo ao su sa g n)
          (dt1 t2 con2 con3 con4 con5 c1 c2 con43 dssp) body ...)
       (let* ([uop (fx+ uo su)] [uom (fx- uo su)] [aop (fx+ ao sa)] [aom (fx- ao sa)]
              [u0 (fref u uo)] [u0p (fref u uop)] [u0m (fref u uom)]
              [uN (fref u (fx+ uo oN))] [uNp (fref u (fx+ uop oN))] [uNm (fref u (fx+ uom oN))]
              [uA (fref u (fx+ uo oA))] [uAp (fref u (fx+ uop oA))] [uAm (fref u (fx+ uom oA))]
              [uB (fref u (fx+ uo oB))] [uBp (fref u (fx+ uop oB))] [uBm (fref u (fx+ uom oB))]
              [u4 (fref u (fx+ uo 32))] [u4p (fref u (fx+ uop 32))] [u4m (fref u (fx+ uom 32))]
              [vN (fref aux (fx+ ao sN))] [vNp (fref aux (fx+ aop sN))] [vNm (fref aux (fx+ aom sN))]
              [sqp (fref aux (fx+ aop aux-square))] [sqm (fref aux (fx+ aom aux-square))]
              [r0 (fl- (fl+ r0 (fl* dt1 (second-difference u0p u0 u0m))) (fl* t2 (fl- uNp uNm)))]
              [rN (fl- (fl+ (fl+ rN (fl* dt1 (second-difference uNp uN uNm)))
                            (fl* (fl* con2 con43) (second-difference vNp vN vNm)))
                       (fl* t2 (fl+ (fl- (fl* uNp vNp) (fl* uNm vNm))
                                    (fl* (fl+ (fl- (fl- u4p sqp) u4m) sqm) c2))))]
              [rA (fl- (fl+ (fl+ rA (fl* dt1 (second-difference uAp uA uAm)))
                            (fl* con2 (second-difference (fref aux (fx+ aop sA)) (fref aux (fx+ ao sA))
                                                         (fref aux (fx+ aom sA)))))
                       (fl* t2 (fl- (fl* uAp vNp) (fl* uAm vNm))))]
              [rB (fl- (fl+ (fl+ rB (fl* dt1 (second-difference uBp uB uBm)))
                            (fl* con2 (second-difference (fref aux (fx+ aop sB)) (fref aux (fx+ ao sB))
                                                         (fref aux (fx+ aom sB)))))
                       (fl* t2 (fl- (fl* uBp vNp) (fl* uBm vNm))))]
              [r4 (fl- (fl+ (fl+ (fl+ (fl+ r4 (fl* dt1 (second-difference u4p u4 u4m)))
                                      (fl* con3 (second-difference (fref aux (fx+ aop aux-qs))
                                                                   (fref aux (fx+ ao aux-qs))
                                                                   (fref aux (fx+ aom aux-qs)))))
                                (fl* con4 (fl+ (fl- (fl* vNp vNp) (fl* (fl* 2.0 vN) vN)) (fl* vNm vNm))))
                          (fl* con5 (fl+ (fl- (fl* u4p (fref aux (fx+ aop aux-rho)))
                                              (fl* (fl* 2.0 u4) (fref aux (fx+ ao aux-rho))))
                                         (fl* u4m (fref aux (fx+ aom aux-rho))))))
                       (fl* t2 (fl- (fl* (fl- (fl* c1 u4p) (fl* c2 sqp)) vNp)
                                    (fl* (fl- (fl* c1 u4m) (fl* c2 sqm)) vNm))))]
              [uo2p (fx+ uop su)] [uo2m (fx- uom su)]
              [r0 (fl- r0 (fl* dssp (fourth-difference g n (fref u uo2m) u0m u0 u0p (fref u uo2p))))]
              [rN (fl- rN (fl* dssp (fourth-difference g n (fref u (fx+ uo2m oN)) uNm uN uNp
                                                       (fref u (fx+ uo2p oN)))))]
              [rA (fl- rA (fl* dssp (fourth-difference g n (fref u (fx+ uo2m oA)) uAm uA uAp
                                                       (fref u (fx+ uo2p oA)))))]
              [rB (fl- rB (fl* dssp (fourth-difference g n (fref u (fx+ uo2m oB)) uBm uB uBp
                                                       (fref u (fx+ uo2p oB)))))]
              [r4 (fl- r4 (fl* dssp (fourth-difference g n (fref u (fx+ uo2m 32)) u4m u4 u4p
                                                       (fref u (fx+ uo2p 32)))))])
         body ...)]))

  ;; rhs at the interior points of plane k; with txinvr? also T^-1 rhs.
  (define (sp-rhs-plane! c u aux forcing rhs k txinvr?)
    (let* ([n (c-n c)] [dt (c-dt c)] [t2 (c-t2 c)] [con2 (c-con2 c)] [con3 (c-con3 c)]
           [con4 (c-con4 c)] [con5 (c-con5 c)] [c1 (c-c1 c)] [c2 (c-c2 c)]
           [con43 (c-con43 c)] [dssp (c-dssp c)] [bt (c-bt c)]
           [dx (vector-ref (c-ddt1 c) 0)] [dy (vector-ref (c-ddt1 c) 1)]
           [dz (vector-ref (c-ddt1 c) 2)]
           [sux 40] [suy (fx* 40 n)] [suz (fx* 40 (fx* n n))]
           [sax 64] [say (fx* 64 n)] [saz (fx* 64 (fx* n n))])
      (do ([j 1 (fx+ j 1)]) ((fx= j (fx- n 1)))
        (do ([i 1 (fx+ i 1)]) ((fx= i (fx- n 1)))
          (let* ([p (fx+ (fx* (fx+ (fx* k n) j) n) i)] [uo (fx* p 40)] [ao (fx* p aux-width)]
                 [r0 (fref forcing uo)] [r1 (fref forcing (fx+ uo 8))] [r2 (fref forcing (fx+ uo 16))]
                 [r3 (fref forcing (fx+ uo 24))] [r4 (fref forcing (fx+ uo 32))])
            (with-direction (r0 r1 r2 r3 r4) (8 16 24) (aux-us aux-vs aux-ws) (u aux uo ao sux sax i n)
                            (dx t2 con2 con3 con4 con5 c1 c2 con43 dssp)
              (with-direction (r0 r2 r1 r3 r4) (16 8 24) (aux-vs aux-us aux-ws) (u aux uo ao suy say j n)
                              (dy t2 con2 con3 con4 con5 c1 c2 con43 dssp)
                (with-direction (r0 r3 r1 r2 r4) (24 8 16) (aux-ws aux-us aux-vs) (u aux uo ao suz saz k n)
                                (dz t2 con2 con3 con4 con5 c1 c2 con43 dssp)
                  (let ([r0 (fl* r0 dt)] [r1 (fl* r1 dt)] [r2 (fl* r2 dt)] [r3 (fl* r3 dt)]
                        [r4 (fl* r4 dt)])
                    (if txinvr?
                        (let* ([ru1 (fref aux (fx+ ao aux-rho))] [uu (fref aux (fx+ ao aux-us))]
                               [vv (fref aux (fx+ ao aux-vs))] [ww (fref aux (fx+ ao aux-ws))]
                               [ac (fref aux (fx+ ao aux-speed))] [ac2inv (fl* ac ac)]
                               [t1 (fl* (fl/ c2 ac2inv)
                                        (fl+ (fl- (fl- (fl- (fl* (fref aux (fx+ ao aux-qs)) r0) (fl* uu r1))
                                                       (fl* vv r2))
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
