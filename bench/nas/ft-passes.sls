#!chezscheme
;;; The passes of NAS FT's 3-D transforms, as done by one member of np over
;;; the global arrays.  Element (i, j, k) of an nx*ny*nz complex array is
;;; at index (k*ny + j)*nx + i.  The member owning plane k (fixed z; planes
;;; split in CGfor's blocks) transforms its x lines (rows) and y lines
;;; (columns); the member owning slab j (fixed y) transforms its z lines.
;;; A member copies a plane or a slab from the global array into a local
;;; bytevector with one memcpy per row, transforms it there and copies it
;;; back; the caller separates a plane pass from a slab pass by a barrier.
;;;
;;; A member reads and writes the arrays through two views: the plane
;;; view (u0 written by the forward plane pass, u1 read by the inverse one)
;;; holds row (j, k) at element ((k - k-origin) ny + j) nx, the slab view
;;; (u0 of the slab passes, u1 written by the inverse z transforms) at
;;; ((k width) + j - j-origin) nx.  Over the global arrays both are the
;;; global layout (origins 0, width ny).  A member of its own
;;; (make-ft-member/own: mode mpi) holds only its planes (k-origin k0) and
;;; its slabs (j-origin j0, width j1 - j0): u0's slabs in one vector, and
;;; u0's planes, u1's slabs and u1's planes in another (each is dead
;;; before the next is written: the transposes between them go through a
;;; buffer of (nas ft-mpi)).
;;;
;;; The global arrays are shared flvectors, read and written unchecked.
;;; Outside the Scheme heap, a collection never copies them (Chez 9.5.8
;;; copies a 256 MB bytevector in 350 ms at each collection of its
;;; generation), and every mode runs on the same memory.
(library (nas ft-passes)
  (export make-ft-member make-ft-member/own make-ft-tables
          ft-member-k0 ft-member-k1 ft-member-j0
          ft-member-plane-u0 ft-member-slab-u0 ft-member-slab-u1 ft-plane-row
          ft-own-array-doubles
          forward-planes! forward-slabs! step-slabs! step-planes!
          global-double-ref global-double-set!)
  (import (chezscheme)
          (only (spindle) make-shared-flvector)
          (only (spindle unsafe) unsafe-shared-vector->bytevector! unsafe-bytevector->shared-vector!
                unsafe-shared-flvector-ref unsafe-shared-flvector-set!)
          (nas random) (nas ft-fft))

  (define alpha 1e-6)
  (define checksum-points 1024)
  (define block 32)                     ; lines per call of fft-lines!

  ;; ---------------------------------------------------------------- global arrays
  ;; Complex elements: 16 bytes; doubles: 8.
  (define (global-load! g e bv off count)
    (unsafe-shared-vector->bytevector! g (fx* 16 e) bv off (fx* 16 count)))

  (define (global-store! g e bv off count)
    (unsafe-bytevector->shared-vector! bv off g (fx* 16 e) (fx* 16 count)))

  (define (global-double-set! g i x) (unsafe-shared-flvector-set! g i x))

  (define (global-double-ref g i) (unsafe-shared-flvector-ref g i))

  ;; ---------------------------------------------------------------- set-up
  ;; size: #(nx ny nz niter).  A member: its planes [k0, k1) and slabs
  ;; [j0, j1), its views (above) and its local buffers.
  (define-record-type (ft-member make-ft-member* ft-member?)
    (fields nx ny nz k0 k1 j0 j1 plane-u0 plane-u1 k-origin slab-u0 slab-u1 j-origin width
            plane slab w1 w2)
    (protocol
      (lambda (new)
        (lambda (id np size own? u0 u1)
          (let*-values ([(nx ny nz) (values (vector-ref size 0) (vector-ref size 1) (vector-ref size 2))]
                        [(k0 k1) (share nz np id)]
                        [(j0 j1) (share ny np id)]
                        [(work) (fx* 16 (fx* block (fxmax nx ny nz)))])
            (let-values ([(pu0 pu1 ko su0 su1 jo width)
                          (if own?
                              (values u1 u1 k0 u0 u1 j0 (fx- j1 j0))
                              (values u0 u1 0 u0 u1 0 ny))])
              (new nx ny nz k0 k1 j0 j1 pu0 pu1 ko su0 su1 jo width
                   (make-bytevector (fx* 16 (fx* nx ny))) (make-bytevector (fx* 16 (fx* nx nz)))
                   (make-bytevector work) (make-bytevector work)))))))
    (sealed #t))

  ;; Member id of np over the global arrays u0 and u1.
  (define (make-ft-member id np size u0 u1) (make-ft-member* id np size #f u0 u1))

  ;; Member id of np with arrays of its own (above), allocated here.
  (define (make-ft-member/own id np size)
    (let-values ([(slabs other) (ft-own-array-doubles size np id)])
      (make-ft-member* id np size #t
                       (make-shared-flvector (fxmax 2 slabs) 0.0) (make-shared-flvector (fxmax 2 other) 0.0))))

  ;; (values slabs other): the doubles of the two vectors of member id's
  ;; own arrays: its slabs, and the larger of its slabs and its planes.
  (define (ft-own-array-doubles size np id)
    (let*-values ([(nx ny nz) (values (vector-ref size 0) (vector-ref size 1) (vector-ref size 2))]
                  [(k0 k1) (share nz np id)]
                  [(j0 j1) (share ny np id)])
      (let ([slabs (fx* 2 (fx* nx (fx* nz (fx- j1 j0))))])
        (values slabs (fxmax slabs (fx* 2 (fx* nx (fx* ny (fx- k1 k0)))))))))

  ;; The element index of row (j = 0, k) of the plane view, and of row
  ;; (j, k) of the slab view.
  (define (ft-plane-row me k)
    (fx* (fx* (ft-member-nx me) (ft-member-ny me)) (fx- k (ft-member-k-origin me))))
  (define (ft-slab-row me j k)
    (fx* (ft-member-nx me) (fx+ (fx* k (ft-member-width me)) (fx- j (ft-member-j-origin me)))))

  ;; Member id's block of n items: (values start end).
  (define (share n np id)
    (let* ([q (fxquotient n np)] [r (fxremainder n np)]
           [start (fx+ (fx* id q) (fxmin id r))])
      (values start (fx+ start q (if (fx< id r) 1 0)))))

  ;; What NPB sets up in its timed part: the evolution factors and the
  ;; roots of unity.  Read-only: members may share them.
  (define-record-type ft-tables
    (fields ex sqx sqy sqz px py pz ix iy iz)
    (protocol
      (lambda (new)
        (lambda (size)
          (let ([nx (vector-ref size 0)] [ny (vector-ref size 1)] [nz (vector-ref size 2)])
            (new (evolution-factors nx ny nz)
                 (frequency-squares nx) (frequency-squares ny) (frequency-squares nz)
                 (make-fft-plan nx #f) (make-fft-plan ny #f) (make-fft-plan nz #f)
                 (make-fft-plan nx #t) (make-fft-plan ny #t) (make-fft-plan nz #t))))))
    (sealed #t))

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

  ;; ---------------------------------------------------------------- local work
  ;; The x lines (rows) and y lines (columns) of the plane buffer.
  (define (plane-fft! me px py)
    (let ([nx (ft-member-nx me)] [ny (ft-member-ny me)] [plane (ft-member-plane me)]
          [w1 (ft-member-w1 me)] [w2 (ft-member-w2 me)] [row (fx* 16 (ft-member-nx me))])
      (do ([j 0 (fx+ j block)]) ((fx>= j ny))
        (fft-lines! px (fxmin block (fx- ny j)) plane (fx* j row) 16 row w1 w2))
      (do ([i 0 (fx+ i block)]) ((fx>= i nx))
        (fft-lines! py (fxmin block (fx- nx i)) plane (fx* 16 i) row 16 w1 w2))))

  ;; The z lines of the slab buffer: its row k is z = k.
  (define (slab-fft! me pz)
    (let ([nx (ft-member-nx me)] [row (fx* 16 (ft-member-nx me))])
      (do ([i 0 (fx+ i block)]) ((fx>= i nx))
        (fft-lines! pz (fxmin block (fx- nx i)) (ft-member-slab me) (fx* 16 i) row 16
                    (ft-member-w1 me) (ft-member-w2 me)))))

  ;; slab j <-> its nz rows in u
  (define (load-slab! me u j)
    (let ([nx (ft-member-nx me)])
      (do ([k 0 (fx+ k 1)]) ((fx= k (ft-member-nz me)))
        (global-load! u (ft-slab-row me j k) (ft-member-slab me) (fx* 16 (fx* k nx)) nx))))

  (define (store-slab! me u j)
    (let ([nx (ft-member-nx me)])
      (do ([k 0 (fx+ k 1)]) ((fx= k (ft-member-nz me)))
        (global-store! u (ft-slab-row me j k) (ft-member-slab me) (fx* 16 (fx* k nx)) nx))))

  ;; Slab j of u times ex[sqx[i] + sqy[j] + sqz[k]], written back to u
  ;; and into the slab buffer in one pass (no copy of the slab in and out).
  ;; The unchecked accesses stay inside u: element (i, j, k), i < nx,
  ;; k < nz, with j one of u's slabs.
  (define (evolve-slab! me u tables j)
    (let ([nx (ft-member-nx me)] [slab (ft-member-slab me)]
          [ex (ft-tables-ex tables)] [sqx (ft-tables-sqx tables)] [sqz (ft-tables-sqz tables)]
          [fj (fxvector-ref (ft-tables-sqy tables) j)])
      (do ([k 0 (fx+ k 1)]) ((fx= k (ft-member-nz me)))
        (let ([fjk (fx+ fj (fxvector-ref sqz k))])
          (do ([i 0 (fx+ i 1)]
               [g (fx* 2 (ft-slab-row me j k)) (fx+ g 2)]
               [o (fx* 16 (fx* k nx)) (fx+ o 16)])
              ((fx= i nx))
            (let* ([f (bytevector-ieee-double-native-ref ex (fx* 8 (fx+ fjk (fxvector-ref sqx i))))]
                   [re (fl* f (unsafe-shared-flvector-ref u g))]
                   [im (fl* f (unsafe-shared-flvector-ref u (fx+ g 1)))])
              (unsafe-shared-flvector-set! u g re)
              (unsafe-shared-flvector-set! u (fx+ g 1) im)
              (bytevector-ieee-double-native-set! slab o re)
              (bytevector-ieee-double-native-set! slab (fx+ o 8) im)))))))

  ;; The checksum elements (p mod nx, 3p mod ny, 5p mod nz), p = 1 .. 1024,
  ;; of plane k (in the plane buffer) added to re, im.
  (define (checksum-plane me k re im)
    (let ([nx (ft-member-nx me)] [ny (ft-member-ny me)] [nz (ft-member-nz me)]
          [plane (ft-member-plane me)])
      (let loop ([p 1] [re re] [im im])
        (cond
          [(fx> p checksum-points) (values re im)]
          [(fx= (fxmodulo (fx* 5 p) nz) k)
           (let ([o (fx* 16 (fx+ (fxmodulo p nx) (fx* nx (fxmodulo (fx* 3 p) ny))))])
             (loop (fx+ p 1)
                   (fl+ re (bytevector-ieee-double-native-ref plane o))
                   (fl+ im (bytevector-ieee-double-native-ref plane (fx+ o 8)))))]
          [else (loop (fx+ p 1) re im)]))))

  ;; ---------------------------------------------------------------- the passes
  ;; Forward transform of the initial conditions into u0.  Plane k starts
  ;; from the seed jumped 2*nx*ny*k deviates ahead.
  (define (forward-planes! me tables)
    (let* ([nx (ft-member-nx me)] [ny (ft-member-ny me)] [count (fx* nx ny)])
      (do ([k (ft-member-k0 me) (fx+ k 1)]) ((fx= k (ft-member-k1 me)))
        (random-fill! (random-next nas-seed (random-power nas-multiplier (fx* 2 (fx* count k))))
                      nas-multiplier (fx* 2 count) (ft-member-plane me) 0)
        (plane-fft! me (ft-tables-px tables) (ft-tables-py tables))
        (global-store! (ft-member-plane-u0 me) (ft-plane-row me k) (ft-member-plane me) 0 count))))

  (define (forward-slabs! me tables)
    (do ([j (ft-member-j0 me) (fx+ j 1)]) ((fx= j (ft-member-j1 me)))
      (load-slab! me (ft-member-slab-u0 me) j)
      (slab-fft! me (ft-tables-pz tables))
      (store-slab! me (ft-member-slab-u0 me) j)))

  ;; A step: u0 evolves one step; its inverse z transform goes to u1.
  (define (step-slabs! me tables)
    (do ([j (ft-member-j0 me) (fx+ j 1)]) ((fx= j (ft-member-j1 me)))
      (evolve-slab! me (ft-member-slab-u0 me) tables j)
      (slab-fft! me (ft-tables-iz tables))
      (store-slab! me (ft-member-slab-u1 me) j)))

  ;; ... then the inverse y and x transforms of the member's planes of u1,
  ;; which only the checksum reads (so they are not stored): returns the
  ;; sum of the member's checksum elements, (values re im), not divided by
  ;; ntotal.
  (define (step-planes! me tables)
    (let ([count (fx* (ft-member-nx me) (ft-member-ny me))])
      (let loop ([k (ft-member-k0 me)] [re 0.0] [im 0.0])
        (if (fx= k (ft-member-k1 me))
            (values re im)
            (begin
              (global-load! (ft-member-plane-u1 me) (ft-plane-row me k) (ft-member-plane me) 0 count)
              (plane-fft! me (ft-tables-ix tables) (ft-tables-iy tables))
              (let-values ([(re im) (checksum-plane me k re im)])
                (loop (fx+ k 1) re im))))))))
