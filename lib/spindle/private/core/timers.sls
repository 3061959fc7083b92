;;; A timer heap: a binary min-heap of timers on deadline (monotonic-ms).
;;; Each pool keeps one, under the pool's spin lock (the scheduler takes
;;; it: nothing here locks), and its idle workers sleep until its first
;;; deadline.  A cancelled timer stays in the heap until it reaches the
;;; top, where timer-heap-next-deadline drops it, or until the heap is
;;; full, when timer-heap-add! drops it.
(library (spindle private core timers)
  (export make-timer-heap timer-heap-add! timer-heap-take-due! timer-heap-next-deadline
          timer-heap-empty? timer-heap-live? cancel-timer!)
  (import (chezscheme))

  (define-record-type timer
    (fields deadline action (mutable cancelled?))
    (nongenerative spindle-timer-v1) (sealed #t))

  ;; v: the heap, in a vector; count: how many slots of v are in use.
  (define-record-type timer-heap
    (fields (mutable v) (mutable count))
    (protocol (lambda (new) (lambda () (new (make-vector 16 #f) 0))))
    (nongenerative spindle-timer-heap-v1) (sealed #t))

  ;; A racy read is fine: used to skip the lock when there are no timers.
  (define (timer-heap-empty? h) (fx= (timer-heap-count h) 0))

  ;; #t if a timer not cancelled and due some time is in the heap (for
  ;; the deadlock watch: cancelled ones stay until their deadline).  A walk
  ;; of the heap, made only by an idle worker's check.
  (define (timer-heap-live? h)
    (let ([v (timer-heap-v h)])
      (let loop ([i 0])
        (and (fx< i (timer-heap-count h))
             (or (let ([tm (vector-ref v i)]) (and (not (timer-cancelled? tm)) (fl< (timer-deadline tm) +inf.0)))
                 (loop (fx+ i 1)))))))

  (define (heap-swap! v i j)
    (let ([x (vector-ref v i)]) (vector-set! v i (vector-ref v j)) (vector-set! v j x)))

  ;; Adds a timer that runs (action) at deadline; returns it.
  (define (timer-heap-add! h deadline action)
    (let ([tm (make-timer deadline action #f)])
      (when (fx= (timer-heap-count h) (vector-length (timer-heap-v h)))
        (make-room! h))
      (let* ([n (timer-heap-count h)] [v (timer-heap-v h)])
        (vector-set! v n tm)
        (timer-heap-count-set! h (fx+ n 1))
        (let up ([i n])
          (when (fx> i 0)
            (let ([parent (fxsrl (fx- i 1) 1)])
              (when (fl< (timer-deadline (vector-ref v i)) (timer-deadline (vector-ref v parent)))
                (heap-swap! v i parent)
                (up parent))))))
      tm))

  (define (cancel-timer! tm) (timer-cancelled?-set! tm #t))

  ;; With the heap full: drop cancelled timers (a loop of long sync/timeouts
  ;; that commit early leaves many), and grow the heap only if it is still
  ;; more than half full.  A sorted vector is a heap.
  (define (make-room! h)
    (let* ([v (timer-heap-v h)]
           [live (let loop ([i 0] [acc '()])
                   (if (fx= i (timer-heap-count h))
                       acc
                       (loop (fx+ i 1) (let ([tm (vector-ref v i)]) (if (timer-cancelled? tm) acc (cons tm acc))))))]
           [sorted (list-sort (lambda (a b) (fl< (timer-deadline a) (timer-deadline b))) live)]
           [n (length sorted)]
           [nv (make-vector (if (fx> (fx* 2 n) (vector-length v)) (fx* 2 (vector-length v)) (vector-length v)) #f)])
      (let fill ([i 0] [ts sorted])
        (unless (null? ts) (vector-set! nv i (car ts)) (fill (fx+ i 1) (cdr ts))))
      (timer-heap-v-set! h nv)
      (timer-heap-count-set! h n)))

  (define (heap-pop! h)
    (let* ([v (timer-heap-v h)] [n (fx- (timer-heap-count h) 1)] [top (vector-ref v 0)])
      (vector-set! v 0 (vector-ref v n))
      (vector-set! v n #f)
      (timer-heap-count-set! h n)
      (let down ([i 0])
        (let* ([l (fx+ (fx* 2 i) 1)] [r (fx+ l 1)]
               [m (if (and (fx< l n) (fl< (timer-deadline (vector-ref v l)) (timer-deadline (vector-ref v i)))) l i)]
               [m (if (and (fx< r n) (fl< (timer-deadline (vector-ref v r)) (timer-deadline (vector-ref v m)))) r m)])
          (unless (fx= m i) (heap-swap! v i m) (down m))))
      top))

  ;; Pops the timers due at now; returns their actions, in deadline order
  ;; (earlier sleepers wake first).
  (define (timer-heap-take-due! h now)
    (let loop ([acc '()])
      (if (and (fx> (timer-heap-count h) 0)
               (fl<= (timer-deadline (vector-ref (timer-heap-v h) 0)) now))
          (let ([tm (heap-pop! h)])
            (loop (if (timer-cancelled? tm) acc (cons (timer-action tm) acc))))
          (reverse acc))))

  ;; The first deadline of a timer not cancelled; #f if none, or if it is
  ;; at +inf.0 (sleep +inf.0, a deadline of +inf.0 s): such timers never
  ;; fire, and keep neither a worker from sleeping without a limit nor the
  ;; deadlock watch from reporting.  Cancelled timers at the top are
  ;; dropped first: a wait that ended early (a sync/timeout answered, a
  ;; move-on-after whose body returned) must not hold an idle worker, and
  ;; so the deadlock watch, until its old deadline.
  (define (timer-heap-next-deadline h)
    (let loop ()
      (and (fx> (timer-heap-count h) 0)
           (let ([top (vector-ref (timer-heap-v h) 0)])
             (if (timer-cancelled? top)
                 (begin (heap-pop! h) (loop))
                 (let ([dl (timer-deadline top)]) (and (fl< dl +inf.0) dl))))))))
