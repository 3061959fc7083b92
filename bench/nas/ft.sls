#!chezscheme
;;; FT, the 3-D FFT PDE kernel (NPB 3.4): u(x, 0) is a complex
;;; nx*ny*nz array of NPB deviates (element (i, j, k) takes deviates
;;; 2m+1 and 2m+2 after the seed, m = (k*ny + j)*nx + i); its forward 3-D
;;; FFT is evolved in Fourier space by exp(-4 alpha pi^2 |k|^2 t), and
;;; after each of niter steps the inverse 3-D FFT's checksum, the sum of
;;; 1024 elements (j mod nx, 3j mod ny, 5j mod nz) over ntotal, is checked
;;; against the official values to a relative 1e-12.
;;;
;;; Decomposition: the x and y lines of plane k (a z plane) are done by the
;;; member owning plane k, the z lines of slab j (fixed y) by the member
;;; owning slab j (planes and slabs in CGfor's blocks).  A member copies a
;;; plane or a slab from the global array into a local bytevector with one
;;; memcpy per row, transforms there, and copies it back: a barrier
;;; separates the plane pass from the slab pass.  The evolution is done in
;;; the slab pass, before the inverse z transform; the inverse x and y
;;; transforms of a plane feed only the checksum, so they are not stored.
;;;
;;; Global arrays are bytevectors in serial and threads modes and shared
;;; flvectors in places mode, mapped by each member.  Each member sums the
;;; checksum elements of its own planes into its slot of a shared partials
;;; array; member 0 adds the slots in id order at the end.
(library (nas ft)
  (export ft-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (only (spindle private places shared-vector) shared-vector-fd)
          (only (spindle private os memory) map-shared unmap
                foreign->bytevector! bytevector->foreign!)
          (nas common) (nas random) (nas ft-fft))

  (define ft-classes '(S W A))
  (define ft-modes '(serial places threads))

  ;; class -> #(nx ny nz niter)
  (define (class-size class)
    (case class [(S) '#(64 64 64 6)] [(W) '#(128 128 32 6)] [(A) '#(256 256 128 6)]))

  ;; NPB 3.4's checksums, one (re . im) per step.
  (define (reference-checksums class)
    (case class
      [(S) '((554.6087004964 . 484.5363331978) (554.6385409189 . 486.5304269511)
             (554.6148406171 . 488.3910722336) (554.5423607415 . 490.1273169046)
             (554.4255039624 . 491.7475857993) (554.2683411902 . 493.2597244941))]
      [(W) '((567.3612178944 . 529.3246849175) (563.1436885271 . 528.2149986629)
             (559.4024089970 . 527.0996558037) (556.0698047020 . 526.0027904925)
             (553.0898991250 . 524.9400845633) (550.4159734538 . 523.9212247086))]
      [(A) '((504.6735008193 . 511.4047905510) (505.9412319734 . 509.8809666433)
             (506.9376896287 . 509.8144042213) (507.7892868474 . 510.1336130759)
             (508.5233095391 . 510.4914655194) (509.1487099959 . 510.7917842803))]))

  (define epsilon 1e-12)
  (define alpha 1e-6)
  (define checksum-points 1024)
  (define block 32)                     ; lines per call of fft-lines!

  ;; ---------------------------------------------------------------- global arrays
  ;; A global array is a bytevector or the address of a mapped shared
  ;; flvector.  Complex elements: 16 bytes; partials: 8-byte doubles.
  (define (global-load! g e bv off count)
    (if (bytevector? g)
        (bytevector-copy! g (fx* 16 e) bv off (fx* 16 count))
        (foreign->bytevector! (+ g (fx* 16 e)) bv off (fx* 16 count))))

  (define (global-store! g e bv off count)
    (if (bytevector? g)
        (bytevector-copy! bv off g (fx* 16 e) (fx* 16 count))
        (bytevector->foreign! bv off (+ g (fx* 16 e)) (fx* 16 count))))

  (define (global-double-set! g i x)
    (if (bytevector? g)
        (bytevector-ieee-double-native-set! g (fx* 8 i) x)
        (foreign-set! 'double-float g (fx* 8 i) x)))

  (define (global-double-ref g i)
    (if (bytevector? g)
        (bytevector-ieee-double-native-ref g (fx* 8 i))
        (foreign-ref 'double-float g (fx* 8 i))))

  ;; Calls (proc address ...) with the shared flvectors vs mapped here;
  ;; unmaps them on the way out.
  (define (with-mapped vs proc)
    (let ([sizes (map (lambda (v) (fx* 8 (shared-flvector-length v))) vs)]
          [addresses '()])
      (dynamic-wind
        (lambda ()
          (set! addresses (map (lambda (v size) (map-shared 'ft-run (shared-vector-fd v) size #t))
                               vs sizes)))
        (lambda () (apply proc addresses))
        (lambda () (for-each unmap addresses sizes) (set! addresses '())))))

  ;; ---------------------------------------------------------------- the kernel
  ;; Member id's block of n items: (values start end).
  (define (share n np id)
    (let* ([q (fxquotient n np)] [r (fxremainder n np)]
           [start (fx+ (fx* id q) (fxmin id r))])
      (values start (fx+ start q (if (fx< id r) 1 0)))))

  ;; Squared frequency of index i of n: ((i + n/2) mod n - n/2)^2.
  (define (frequency-squares n)
    (let ([v (make-fxvector n)])
      (do ([i 0 (fx+ i 1)]) ((fx= i n) v)
        (let ([f (fx- (fxmodulo (fx+ i (fxquotient n 2)) n) (fxquotient n 2))])
          (fxvector-set! v i (fx* f f))))))

  ;; ex[m] = exp(ap m), ap = -4 alpha pi^2: the factor of one step at
  ;; squared frequency m, the same double as NPB's twiddle.
  (define (evolution-factors nx ny nz)
    (let* ([pi (fl* 4.0 (atan 1.0))]
           [ap (fl* (fl* (fl* -4.0 alpha) pi) pi)]
           [size (fx+ 1 (fx* (fxquotient nx 2) (fxquotient nx 2))
                      (fx* (fxquotient ny 2) (fxquotient ny 2))
                      (fx* (fxquotient nz 2) (fxquotient nz 2)))]
           [ex (make-bytevector (fx* 8 size))])
      (do ([m 0 (fx+ m 1)]) ((fx= m size) ex)
        (bytevector-ieee-double-native-set! ex (fx* 8 m) (exp (fl* ap (fixnum->flonum m)))))))

  ;; The SPMD body.  u0: the Fourier-space state; u1: the inverse z
  ;; transform of each step; partials: (step, member) -> checksum re, im.
  ;; Returns, in member 0, #(seconds re1 im1 ... re_niter im_niter);
  ;; elsewhere #f.
  (define (ft-member id np barrier size u0 u1 partials)
    (let*-values ([(nx) (vector-ref size 0)] [(ny) (vector-ref size 1)]
                  [(nz) (vector-ref size 2)] [(niter) (vector-ref size 3)]
                  [(k0 k1) (share nz np id)]
                  [(j0 j1) (share ny np id)])
      (let ([plane (make-bytevector (fx* 16 (fx* nx ny)))]
            [slab (make-bytevector (fx* 16 (fx* nx nz)))]
            [w1 (make-bytevector (fx* 16 (fx* block (fxmax nx ny nz))))]
            [w2 (make-bytevector (fx* 16 (fx* block (fxmax nx ny nz))))]
            [row (fx* 16 nx)])
        ;; The x lines (rows) and y lines (columns) of the plane buffer.
        (define (plane-fft! px py)
          (do ([j 0 (fx+ j block)]) ((fx>= j ny))
            (fft-lines! px (fxmin block (fx- ny j)) plane (fx* j row) 16 row w1 w2))
          (do ([i 0 (fx+ i block)]) ((fx>= i nx))
            (fft-lines! py (fxmin block (fx- nx i)) plane (fx* 16 i) row 16 w1 w2)))
        (define (slab-fft! pz)
          (do ([i 0 (fx+ i block)]) ((fx>= i nx))
            (fft-lines! pz (fxmin block (fx- nx i)) slab (fx* 16 i) row 16 w1 w2)))
        ;; slab j <-> its nz rows in u
        (define (load-slab! u j)
          (do ([k 0 (fx+ k 1)]) ((fx= k nz))
            (global-load! u (fx* nx (fx+ j (fx* k ny))) slab (fx* k row) nx)))
        (define (store-slab! u j)
          (do ([k 0 (fx+ k 1)]) ((fx= k nz))
            (global-store! u (fx* nx (fx+ j (fx* k ny))) slab (fx* k row) nx)))
        (define (forward! px py pz)
          (do ([k k0 (fx+ k 1)]) ((fx= k k1))
            (random-fill! (random-next nas-seed (random-power nas-multiplier (fx* 2 (fx* nx (fx* ny k)))))
                          nas-multiplier (fx* 2 (fx* nx ny)) plane 0)
            (plane-fft! px py)
            (global-store! u0 (fx* k (fx* nx ny)) plane 0 (fx* nx ny)))
          (barrier)
          (do ([j j0 (fx+ j 1)]) ((fx= j j1))
            (load-slab! u0 j)
            (slab-fft! pz)
            (store-slab! u0 j)))
        ;; the slab times ex[sqx[i] + sqy[j] + sqz[k]]
        (define (evolve-slab! ex sqx sqy sqz j)
          (let ([fj (fxvector-ref sqy j)])
            (do ([k 0 (fx+ k 1)]) ((fx= k nz))
              (let ([fjk (fx+ fj (fxvector-ref sqz k))])
                (do ([i 0 (fx+ i 1)] [o (fx* k row) (fx+ o 16)]) ((fx= i nx))
                  (let ([f (bytevector-ieee-double-native-ref ex (fx* 8 (fx+ fjk (fxvector-ref sqx i))))])
                    (bytevector-ieee-double-native-set!
                      slab o (fl* f (bytevector-ieee-double-native-ref slab o)))
                    (bytevector-ieee-double-native-set!
                      slab (fx+ o 8) (fl* f (bytevector-ieee-double-native-ref slab (fx+ o 8))))))))))
        ;; this member's checksum elements of plane k added to (re . im)
        (define (checksum-plane k re im)
          (let loop ([p 1] [re re] [im im])
            (cond
              [(fx> p checksum-points) (values re im)]
              [(fx= (fxmodulo (fx* 5 p) nz) k)
               (let ([o (fx* 16 (fx+ (fxmodulo p nx) (fx* nx (fxmodulo (fx* 3 p) ny))))])
                 (loop (fx+ p 1)
                       (fl+ re (bytevector-ieee-double-native-ref plane o))
                       (fl+ im (bytevector-ieee-double-native-ref plane (fx+ o 8)))))]
              [else (loop (fx+ p 1) re im)])))
        (define (step! t ex sqx sqy sqz ix iy iz)
          (do ([j j0 (fx+ j 1)]) ((fx= j j1))
            (load-slab! u0 j)
            (evolve-slab! ex sqx sqy sqz j)
            (store-slab! u0 j)
            (slab-fft! iz)
            (store-slab! u1 j))
          (barrier)
          (let loop ([k k0] [re 0.0] [im 0.0])
            (if (fx= k k1)
                (let ([slot (fx* 2 (fx+ id (fx* np t)))])
                  (global-double-set! partials slot re)
                  (global-double-set! partials (fx+ slot 1) im))
                (begin
                  (global-load! u1 (fx* k (fx* nx ny)) plane 0 (fx* nx ny))
                  (plane-fft! ix iy)
                  (let-values ([(re im) (checksum-plane k re im)])
                    (loop (fx+ k 1) re im)))))
          (barrier))
        (define (run)
          ;; NPB times the set-up of the factors and the roots as well
          (let ([ex (evolution-factors nx ny nz)]
                [sqx (frequency-squares nx)] [sqy (frequency-squares ny)] [sqz (frequency-squares nz)]
                [px (make-fft-plan nx #f)] [py (make-fft-plan ny #f)] [pz (make-fft-plan nz #f)]
                [ix (make-fft-plan nx #t)] [iy (make-fft-plan ny #t)] [iz (make-fft-plan nz #t)])
            (forward! px py pz)
            (do ([t 0 (fx+ t 1)]) ((fx= t niter))
              (step! t ex sqx sqy sqz ix iy iz))))
        ;; an untimed forward transform first, as in the reference
        (forward! (make-fft-plan nx #f) (make-fft-plan ny #f) (make-fft-plan nz #f))
        (barrier)
        (let-values ([(v seconds) (nas-seconds run)])
          (and (fx= id 0)
               (let ([out (make-vector (fx+ 1 (fx* 2 niter)))]
                     [ntotal (fixnum->flonum (fx* nx (fx* ny nz)))])
                 (vector-set! out 0 seconds)
                 (do ([t 0 (fx+ t 1)]) ((fx= t niter) out)
                   (let loop ([m 0] [re 0.0] [im 0.0])
                     (if (fx= m np)
                         (begin (vector-set! out (fx+ 1 (fx* 2 t)) (fl/ re ntotal))
                                (vector-set! out (fx+ 2 (fx* 2 t)) (fl/ im ntotal)))
                         (let ([slot (fx* 2 (fx+ m (fx* np t)))])
                           (loop (fx+ m 1)
                                 (fl+ re (global-double-ref partials slot))
                                 (fl+ im (global-double-ref partials (fx+ slot 1))))))))))))))

  ;; ---------------------------------------------------------------- modes
  (define (run-places np size)
    (let* ([n (fx* 2 (fx* (vector-ref size 0) (fx* (vector-ref size 1) (vector-ref size 2))))]
           [u0 (make-shared-flvector n)] [u1 (make-shared-flvector n)]
           [partials (make-shared-flvector (fx* 2 (fx* np (vector-ref size 3))))])
      (vector-ref
        (fork-join np cg ([size size] [u0 u0] [u1 u1] [partials partials])
          (with-mapped (list u0 u1 partials)
            (lambda (a0 a1 ap)
              (ft-member (CG-id cg) (CG-np cg) (lambda () (CGBarrier cg)) size a0 a1 ap))))
        0)))

  (define (run-threads np size)
    (let* ([n (fx* 16 (fx* (vector-ref size 0) (fx* (vector-ref size 1) (vector-ref size 2))))]
           [u0 (make-bytevector n 0)] [u1 (make-bytevector n 0)]
           [partials (make-bytevector (fx* 16 (fx* np (vector-ref size 3))) 0)])
      (vector-ref
        (threads-spmd np (lambda (id barrier) (ft-member id np barrier size u0 u1 partials)))
        0)))

  (define (run-serial size)
    (let ([n (fx* 16 (fx* (vector-ref size 0) (fx* (vector-ref size 1) (vector-ref size 2))))])
      (ft-member 0 1 void size (make-bytevector n 0) (make-bytevector n 0)
                 (make-bytevector (fx* 16 (vector-ref size 3)) 0))))

  ;; NPB's operation count of FT.
  (define (ft-mops size seconds)
    (let ([n (fixnum->flonum (fx* (vector-ref size 0) (fx* (vector-ref size 1) (vector-ref size 2))))])
      (/ (* 1e-6 n (+ 14.8157 (* 7.19641 (log n))
                      (* (+ 5.23518 (* 7.21113 (log n))) (vector-ref size 3))))
         seconds)))

  (define (ft-run class mode np)
    (check-nas-arguments 'ft-run class ft-classes mode ft-modes np)
    (let* ([size (class-size class)]
           [out (case mode
                  [(serial) (run-serial size)]
                  [(places) (run-places np size)]
                  [(threads) (run-threads np size)])]
           [seconds (vector-ref out 0)]
           [checks
            (let loop ([t 0] [refs (reference-checksums class)])
              (if (null? refs)
                  '()
                  (let* ([c (make-rectangular (vector-ref out (fx+ 1 (fx* 2 t)))
                                              (vector-ref out (fx+ 2 (fx* 2 t))))]
                         [ref (make-rectangular (caar refs) (cdar refs))]
                         [err (/ (magnitude (- c ref)) (magnitude ref))])
                    (cons (cons (<= err epsilon)
                                (format "checksum ~a: ~,10f ~,10f (reference ~a ~a, error ~,2e)"
                                        (fx+ t 1) (real-part c) (imag-part c) (caar refs) (cdar refs) err))
                          (loop (fx+ t 1) (cdr refs))))))])
      (make-nas-result 'ft class mode np seconds (ft-mops size seconds)
                       (for-all car checks) (map cdr checks))))

  (lift-places (nas ft)))
