#!chezscheme
;;; LU's SSOR iterations as one SPMD member: member id of np runs its share
;;; of every phase; barrier is a procedure that returns once all np members
;;; have called it.  Serial mode is member 0 of 1 with a no-op barrier.
;;;
;;; Work is split in blocks: the rhs's first two phases by planes k; its
;;; third phase, the sweeps, the update of u and the residual norm by
;;; points of a plane (the same points for a member in all of these: no
;;; barrier separates the third phase from the next iteration's scaling): the m^2 interior points of every plane (m = n - 2), ordered by
;;; j then i, in np contiguous blocks, so that an odd row count does not
;;; give one member a whole row more (class W: 481 and 480 points, not 16
;;; and 15 rows).  A block is at least a row long (or, for np > m, whole
;;; rows): a point's neighbours i-1 and j-1 then belong to the member
;;; itself or to member w-1, i+1 and j+1 to w or w+1.  The sweeps are a
;;; pipeline over the planes: in the lower sweep member w does plane k
;;; once member w-1 has done plane k; in the upper sweep, the other way
;;; round.  rhs's x and y lines are split by half planes (xy-halves).
;;; flags, a shared fxvector of 2 np slots: slot w counts the planes
;;; member w has finished over the whole run, slot np + w its shared x
;;; halves, so a member waits for a count, never for an event it could
;;; miss.  rhs's first phase is pointwise: in the iterations each member
;;; does it at its own interior points right after their update of u (the
;;; boundary's never changes), which saves its barrier.  Per iteration: a
;;; barrier after the update and one inside rhs.
(library (nas lu-ssor)
  (export lu-member)
  (import (except (chezscheme) fl+ fl- fl* fl/ flsqrt fx+ fx- fx* fx= fx< fx> fx<= fx>= fxsll)
          (nas member-usage) (nas lu-ops) (nas lu-grid) (nas lu-rhs) (nas lu-sweep)
          (only (spindle) shared-fxvector-ref shared-fxvector-set!))

  ;; The block [lo, hi) of member id in [from, to).
  (define (block id np from to)
    (let* ([count (fx- to from)] [q (fxquotient count np)] [r (fxremainder count np)]
           [lo (fx+ from (fx* id q) (fxmin id r))])
      (values lo (fx+ lo q (if (fx< id r) 1 0)))))

  ;; Member id's points of a plane as a list of rows (j i-lo . i-hi), j
  ;; ascending, i-lo .. i-hi - 1 its points of row j (interior indices
  ;; 1 .. m).
  (define (own-rows id np m)
    (let-values ([(q-lo q-hi) (if (fx<= np m)
                                  (block id np 0 (fx* m m))
                                  (let-values ([(lo hi) (block id np 0 m)])
                                    (values (fx* lo m) (fx* hi m))))])
      (let loop ([q q-lo] [acc '()])
        (if (fx>= q q-hi)
            (reverse acc)
            (let* ([j (fxquotient q m)] [end (fxmin q-hi (fx* (fx+ j 1) m))])
              (loop end (cons (cons (fx+ j 1) (cons (fx+ 1 (fx- q (fx* j m)))
                                                    (fx+ 1 (fx- end (fx* j m)))))
                              acc)))))))

  ;; Member id's share of rhs's x and y lines: the 2 (n-2) halves of the
  ;; interior planes (plane k's x lines, then its y lines) in np blocks,
  ;; so that an odd plane count does not give one member a whole plane
  ;; more.  Returns (values x-first k-lo k-hi y-last): x-first, or #f, a
  ;; plane whose x lines are the member's and whose y lines are member
  ;; id+1's (done first, then counted in flags slot np + id); the whole
  ;; planes k-lo .. k-hi - 1; y-last, or #f, a plane whose x lines are
  ;; member id-1's (the member waits for that count, then does the y
  ;; lines: each point gets its x terms before its y terms, as serially).
  ;; For np > 2 (n-2), whole planes.
  (define (xy-halves id np planes)
    (if (fx> np (fx* 2 planes))
        (let-values ([(lo hi) (block id np 1 (fx+ planes 1))]) (values #f lo hi #f))
        (let-values ([(a b) (block id np 0 (fx* 2 planes))])
          ;; unit u is half (u mod 2) of plane u/2 + 1
          (values (and (fxodd? b) (fx+ (fxquotient b 2) 1))
                  (fx+ (fxquotient (fx+ a 1) 2) 1) (fx+ (fxquotient b 2) 1)
                  (and (fxodd? a) (fx+ (fxquotient a 2) 1))))))

  ;; Waits until member w has finished target planes: spins a little (a
  ;; neighbour's plane is short), then sleeps between looks.
  (define pause (make-time 'time-duration 20000 0))
  (define (wait-for flags w target)
    (let loop ([spins 0])
      (unless (fx>= (shared-fxvector-ref flags w) target)
        (if (fx< spins 2000)
            (loop (fx+ spins 1))
            (begin (sleep pause) (loop 0))))))

  ;; Runs the benchmark's timed part: the initial rhs, then itmax SSOR
  ;; iterations and the residual norm.  Returns a pair: for member 0 a
  ;; vector of the seconds the iterations took and the 5 residual norms,
  ;; 0 for the others; and the member's usage (nas member-usage).
  ;; partials: 5 np flonums, each member's sums of squares.  The arrays are
  ;; bytevectors or shared flvectors; the kernel works on their views.
  (define (lu-member id np barrier class u-array rsd-array frct-array rho-array qs-array flags
                     partials-array)
    (let ([result (run-member id np barrier class (array-view u-array) (array-view rsd-array)
                              (array-view frct-array) (array-view rho-array) (array-view qs-array)
                              flags (array-view partials-array))])
      (keep-until-here u-array rsd-array frct-array rho-array qs-array partials-array)
      result))

  (define (run-member id np barrier class u rsd frct rho qs flags partials)
    (let* ([cfg (make-lu-config class)] [n (lu-config-n cfg)] [last (fx- n 1)]
           [planes (fx- n 2)] [itmax (lu-config-itmax cfg)] [dt (lu-config-dt cfg)]
           [relax (fl/ 1.0 (fl* omega (fl- 2.0 omega)))]
           [s (make-line-scratch n)] [rows (own-rows id np planes)]
           [rows-down (reverse rows)])
      (let-values ([(k-lo k-hi) (block id np 0 n)]
                   )
        ;; rhs's phases (2) and (3), phase (1) being done; calls counts
        ;; them (see xy-halves)
        (define calls 0)
        (define (rhs-lines!)
          (set! calls (fx+ calls 1))
          (let-values ([(x-first k-lo k-hi y-last) (xy-halves id np planes)])
            (when x-first
              (rhs-x-lines! rsd u rho qs cfg x-first s)
              (shared-fxvector-set! flags (fx+ np id) calls))
            (rhs-xy-planes! rsd u rho qs cfg k-lo k-hi s)
            (when y-last
              (wait-for flags (fx+ np (fx- id 1)) calls)
              (rhs-y-lines! rsd u rho qs cfg y-last s)))
          (barrier)
          (rhs-z-rows! rsd u rho qs cfg rows s))
        ;; (proc b) for the first element b of every one of this member's
        ;; points, k outermost, i innermost
        (define (for-own-points proc)
          (do ([k 1 (fx+ k 1)]) ((fx= k last))
            (for-each (lambda (row)
                        (let ([j (car row)])
                          (do ([i (cadr row) (fx+ i 1)]) ((fx= i (cddr row)))
                            (proc (fx* 5 (fx+ i (fx* n (fx+ j (fx* n k)))))))))
                      rows)))
        (define (sweeps! it)
          (let ([done (fx* it (fx* 2 planes))])
            (do ([k 1 (fx+ k 1)]) ((fx= k last))
              (when (fx> id 0) (wait-for flags (fx- id 1) (fx+ done k)))
              (for-each (lambda (row) (lower-row! rsd u rho qs cfg (car row) k (cadr row) (cddr row)))
                        rows)
              (shared-fxvector-set! flags id (fx+ done k)))
            (do ([k (fx- n 2) (fx- k 1)]) ((fx= k 0))
              (let ([count (fx+ done planes (fx- last k))])
                (when (fx< id (fx- np 1)) (wait-for flags (fx+ id 1) count))
                (for-each (lambda (row) (upper-row! rsd u rho qs cfg (car row) k (cadr row) (cddr row)))
                          rows-down)
                (shared-fxvector-set! flags id count)))
            ;; member w-1's last upper points read u on w's first points
            (when (fx> id 0) (wait-for flags (fx- id 1) (fx+ done (fx* 2 planes))))))
        (rhs-init-planes! rsd frct u rho qs cfg k-lo k-hi)
        (barrier)
        (rhs-lines!)
        (barrier)
        (let ([t0 (current-time 'time-monotonic)] [s0 (statistics)])
          (do ([it 0 (fx+ it 1)]) ((fx= it itmax))
            (for-own-points
              (lambda (b)
                (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                  (fl@! rsd (fx+ b m) (fl* dt (fl@ rsd (fx+ b m)))))))
            (sweeps! it)
            ;; the update of u, then rhs's phase (1) at the same point (on
            ;; the boundary u never changes, so phase (1) there stands)
            (for-own-points
              (lambda (b)
                (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                  (fl@! u (fx+ b m) (fl+ (fl@ u (fx+ b m)) (fl* relax (fl@ rsd (fx+ b m))))))
                (rhs-init-point! rsd frct u rho qs (fxquotient b 5))))
            (barrier)
            (rhs-lines!))
          ;; The reference's norm of the last correction is never reported
          ;; and is left out; the residual norm is.
          (let ([sums (make-vector 5 0.0)])
            (for-own-points
              (lambda (b)
                (do ([m 0 (fx+ m 1)]) ((fx= m 5))
                  (let ([x (fl@ rsd (fx+ b m))])
                    (vector-set! sums m (fl+ (vector-ref sums m) (fl* x x)))))))
            (do ([m 0 (fx+ m 1)]) ((fx= m 5))
              (fl@! partials (fx+ (fx* 5 id) m) (vector-ref sums m))))
          (barrier)
          (cons
           (if (fx= id 0)
              (let ([d (time-difference (current-time 'time-monotonic) t0)]
                    [points (fixnum->flonum (fx* planes (fx* planes planes)))])
                (let ([norms (let loop ([m 4] [acc '()])
                               (if (fx< m 0)
                                   acc
                                   (loop (fx- m 1)
                                         (cons (let sum ([w 0] [x 0.0])
                                                 (if (fx= w np)
                                                     (flsqrt (fl/ x points))
                                                     (sum (fx+ w 1)
                                                          (fl+ x (fl@ partials (fx+ (fx* 5 w) m))))))
                                               acc))))])
                  (list->vector
                    (cons (+ (time-second d) (/ (time-nanosecond d) 1e9)) norms))))
              0)
           (usage-since s0)))))))
