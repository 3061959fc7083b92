#!chezscheme
;;; Shared-memory rings: one direction of a place channel, in a memfd
;;; mapped by the writing and the reading process.
;;;
;;; Layout: a control block (below) and `capacity` bytes of data.  head and
;;; tail count bytes from the ring's start (they only grow); a frame starts
;;; at a multiple of 16: the frame header of frame.sls, then its payload,
;;; padded to 16.  A frame never wraps: a wrap frame fills the rest of the
;;; data area instead.
;;;
;;; Invariants:
;;; - One writer process and one reader process at a time (ring-transport.sls
;;;   sees to it); within a process, the endpoint's lock serializes.
;;; - tail is changed only by the writer, head only by the reader, both
;;;   under the shared spin lock, which also guards `closed` and the two
;;;   waiting flags.  The lock makes the data written before a tail store
;;;   visible to the reader that reads that tail under the lock, and the
;;;   waiting flag set under it can never miss a publish (no lost wake-up).
;;; - closed (set by a reader that gives the ring up): no publish succeeds
;;;   after it, so the reader's last drain sees every published frame.
;;; - The lock is held for a few loads and stores, never across a copy or a
;;;   system call.  A process killed inside it (a window of nanoseconds)
;;;   leaves it held for ever: a dead holder means a broken ring (see lock!).
(library (spindle private places shm-ring)
  (export make-writer-ring adopt-reader-ring ring? ring-memfd ring-data-efd ring-space-efd
          ring-capacity ring-state ring-state-set! ring-watched? ring-watched?-set! ring-release! ring-reusable? ring-reset!
          ring-put! ring-room ring-head-seen ring-want-room! ring-read! ring-ready? ring-want-data! ring-close!
          ring-frame-limit)
  (import (chezscheme)
          (only (spindle private os descriptors) close-fd)
          (only (spindle private os memory) make-memfd map-shared unmap)
          (only (spindle private os polling) make-eventfd eventfd-signal!)
          (only (spindle private os threads) os-yield! os-nap!)
          (only (spindle private os processes) own-pid process-ended?)
          (spindle private places frame))


  (define-ftype ring-block
    (struct [lock iptr] [tail iptr] [closed iptr] [reader-waiting iptr] [writer-waiting iptr]
            [capacity iptr]
            [writer-pid iptr] [reader-pid iptr]    ; the two processes that take the lock (0: none yet)
            [head iptr]))                          ; on its own cache line
  (define control-size 128)

  (define header-size frame-header-size)

  (define (padded n) (fxand (fx+ n 15) (fxnot 15)))

  ;; state, for ring-transport.sls: writer: active, retiring, retired, dead
  ;; (closed by the reader); reader: active.
  (define-record-type ring
    (fields memfd data-efd space-efd capacity address control
            (mutable state)
            (mutable position)         ; writer: tail written; reader: head read
            (mutable other)            ; writer: last head seen
            (mutable watched?)         ; its eventfd is watched by the poller (ring-transport.sls)
            (mutable asked?))          ; reader: reader-waiting is 1
    (nongenerative spindle-shm-ring-v1) (sealed #t))

  (define (ring-data r) (+ (ring-address r) control-size))

  ;; The largest message that travels in one frame; larger ones go in
  ;; chunks.  A frame of it, with a wrap before it, still fits the ring.
  (define (ring-frame-limit r) (fx- (fxsrl (ring-capacity r) 1) header-size))

  ;; Faulted in once, here.
  (define (map-ring who fd size) (map-shared who fd size #t))

  (define (make-writer-ring who capacity)
    (let ([fd (make-memfd who (fx+ control-size capacity))])
      (let* ([a (map-ring who fd (fx+ control-size capacity))]
             [r (make-ring fd (make-eventfd) (make-eventfd) capacity a
                           (make-ftype-pointer ring-block a) 'active 0 0 #f #f)])
        (ftype-set! ring-block (capacity) (ring-control r) capacity)
        (ftype-set! ring-block (writer-pid) (ring-control r) (own-pid))
        r)))

  ;; The reader's side, from the three descriptors of an offer (memfd, data
  ;; and space eventfds): the memfd is closed once mapped.
  (define (adopt-reader-ring who memfd data-efd space-efd capacity)
    (let ([a (map-ring who memfd (fx+ control-size capacity))])
      (close-fd memfd)
      (let ([r (make-ring #f data-efd space-efd capacity a (make-ftype-pointer ring-block a) 'active 0 0 #f #f)])
        ;; before this process first takes the lock
        (ftype-set! ring-block (reader-pid) (ring-control r) (own-pid))
        (ring-position-set! r (ftype-ref ring-block (head) (ring-control r)))
        r)))

  (define (ring-release! r)
    (unmap (ring-address r) (fx+ control-size (ring-capacity r)))
    (when (ring-memfd r) (close-fd (ring-memfd r)))
    (close-fd (ring-data-efd r))
    (close-fd (ring-space-efd r)))

  ;; ---------------------------------------------------------------- the lock
  ;; Two processes take the lock, the ring's writer and its reader (within
  ;; each, the endpoint's lock serializes), and each wrote its pid in the
  ;; control block before it first took it: a taker that finds the lock
  ;; held knows the holder is the other one.  It spins a little, then naps
  ;; (a collect-safe sleep: it may have interrupts disabled, and no
  ;; collection of its process may wait for it) and looks at that
  ;; process: one that has ended (gone, or a zombie) will never unlock,
  ;; so the ring is broken (#f at once).  A live holder keeps the lock for
  ;; nanoseconds, or descheduled for a time slice or a few; one held past
  ;; lock-patience-s (a stopped process) counts as broken too.
  (define lock-patience-s 5)

  (define (writer? r) (and (ring-memfd r) #t))

  (define (other-pid r)
    (if (writer? r) (ctl r reader-pid) (ctl r writer-pid)))

  ;; #t once taken; #f if the holder ended or patience ran out.
  (define (lock! r)
    (let ([c (ring-control r)])
      (or (ftype-lock! ring-block (lock) c)
          (let loop ([i 1] [deadline #f])
            (cond
              [(ftype-lock! ring-block (lock) c) #t]
              [(fx< i 1024)
               (when (fx= 0 (fxand i 63)) (os-yield!))
               (loop (fx+ i 1) deadline)]
              [else
               (let ([h (other-pid r)])
                 (if (and (fx> h 0) (process-ended? h))
                     #f
                     (let ([now (time-second (current-time 'time-monotonic))])
                       (os-nap! 100)
                       (cond
                         [(not deadline) (loop i (fx+ now lock-patience-s))]
                         [(fx< now deadline) (loop i deadline)]
                         [else #f]))))])))))

  (define (unlock! r) (ftype-unlock! ring-block (lock) (ring-control r)))

  (define-syntax ctl
    (syntax-rules () [(_ r field) (ftype-ref ring-block (field) (ring-control r))]))
  (define-syntax ctl-set!
    (syntax-rules () [(_ r field v) (ftype-set! ring-block (field) (ring-control r) v)]))

  ;; ---------------------------------------------------------------- writing
  ;; Free bytes as last seen (refreshed under the lock when short).
  (define (free-bytes r) (fx- (ring-capacity r) (fx- (ring-position r) (ring-other r))))

  (define (ring-head-seen r) (ring-other r))

  (define (refresh-head! r)
    (when (lock! r)
      (ring-other-set! r (ctl r head))
      (unlock! r)))

  ;; Bytes a frame of n payload bytes needs now, counting a wrap frame.
  (define (frame-need r n)
    (let* ([off (fxand (ring-position r) (fx- (ring-capacity r) 1))]
           [to-end (fx- (ring-capacity r) off)]
           [size (fx+ header-size (padded n))])
      (if (fx<= size to-end) size (fx+ to-end size))))

  ;; The most payload bytes one frame can take now (a chunk's size), at most want.
  (define (ring-room r want)
    (let ([room (lambda ()
                  (let* ([off (fxand (ring-position r) (fx- (ring-capacity r) 1))]
                         [to-end (fx- (ring-capacity r) off)]
                         [free (free-bytes r)])
                    ;; in place before the end, or after a wrap
                    (fxmax (fxmin (fx- to-end header-size) (fx- free header-size))
                           (if (fx>= free to-end) (fx- free to-end header-size) 0)
                           0)))])
      (let ([n (room)])
        (if (fx>= n want)
            want
            (begin (refresh-head! r) (fxmin want (room)))))))

  ;; Writes a frame (kind, len payload bytes that (fill address) writes)
  ;; and publishes it.  Returns 'ok, 'full (nothing written) or 'closed (the
  ;; reader gave the ring up, or its lock is lost: nothing was delivered).
  (define (ring-put! r kind len fill)
    (let ([need (frame-need r len)])
      (when (fx> need (free-bytes r)) (refresh-head! r))
      (if (fx> need (free-bytes r))
          'full
          (let* ([cap (ring-capacity r)] [mask (fx- cap 1)]
                 [off (fxand (ring-position r) mask)])
            (when (fx> (fx+ off header-size (padded len)) cap)
              ;; wrap: the rest of this lap is skipped
              (write-header! r off kind-wrap 0)
              (ring-position-set! r (fx+ (ring-position r) (fx- cap off))))
            (let ([off (fxand (ring-position r) mask)])
              (write-header! r off kind len)
              (fill (fx+ (ring-data r) off header-size))
              (ring-position-set! r (fx+ (ring-position r) header-size (padded len)))
              (publish! r))))))

  (define (write-header! r off kind len)
    (frame-header-set! (fx+ (ring-data r) off) len 0 kind))

  (define (publish! r)
    (if (lock! r)
        (if (fx= 0 (ctl r closed))
            (let ([wake? (fx= 1 (ctl r reader-waiting))])
              (ctl-set! r tail (ring-position r))
              (ring-other-set! r (ctl r head))
              (unlock! r)
              (when wake? (eventfd-signal! (ring-data-efd r)))
              'ok)
            (begin
              ;; what was written since the last publish is void
              (ring-position-set! r (ctl r tail))
              (unlock! r)
              'closed))
        'closed))

  ;; The writer will wait for the reader to make room: asks for a kick on
  ;; the space eventfd.  #t if room came meanwhile (try again now).
  (define (ring-want-room! r need)
    (and (lock! r)
         (begin
           (ctl-set! r writer-waiting 1)
           (ring-other-set! r (ctl r head))
           (unlock! r)
           (fx<= (frame-need r need) (free-bytes r)))))

  ;; A ring the writer can offer again: nobody reads what is in it.
  (define (ring-reusable? r)
    (and (lock! r)
         (let ([ok (fx= (ctl r head) (ctl r tail))])
           (unlock! r)
           ok)))

  (define (ring-reset! r)
    (when (lock! r)
      (ctl-set! r reader-pid 0)            ; the next reader writes its own
      (ctl-set! r closed 0)
      (ctl-set! r reader-waiting 0)
      (ctl-set! r writer-waiting 0)
      (ring-position-set! r (ctl r tail))
      (ring-other-set! r (ctl r head))
      (unlock! r))
    (ring-state-set! r 'active))

  ;; ---------------------------------------------------------------- reading
  ;; Calls (on-frame kind address len) on each published frame in
  ;; order, until one returns #f (that frame is consumed; the rest stays);
  ;; then frees the space read and kicks a writer waiting for room.
  ;; Returns #f if the ring's lock is lost.
  ;; A look without the lock (a plain load of tail, for spinning readers:
  ;; ring-read! then takes the lock).
  (define (ring-ready? r) (not (fx= (ctl r tail) (ring-position r))))

  (define (ring-read! r on-frame)
    (cond
      [(not (ring-ready? r)) #t]
      [(not (lock! r)) #f]
      [else
         (let ([tail (ctl r tail)])
           (unlock! r)
           (let ([cap (ring-capacity r)] [mask (fx- (ring-capacity r) 1)])
             (let loop ([pos (ring-position r)])
               (if (fx= pos tail)
                   (advance! r pos)
                   (let* ([a (fx+ (ring-data r) (fxand pos mask))]
                          [kind (frame-kind a)]
                          [len (frame-length a)])
                     (if (fx= kind kind-wrap)
                         (loop (fx+ pos (fx- cap (fxand pos mask))))
                         (let ([next (fx+ pos header-size (padded len))])
                           (if (on-frame kind (fx+ a header-size) len)
                               (loop next)
                               (advance! r next)))))))
             #t))]))

  (define (advance! r pos)
    (unless (fx= pos (ring-position r))
      (ring-position-set! r pos)
      (when (lock! r)
        (ctl-set! r head pos)
        (let ([wake? (fx= 1 (ctl r writer-waiting))])
          (when wake? (ctl-set! r writer-waiting 0))
          (unlock! r)
          (when wake? (eventfd-signal! (ring-space-efd r)))))))

  ;; on?: the reader relies on the data eventfd (it may sleep).  Returns #t
  ;; if frames are waiting (published before the flag was seen).
  (define (ring-want-data! r on?)
    (and (or on? (ring-asked? r))
         (lock! r)
         (begin
           (ring-asked?-set! r on?)
           (ctl-set! r reader-waiting (if on? 1 0))
           (let ([pending? (not (fx= (ctl r tail) (ring-position r)))])
             (unlock! r)
             pending?))))

  ;; The reader gives the ring up: nothing is published after this, and the
  ;; writer learns it at its next publish.  Read what is left with
  ;; ring-read! after.
  (define (ring-close! r)
    (when (lock! r)
      (ctl-set! r closed 1)
      (ctl-set! r reader-waiting 0)
      (unlock! r))))
