#!chezscheme
;;; EP, the embarrassingly parallel kernel (NPB 3.4): 2^(m+1) uniform
;;; deviates of the NPB generator, taken in pairs (x1, x2) scaled to
;;; (-1, 1); a pair with t = x1^2 + x2^2 <= 1 gives the Gaussian pair
;;; X = x1 sqrt(-2 ln t / t), Y = x2 sqrt(-2 ln t / t) (Marsaglia's polar
;;; method).  The result: sx = sum |X|, sy = sum |Y|, the number of pairs
;;; and the counts of pairs in the square annuli l <= max(|X|, |Y|) < l+1.
;;;
;;; The pairs come in 2^(m-16) batches of 2^16; a batch starts from the
;;; seed jumped 2^17 * k states ahead (random-power), so any worker can do
;;; any batch.  Each batch's sums go to their own slot of a shared vector and
;;; are added in batch order at the end: sx and sy are bit-identical for
;;; every mode and worker count.  Counts are exact, so each worker keeps
;;; its own.
;;;
;;; mpi mode: each rank fills its own batches' slots of its own vectors
;;; (the others stay 0.0), and one element-wise allreduce of the slots and
;;; one of the counts give every rank all of them (x + 0.0 is x exactly, so
;;; the sums are still bit-identical).
(library (nas ep)
  (export ep-run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join)
          (nas common) (nas random))

  (define ep-classes '(S W A B))
  (define ep-modes '(serial places threads futures mpi))

  (define batch-log2 16)                 ; pairs per batch: 2^16 (NPB's mk)
  (define batch-pairs (fxsll 1 batch-log2))
  (define annuli 10)                     ; NPB's nq
  (define ep-seed 271828183)

  ;; class -> m: 2^(m+1) deviates
  (define (class-m class) (case class [(S) 24] [(W) 25] [(A) 28] [(B) 30]))

  ;; NPB 3.4's verification values: sx, sy, the number of Gaussian pairs.
  (define (reference-sums class)
    (case class
      [(S) '(1.051299420395306e7 1.051517131857535e7 13176389)]
      [(W) '(2.102505525182392e7 2.103162209578822e7 26354769)]
      [(A) '(1.682235632304711e8 1.682195123368299e8 210832767)]
      [(B) '(6.728927543423024e8 6.728951822504275e8 843345606)]))

  ;; The counts per annulus where published: class S in the NPB sample
  ;; output, class A in the NPB report (RNR-91-002).  Both add up to the
  ;; reference number of pairs.
  (define (reference-counts class)
    (case class
      [(S) '#(6140517 5865300 1100361 68546 1648 17 0 0 0 0)]
      [(A) '#(98257395 93827014 17611549 1110028 26536 245 0 0 0 0)]
      [else #f]))

  (define two45 (fxsll 1 45))
  (define two90 (expt 2.0 90))
  (define two-90 (expt 2.0 -90))

  ;; Batch k's pairs: their sums into sxv[k], syv[k]; counts added to q
  ;; (this member's own fxvector).  No flonum is kept in a variable across
  ;; iterations but the two sums.
  ;;
  ;; Every flonum operation allocates on Chez 9.5.8, so the loop works on
  ;; a = |x - 2^45| = 2^45 |2r - 1| (exact): with x1 = 2r - 1, powers of two
  ;; commute with rounding, so T = a1^2 + a2^2 is exactly 2^90 t, the test
  ;; t <= 1 is T <= 2^90, and f' = sqrt(-2 ln t / T) is exactly 2^-45 f, so
  ;; a1 f' is |x1| f = |X|, bit for bit the reference's values.
  (define (ep-batch! k multiplier sxv syv q)
    (let loop ([i 0]
               [x (random-next ep-seed (random-power nas-multiplier (fx* k (fx* 2 batch-pairs))))]
               [sx 0.0] [sy 0.0])
      (if (fx= i batch-pairs)
          (begin (shared-flvector-set! sxv k sx) (shared-flvector-set! syv k sy))
          (let* ([xa (random-next x multiplier)]
                 [xb (random-next xa multiplier)]
                 [a1 (fixnum->flonum (fxabs (fx- xa two45)))]
                 [a2 (fixnum->flonum (fxabs (fx- xb two45)))]
                 [T (fl+ (fl* a1 a1) (fl* a2 a2))])
            (if (fl<= T two90)
                (let* ([f (flsqrt (fl/ (fl* -2.0 (fllog (fl* T two-90))) T))]
                       [gx (fl* a1 f)]
                       [gy (fl* a2 f)]
                       [l (flonum->fixnum (flmax gx gy))])
                  (fxvector-set! q l (fx+ (fxvector-ref q l) 1))
                  (loop (fx+ i 1) xb (fl+ sx gx) (fl+ sy gy)))
                (loop (fx+ i 1) xb sx sy))))))

  ;; Member id of np: batches in blocks (CGfor's rule), counts in row id.
  (define (ep-member! id np batches sxv syv counts)
    (let* ([q (fxquotient batches np)] [r (fxremainder batches np)]
           [start (fx+ (fx* id q) (fxmin id r))]
           [end (fx+ start q (if (fx< id r) 1 0))])
      (let ([q (make-fxvector annuli 0)])
        (do ([k start (fx+ k 1)]) ((fx= k end))
          (ep-batch! k nas-multiplier sxv syv q))
        (do ([l 0 (fx+ l 1)]) ((fx= l annuli))
          (shared-fxvector-set! counts (fx+ (fx* id annuli) l) (fxvector-ref q l))))))

  ;; The SPMD body: member 0 returns the seconds between two barriers
  ;; around the work, the others 0.
  (define (ep-kernel id np barrier batches sxv syv counts)
    (barrier)
    (let-values ([(v s) (nas-seconds
                          (lambda () (ep-member! id np batches sxv syv counts) (barrier)))])
      (if (fx= id 0) s 0.)))

  (define (run-places np batches sxv syv counts)
    (vector-ref
      (fork-join np cg ([b batches] [sxv sxv] [syv syv] [counts counts])
        (ep-kernel (CG-id cg) (CG-np cg) (lambda () (CGBarrier cg)) b sxv syv counts))
      0))

  ;; Returns member 0's seconds (work and the two reductions, as the
  ;; reference times them); the slots and counts land in sxv, syv, counts
  ;; (counts in row 0).
  (define (run-mpi comm batches sxv syv counts)
    (let ([r (fork-join comm cg ([batches batches])
               (let* ([id (CG-id cg)] [np (CG-np cg)]
                      [sx (make-shared-flvector batches 0.0)] [sy (make-shared-flvector batches 0.0)]
                      [q (make-shared-fxvector (fx* np annuli) 0)])
                 (CGBarrier cg)
                 (let-values ([(v s) (nas-seconds
                                       (lambda ()
                                         (ep-member! id np batches sx sy q)
                                         (list (CGallreduce cg + (shared-vector->vector sx))
                                               (CGallreduce cg + (shared-vector->vector sy))
                                               (fxvector->vector (CGallreduce cg + (counts-row q id))))))])
                   (if (fx= id 0) (cons s v) #f))))])
      (let ([m0 (vector-ref r 0)])
        (do ([k 0 (fx+ k 1)]) ((fx= k batches))
          (shared-flvector-set! sxv k (vector-ref (cadr m0) k))
          (shared-flvector-set! syv k (vector-ref (caddr m0) k)))
        (do ([l 0 (fx+ l 1)]) ((fx= l annuli))
          (shared-fxvector-set! counts l (vector-ref (cadddr m0) l)))
        (car m0))))

  (define (counts-row q id)
    (let ([row (make-fxvector annuli)])
      (do ([l 0 (fx+ l 1)]) ((fx= l annuli) row)
        (fxvector-set! row l (shared-fxvector-ref q (fx+ (fx* id annuli) l))))))

  (define (fxvector->vector v) (list->vector (fxvector->list v)))

  (define (shared-vector->vector v)
    (let ([out (make-vector (shared-flvector-length v))])
      (do ([i 0 (fx+ i 1)]) ((fx= i (vector-length out)) out)
        (vector-set! out i (shared-flvector-ref v i)))))

  (define (run-futures np batches sxv syv counts)
    (let-values ([(v s) (nas-seconds
                          (lambda ()
                            (let ([fs (let loop ([id 0] [acc '()])
                                        (if (fx= id np)
                                            (reverse acc)
                                            (loop (fx+ id 1)
                                                  (cons (let ([id id])
                                                          (future (lambda () (ep-member! id np batches sxv syv counts))))
                                                        acc))))])
                              (for-each touch fs))))])
      s))

  (define (ep-run class mode np)
    (check-nas-arguments 'ep-run class ep-classes mode ep-modes np)
    (let* ([m (class-m class)]
           [batches (fxsll 1 (fx- m batch-log2))]
           [sxv (make-shared-flvector batches 0.0)]
           [syv (make-shared-flvector batches 0.0)]
           [counts (make-shared-fxvector (fx* np annuli) 0)]
           [seconds
            (case mode
              [(serial) (ep-kernel 0 1 void batches sxv syv counts)]
              [(places) (run-places np batches sxv syv counts)]
              [(threads) (vector-ref (threads-spmd np (lambda (id barrier)
                                                        (ep-kernel id np barrier batches sxv syv counts)))
                                     0)]
              [(futures) (run-futures np batches sxv syv counts)]
              [(mpi) (run-mpi (nas-mpi-members 'ep-run np) batches sxv syv counts)])])
      (let* ([sum-in-order (lambda (v)
                             (do ([k 0 (fx+ k 1)] [s 0.0 (fl+ s (shared-flvector-ref v k))])
                                 ((fx= k batches) s)))]
             [sx (sum-in-order sxv)]
             [sy (sum-in-order syv)]
             [q (let ([q (make-vector annuli 0)])
                  (do ([id 0 (fx+ id 1)]) ((fx= id np) q)
                    (do ([l 0 (fx+ l 1)]) ((fx= l annuli))
                      (vector-set! q l (+ (vector-ref q l)
                                          (shared-fxvector-ref counts (fx+ (fx* id annuli) l)))))))]
             [pairs (apply + (vector->list q))]
             [ref (reference-sums class)]
             [ref-q (reference-counts class)]
             [ok-sx (within-epsilon? sx (car ref) 1e-8)]
             [ok-sy (within-epsilon? sy (cadr ref) 1e-8)]
             [ok-pairs (= pairs (caddr ref))]
             [ok-q (or (not ref-q) (equal? q ref-q))])
        (make-nas-result 'ep class mode np seconds
                         (/ (expt 2 (+ m 1)) seconds 1e6)
                         (and ok-sx ok-sy ok-pairs ok-q)
                         (list (format "sx ~a (reference ~a, error ~,2e)" sx (car ref) (relative-error sx (car ref)))
                               (format "sy ~a (reference ~a, error ~,2e)" sy (cadr ref) (relative-error sy (cadr ref)))
                               (format "pairs ~a (reference ~a)" pairs (caddr ref))
                               (if ref-q
                                   (format "counts ~a (reference ~a)" q ref-q)
                                   (format "counts ~a (no published reference for class ~a; their sum is checked)" q class)))))))

  (lift-places (nas ep)))
