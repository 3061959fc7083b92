#!chezscheme
;;; The I/O poller: one epoll instance per process, and an eventfd that
;;; wakes it.  Per process, not per heap: a process forked from one that
;;; had a poller (a place, forked from the template) inherits the epoll
;;; descriptor, which would share its interest list and its events with the
;;; parent.  The poller remembers the pid that made it; in any other
;;; process the first watch or wait closes the inherited descriptors,
;;; forgets the inherited records and makes a fresh instance.  Socket and pipe ports wait on it through edge-triggered
;;; records (below); place channels and signal descriptors through
;;; level-triggered handlers (watch-level!).  No thread of its own: an idle worker sleeps in it (see
;;; the poll role in (spindle private core wakeup)), busy workers look at it on every timer
;;; tick, and its events wake the threads that wait for a descriptor.
;;;
;;; A watched descriptor is registered once, edge-triggered for both
;;; directions, and has a record with two readiness counters per
;;; direction: seq, bumped by the poller at each edge, and idle, the seq
;;; that a reader (or writer) saw before its call failed with EAGAIN.  The
;;; direction may be ready iff seq /= idle, so an edge that comes between
;;; the failed call and the wait is never lost:
;;;
;;;   (let ([seq (fd-seq rec 'read)])          ; before the call
;;;     ... read(2) gives EAGAIN ...
;;;     (fd-idle! rec 'read seq)
;;;     (sync (fd-ready-evt rec 'read v)))      ; ready at once if an edge came
;;;
;;; Closing the record makes both directions ready for good.
(library (spindle private io poller)
  (export fd-watch fd-seq fd-idle! fd-ready-evt fd-wait! fd-unwatch! fd-operation-evt fd-wake!
          watch-level! change-level! unwatch-level! poller-may-wake? level-watch-idle-when!)
  (import (chezscheme) (spindle private core scheduler) (spindle private core atomic) (spindle private core evt-core)
          (only (spindle private core wakeup) set-io-hooks!)
          (spindle private core queue)
          (only (spindle private os descriptors) close-fd)
          (only (spindle private os polling) make-epoll epoll-in epoll-out epoll-rdhup epoll-hangup-mask
                epoll-wait/timeout epoll-watch-edges! epoll-unwatch! epoll-watch-level! epoll-change-level!
                make-eventfd eventfd-signal! eventfd-drain!)
          (only (spindle private os processes) own-pid)
          (only (spindle private core sync) sync))

  (define-record-type fd-record
    (fields fd lock                          ; spin lock (box)
            (mutable read-seq) (mutable read-idle) readers
            (mutable write-seq) (mutable write-idle) writers
            (mutable closed?)
            edges?)                          ; #f: epoll refused it (a regular file), always ready
    (protocol
      (lambda (new)
        (lambda (fd edges?)
          (new fd (box #f) 1 0 (make-queue) 1 0 (make-queue) #f edges?))))
    (nongenerative spindle-fd-record-v1) (sealed #t))

  ;; ---------------------------------------------------------------- the poller
  (define epoll-fd #f)
  (define wake-fd #f)
  (define poller-pid #f)                ; the process that made epoll-fd
  (define event-buffer-size 256)
  (define event-buffer #f)              ; used by the poll-role holder only

  ;; fd -> fd-record or a procedure (level-triggered watch), under table-lock.
  (define table (make-eqv-hashtable))
  (define table-lock (box #f))
  (define start-lock (make-mutex))

  ;; The records of an inherited table belong to the parent's instance:
  ;; they are dropped (their ports were the parent's).
  (define (ensure-poller!)
    (unless (and epoll-fd (fx= poller-pid (own-pid)))
      (with-os-mutex start-lock
        (let ([pid (own-pid)])
          (unless (and epoll-fd (fx= poller-pid pid))
            (when epoll-fd
              (close-fd epoll-fd)
              (close-fd wake-fd)
              (set! epoll-fd #f)
              (with-spin-lock table-lock (hashtable-clear! table)))
            (let ([ep (make-epoll)]
                  [wfd (make-eventfd)])
              (when (fx< ep 0) (error 'poller "epoll_create1 failed"))
              (unless event-buffer (set! event-buffer (foreign-alloc (fx* 12 event-buffer-size))))
              (set! wake-fd wfd)
              (epoll-watch-level! ep wfd epoll-in)
              (set! poller-pid pid)
              (set! epoll-fd ep)
              (set-io-hooks! io-wait! io-dispatch! (lambda () (eventfd-signal! wake-fd)))))))))

  ;; The hooks are inherited by a fork too: its first wait makes its own
  ;; instance (a getpid per wait, next to an epoll_wait).
  (define (io-wait! ms sigmask)
    (unless (fx= poller-pid (own-pid)) (ensure-poller!))
    (epoll-wait/timeout epoll-fd event-buffer event-buffer-size ms sigmask))

  ;; Called with interrupts disabled.  #t if anything besides a kick came.
  (define (io-dispatch! found)
    (let loop ([found found] [any? #f])
      (if (null? found)
          any?
          (let ([fd (caar found)] [mask (cdar found)])
            (if (fx= fd wake-fd)
                (begin (eventfd-drain! wake-fd) (loop (cdr found) any?))
                (let ([x (with-spin-lock table-lock (hashtable-ref table fd #f))])
                  (cond
                    [(fd-record? x) (edge! x mask)]
                    [(procedure? x) (call-handler x mask)])
                  (loop (cdr found) #t)))))))

  ;; A failure in one handler is reported and stops nothing.
  (define (call-handler handler mask)
    (guard (c [#t (let ([err (console-error-port)])
                    (display "spindle poller: " err)
                    (if (condition? c) (display-condition c err) (write c err))
                    (newline err))])
      (handler mask)))

  ;; EPOLLIN, EPOLLOUT, EPOLLERR|EPOLLHUP, EPOLLRDHUP
  (define (edge! rec mask)
    (let ([err? (fxlogtest mask epoll-hangup-mask)])
      (with-spin-lock (fd-record-lock rec)
        (when (or err? (fxlogtest mask (fxior epoll-in epoll-rdhup)))
          (fd-record-read-seq-set! rec (fx+ 1 (fd-record-read-seq rec)))
          (wake-all-waiters! (fd-record-readers rec)))
        (when (or err? (fxlogtest mask epoll-out))
          (fd-record-write-seq-set! rec (fx+ 1 (fd-record-write-seq rec)))
          (wake-all-waiters! (fd-record-writers rec))))))

  ;; With the record's lock held.  A waiter whose value is an operation
  ;; (see fd-operation-evt) tries it and stays queued if it would block.
  (define (wake-all-waiters! q)
    (let loop ([keep '()])
      (let ([w (queue-pop! q #f)])
        (cond
          [(not w) (for-each (lambda (w) (queue-push! q w)) (reverse keep))]
          [(operation? (waiter-value w))
           (loop (if (try-operation! (waiter-value w) (waiter-syncer w) (waiter-branch w) #t) keep (cons w keep)))]
          [else
           (commit-partner! (waiter-syncer w) (waiter-branch w) (list (waiter-value w)))
           (loop keep)]))))

  ;; ---------------------------------------------------------------- watching
  ;; The record of fd (non-blocking), watched for both directions from now
  ;; on.  A descriptor epoll refuses (a regular file) gets a record that is
  ;; always ready.
  ;; The record is in the table before epoll knows fd: another worker may
  ;; poll at once, and an edge whose record it cannot find is lost.
  (define (fd-watch fd)
    (ensure-poller!)
    (let ([rec (make-fd-record fd #t)])
      (with-interrupts-disabled
        (with-spin-lock table-lock (hashtable-set! table fd rec)))
      (if (fx>= (epoll-watch-edges! epoll-fd fd) 0)
          rec
          (begin
            (with-interrupts-disabled
              (with-spin-lock table-lock (hashtable-delete! table fd)))
            (make-fd-record fd #f)))))

  ;; Stops watching and makes both directions ready for good (waiters wake
  ;; and find the record closed).  Call it before closing the descriptor.
  (define (fd-unwatch! rec)
    (with-interrupts-disabled
      (when (fd-record-edges? rec)
        (with-spin-lock table-lock
          (when (eq? (hashtable-ref table (fd-record-fd rec) #f) rec)
            (hashtable-delete! table (fd-record-fd rec))))
        (epoll-unwatch! epoll-fd (fd-record-fd rec)))
      (with-spin-lock (fd-record-lock rec)
        (fd-record-closed?-set! rec #t)
        (wake-all-waiters! (fd-record-readers rec))
        (wake-all-waiters! (fd-record-writers rec)))))

  ;; Wakes the waiters of one direction as an edge would (a port of it
  ;; was closed here: they look again and find it closed).
  (define (fd-wake! rec dir)
    (with-interrupts-disabled
      (with-spin-lock (fd-record-lock rec)
        (if (eq? dir 'read)
            (begin (fd-record-read-seq-set! rec (fx+ 1 (fd-record-read-seq rec)))
                   (wake-all-waiters! (fd-record-readers rec)))
            (begin (fd-record-write-seq-set! rec (fx+ 1 (fd-record-write-seq rec)))
                   (wake-all-waiters! (fd-record-writers rec)))))))

  ;; Calls (handler mask) in whichever worker polls, with interrupts
  ;; disabled, as long as fd is ready for mask (level-triggered: epoll-in,
  ;; epoll-out; errors and hang-ups come whatever the mask).  The handler
  ;; must not block.
  (define (watch-level! fd mask handler)
    (ensure-poller!)
    (with-interrupts-disabled
      (with-spin-lock table-lock (hashtable-set! table fd handler)))
    (epoll-watch-level! epoll-fd fd mask))

  (define (change-level! fd mask) (epoll-change-level! epoll-fd fd mask))

  (define (unwatch-level! fd)
    (with-interrupts-disabled
      (with-spin-lock table-lock (hashtable-delete! table fd) (hashtable-delete! idle-preds fd)))
    (epoll-unwatch! epoll-fd fd))

  ;; For the deadlock watch: #t if a descriptor could still wake a thread:
  ;; a level-triggered watch (a subprocess's end, a place's channel, a
  ;; signal descriptor) or a thread waiting on a watched descriptor.  The
  ;; table is copied under its lock, and looked at without it.
  ;; (level-watch-idle-when! fd pred): fd's level watch cannot wake a
  ;; thread while (pred) says #t (the place template's channel, while no
  ;; place lives); pred runs with interrupts disabled and must not block.
  (define idle-preds (make-eqv-hashtable))   ; fd -> pred, under table-lock
  (define (level-watch-idle-when! fd pred)
    (with-interrupts-disabled (with-spin-lock table-lock (hashtable-set! idle-preds fd pred))))
  (define (poller-may-wake?)
    (let* ([kvs (with-interrupts-disabled
                  (with-spin-lock table-lock
                    (call-with-values (lambda () (hashtable-entries table))
                      (lambda (ks vs)
                        (list ks vs (vector-map (lambda (k) (hashtable-ref idle-preds k #f)) ks))))))]
           [xs (cadr kvs)] [preds (caddr kvs)])
      (let loop ([i 0])
        (and (fx< i (vector-length xs))
             (let ([x (vector-ref xs i)])
               (or (and (procedure? x) (let ([idle? (vector-ref preds i)]) (not (and idle? (idle?)))))
                   (and (fd-record? x)
                        (not (and (queue-empty? (fd-record-readers x)) (queue-empty? (fd-record-writers x)))))
                   (loop (fx+ i 1))))))))

  ;; ---------------------------------------------------------------- readiness
  (define (fd-seq rec dir)
    (if (eq? dir 'read) (fd-record-read-seq rec) (fd-record-write-seq rec)))

  ;; A call made after seq was read failed with EAGAIN.
  (define (fd-idle! rec dir seq)
    (with-interrupts-disabled
      (with-spin-lock (fd-record-lock rec)
        (if (eq? dir 'read)
            (fd-record-read-idle-set! rec seq)
            (fd-record-write-idle-set! rec seq)))))

  ;; An evt ready (with value v) when the direction may be ready or the
  ;; record is closed.
  (define-record-type fd-ready
    (parent prim-evt)
    (fields rec dir value)
    (protocol (lambda (new) (lambda (rec dir v) ((new fd-ready-attempt fd-ready-cancel) rec dir v))))
    (nongenerative spindle-fd-ready-evt-v1) (sealed #t))

  (define (fd-ready-evt rec dir v) (make-fd-ready rec dir v))

  (define (ready? rec dir)
    (or (fd-record-closed? rec)
        (not (fd-record-edges? rec))
        (if (eq? dir 'read)
            (not (fx= (fd-record-read-seq rec) (fd-record-read-idle rec)))
            (not (fx= (fd-record-write-seq rec) (fd-record-write-idle rec))))))

  ;; Called with interrupts disabled (evt-core).
  (define (fd-ready-attempt e s branch register?)
    (assert-atomic 'fd-ready-attempt)
    (let ([rec (fd-ready-rec e)])
      (with-spin-lock (fd-record-lock rec)
        (cond
          [(ready? rec (fd-ready-dir e)) (commit-one! s branch (list (fd-ready-value e)))]
          [register?
           (queue-push! (if (eq? (fd-ready-dir e) 'read) (fd-record-readers rec) (fd-record-writers rec))
                        (make-waiter s branch (fd-ready-value e)))]
          [else #f]))))

  (define (fd-ready-cancel e node)
    (assert-atomic 'fd-ready-cancel)
    (let ([rec (fd-ready-rec e)])
      (with-interrupts-disabled
        (with-spin-lock (fd-record-lock rec)
          (queue-remove! (if (eq? (fd-ready-dir e) 'read) (fd-record-readers rec) (fd-record-writers rec))
                         node)))))

  ;; An evt that performs an operation on the descriptor when it is chosen:
  ;; (try) makes one non-blocking attempt (an accept, say) and returns the
  ;; evt's result list, or #f if it would block.  It is called with the
  ;; syncer claimed and the record's lock held, so the operation happens
  ;; only in the sync that commits, and no edge can pass between a failed
  ;; try and the waiter's registration.  After the record is closed, (try)
  ;; must not block either (it should raise or return a result).
  (define-record-type operation
    (parent prim-evt)
    (fields rec dir try)
    (protocol (lambda (new) (lambda (rec dir try) ((new operation-attempt operation-cancel) rec dir try))))
    (nongenerative spindle-fd-operation-evt-v1) (sealed #t))

  (define (fd-operation-evt rec dir try) (make-operation rec dir try))

  ;; #t if the syncer is done (committed here or elsewhere).  An exception
  ;; from try is the result: the committed sync raises it.
  (define (try-operation! op s branch partner?)
    (or (not (claim! s))
        (let ([r (guard (c [#t (list (lambda () (raise c)))]) ((operation-try op)))])
          (if r
              (begin
                (finish! s branch r)
                (when partner? (wake-partner! s))
                #t)
              (begin (unclaim! s) #f)))))

  (define (operation-queue op)
    (if (eq? (operation-dir op) 'read) (fd-record-readers (operation-rec op)) (fd-record-writers (operation-rec op))))

  (define (operation-attempt op s branch register?)
    (assert-atomic 'operation-attempt)
    (with-spin-lock (fd-record-lock (operation-rec op))
      (cond
        [(try-operation! op s branch #f) #t]
        [register? (queue-push! (operation-queue op) (make-waiter s branch op))]
        [else #f])))

  (define (operation-cancel op node)
    (assert-atomic 'operation-cancel)
    (with-interrupts-disabled
      (with-spin-lock (fd-record-lock (operation-rec op))
        (queue-remove! (operation-queue op) node))))

  ;; Parks the current thread until the direction may be ready.
  (define (fd-wait! rec dir) (sync (make-fd-ready rec dir #t)) (void))

  (evt-trace-reason! (record-type-descriptor fd-ready) 'io
    (lambda (e) (list 'fd (fd-record-fd (fd-ready-rec e)) (fd-ready-dir e))))
  (evt-trace-reason! (record-type-descriptor operation) 'io
    (lambda (op) (list 'fd (fd-record-fd (operation-rec op)) (operation-dir op)))))
