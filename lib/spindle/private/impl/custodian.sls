#!chezscheme
;;; Custodians, as in Racket: every thread, descriptor port, listener,
;;; place (and, through custodian-register!, any other resource) made while
;;; a custodian is current belongs to it; custodian-shutdown-all kills those
;;; threads, closes those ports and listeners, kills those places, and does
;;; the same for the sub-custodians.
;;;
;;; A custodian keeps a list of entries (obj . kind), where kind is a pair
;;; (shutdown . closed?) of procedures of obj shared by every object of a
;;; kind, so that no entry's procedures hold obj.  Objects are held weakly
;;; (weak pairs): a custodian never keeps a dropped port or a dead thread
;;; alive.  Entries of closed or collected objects are dropped when the list
;;; has doubled since it was last compacted.
;;;
;;; Sub-custodians are held strongly by their parent (a custodian that
;;; nobody references may still own running threads), but a sub-custodian
;;; whose objects are all gone is detached at compaction and attached again
;;; when something registers in it, so a server that makes a custodian per
;;; connection and never shuts them down does not grow its root's list.
(library (spindle private impl custodian)
  (export make-custodian custodian? current-custodian custodian-shutdown-all
          custodian-shut-down? custodian-managed-list
          ;; for the modules that make resources (threads, ports, listeners,
          ;; places, subprocesses)
          make-custodian-kind custodian-register! custodian-unregister!
          custodian-try-register!
          ;; for dump-threads
          all-managed-objects all-managed-owners)
  (import (except (chezscheme) make-parameter)
          (only (spindle private core scheduler) current-gthread)
          (only (spindle private core atomic) with-spin-lock with-os-mutex)
          (only (spindle private impl parameter) make-parameter)
          (only (spindle private io custodian-hooks) set-custody-hooks!))

  ;; The custodian's spin lock (it disables interrupts while held).
  (define-syntax spin-lock-custodian
    (syntax-rules ()
      [(_ c e ...) (with-spin-lock (custodian-lock c) e ...)]))

  (define-record-type (custodian new-custodian custodian?)
    (fields parent lock                 ; lock: a spin-lock box, held with interrupts disabled
            (mutable entries)           ; newest first
            (mutable count) (mutable compact-at)
            (mutable shut-down?)
            (mutable attached?))        ; listed in its parent's entries
    (protocol (lambda (new) (lambda (parent) (new parent (box #f) '() 0 32 #f #f))))
    (nongenerative spindle-custodian-v1) (sealed #t))

  (define root-custodian
    (let ([c (new-custodian #f)]) (custodian-attached?-set! c #t) c))

  (define (check-custodian who c)
    (unless (custodian? c) (assertion-violation who "expected a custodian" c)))

  (define current-custodian
    (make-parameter root-custodian
      (lambda (c) (check-custodian 'current-custodian c) c)
      'current-custodian))

  ;; How to shut down an object of a kind, and whether it is already closed
  ;; (or dead): both procedures take the object.  stop (optional): what a
  ;; shutdown does to each such object before it shuts anything down (see
  ;; custodian-shutdown-all); it must not wait.  The kinds that have one, in stops
  ;; (kind . stop), replaced whole under stops-lock.
  (define make-custodian-kind
    (case-lambda
      [(shutdown closed?) (make-custodian-kind shutdown closed? #f)]
      [(shutdown closed? stop)
       (unless (procedure? shutdown) (assertion-violation 'make-custodian-kind "expected a procedure" shutdown))
       (unless (procedure? closed?) (assertion-violation 'make-custodian-kind "expected a procedure" closed?))
       (unless (or (not stop) (procedure? stop)) (assertion-violation 'make-custodian-kind "expected a procedure or #f" stop))
       (let ([kind (cons shutdown closed?)])
         (when stop (with-os-mutex stops-lock (set! stops (cons (cons kind stop) stops))))
         kind)]))

  (define stops '())
  (define stops-lock (make-mutex))

  (define custodian-kind
    (cons (lambda (c) (custodian-shutdown-all c)) custodian-shut-down?))

  (define (entry-live? e)
    (let ([obj (car e)])
      (and obj (not (bwp-object? obj)) (not ((cddr e) obj)))))

  (define (shut-down-error who c)
    (raise (condition (make-error) (make-who-condition who)
                      (make-message-condition "the custodian has been shut down")
                      (make-irritants-condition (list c)))))

  ;; Drops c's dead entries; a child custodian with no live entries is
  ;; detached.  The lock is held only to take the list and to put the
  ;; result back: the filter (a walk and a copy as long as the list) and
  ;; the kinds' closed? procedures run without it (see spin-lock! in the
  ;; scheduler: no work that grows with the data, no outside code under a
  ;; spin lock).  Entries registered meanwhile are the list's newer front
  ;; and are kept; a shutdown or another compaction meanwhile wins.
  ;; A registration in a child detached here sees it detached and attaches
  ;; it again (in front of the parent's list), so none is lost.
  (define (compact! c)
    (let* ([old (spin-lock-custodian c (custodian-entries c))]
           [live (filter (lambda (e)
                           (and (entry-live? e)
                                (or (not (eq? (cdr e) custodian-kind))
                                    (let ([child (car e)])
                                      (spin-lock-custodian child
                                        (if (exists-live? (custodian-entries child))
                                            #t
                                            (begin (custodian-attached?-set! child #f) #f)))))))
                         old)]
           [n (length live)])
      (spin-lock-custodian c
        (unless (custodian-shut-down? c)
          ;; newer entries: those in front of old (a few pairs)
          (let loop ([es (custodian-entries c)] [front '()] [k 0])
            (cond
              [(eq? es old)
               (custodian-entries-set! c (append (reverse front) live))
               (custodian-count-set! c (fx+ k n))
               (custodian-compact-at-set! c (fxmax 32 (fx* 2 (fx+ k n))))]
              [(pair? es) (loop (cdr es) (cons (car es) front) (fx+ k 1))]
              [else (void)]))))))

  ;; Under a child's lock: a bounded look (the first live entry decides;
  ;; a list of dead entries is left for the child's own compaction).
  (define (exists-live? es)
    (let loop ([es es] [k 0])
      (cond
        [(null? es) #f]
        [(entry-live? (car es)) #t]
        [(fx= k 64) #t]
        [else (loop (cdr es) (fx+ k 1))])))

  ;; Adds entry e to c: #f if c is shut down, else 'attach if c must be
  ;; listed in its parent again, else #t.  The registration that finds the
  ;; list doubled compacts it, after unlocking (compact-at moves on at
  ;; once, so only one does).
  (define (add-entry! c e)
    (let* ([compact? #f]
           [r (spin-lock-custodian c
                (if (custodian-shut-down? c)
                    #f
                    (begin
                      (custodian-entries-set! c (cons e (custodian-entries c)))
                      (custodian-count-set! c (fx+ 1 (custodian-count c)))
                      (when (fx> (custodian-count c) (custodian-compact-at c))
                        (custodian-compact-at-set! c (fx* 2 (custodian-count c)))
                        (set! compact? #t))
                      (if (custodian-attached? c)
                          #t
                          (begin (custodian-attached?-set! c #t) 'attach)))))])
      (when compact? (compact! c))
      r))

  ;; Lists c in its parent (strongly); a shut-down parent shuts c down.
  (define (attach! c)
    (let ([parent (custodian-parent c)])
      (case (add-entry! parent (cons c custodian-kind))
        [(#f) (custodian-shutdown-all c)]
        [(attach) (attach! parent)]
        [else (void)])))

  ;; Registers obj with the current custodian (or c); returns a token for
  ;; custodian-unregister!.  kind: from make-custodian-kind.  Raises (naming
  ;; who) if the custodian has been shut down; then obj is not registered,
  ;; and the caller must release it.
  (define custodian-register!
    (case-lambda
      [(obj kind) (custodian-register! obj kind 'custodian-register! (current-custodian))]
      [(obj kind who) (custodian-register! obj kind who (current-custodian))]
      [(obj kind who c)
       (check-custodian who c)
       (unless (and (pair? kind) (procedure? (car kind)) (procedure? (cdr kind)))
         (assertion-violation 'custodian-register! "expected a custodian kind" kind))
       (let* ([e (weak-cons obj kind)] [r (add-entry! c e)])
         (cond
           [(not r) (shut-down-error who c)]
           [(eq? r 'attach) (attach! c)])
         e)]))

  ;; custodian-register! with the current custodian that returns #f instead
  ;; of raising when it is shut down: thread creation calls it on every
  ;; spawn, where a guard (a full continuation and a handler, ~0.5 KB)
  ;; doubled the cost of registering.
  (define (custodian-try-register! obj kind)
    (let* ([c (current-custodian)] [e (weak-cons obj kind)] [r (add-entry! c e)])
      (cond
        [(not r) #f]
        [(eq? r 'attach) (attach! c) e]
        [else e])))

  ;; obj (closed by its owner) no longer belongs to its custodian.
  (define (custodian-unregister! token)
    (unless (and (weak-pair? token) (pair? (cdr token)))
      (assertion-violation 'custodian-unregister! "expected a registration token" token))
    (set-car! token #f))

  (define make-custodian
    (case-lambda
      [() (make-custodian (current-custodian))]
      [(parent)
       (check-custodian 'make-custodian parent)
       (let ([c (new-custodian parent)])
         (case (add-entry! parent (cons c custodian-kind))
           [(#f) (shut-down-error 'make-custodian parent)]
           [(attach) (attach! parent)]
           [else (void)])
         (custodian-attached?-set! c #t)
         c)]))

  ;; Shuts c and its sub-custodians down, as one step to the objects it
  ;; holds: first every entry of the whole tree is taken (each custodian
  ;; marked shut down, so nothing joins), then every object whose kind has
  ;; a stop is stopped (threads: kill requested, so none runs a handler for
  ;; what the next pass closes under it), then every object is shut down
  ;; in the order it was registered (threads: waited for until dead),
  ;; sub-custodians' objects where the sub-custodian was registered.  The
  ;; current thread, if one of them, is killed last.
  (define (custodian-shutdown-all c)
    (check-custodian 'custodian-shutdown-all c)
    (let ([me (current-gthread)]
          [entries (filter entry-live? (take-entries! c))])
      (for-each
        (lambda (e)
          (let ([stop (assq (cdr e) stops)] [obj (car e)])
            (when (and stop (not (eq? obj me)) (entry-live? e))
              (guard (x [#t (void)]) ((cdr stop) obj)))))
        entries)
      (for-each
        (lambda (e)
          (let ([obj (car e)])
            ;; one object that fails to close does not stop the others
            (when (and (not (eq? obj me)) (entry-live? e))
              (guard (x [#t (void)]) ((cadr e) obj)))))
        entries)
      (for-each (lambda (e) (when (eq? (car e) me) ((cadr e) me))) entries)))

  ;; Marks c and its sub-custodians shut down; returns their entries,
  ;; oldest first, a sub-custodian's in its place (not itself).
  (define (take-entries! c)
    (let ([entries (spin-lock-custodian c
                     (if (custodian-shut-down? c)
                         '()
                         (let ([es (custodian-entries c)])
                           (custodian-shut-down?-set! c #t)
                           (custodian-entries-set! c '())
                           (custodian-count-set! c 0)
                           es)))])
      (fold-right
        (lambda (e acc)
          (if (and (eq? (cdr e) custodian-kind) (entry-live? e))
              (append (take-entries! (car e)) acc)
              (cons e acc)))
        '()
        (reverse entries))))

  (define (custodian-managed-list c super)
    (check-custodian 'custodian-managed-list c)
    (check-custodian 'custodian-managed-list super)
    (unless (let loop ([p (custodian-parent c)]) (and p (or (eq? p super) (loop (custodian-parent p)))))
      (assertion-violation 'custodian-managed-list "the custodian is not subordinate to the super-custodian" c super))
    ;; the walk runs without the lock: the list is never mutated in place
    (let loop ([es (spin-lock-custodian c (custodian-entries c))] [acc '()])
      (if (null? es)
          acc
          (loop (cdr es) (if (entry-live? (car es)) (cons (caar es) acc) acc)))))

  ;; Every object that some custodian of the process holds and the
  ;; collector has not taken (closed and dead ones too: their kind's
  ;; closed? is not asked), custodians left out.  Walks without locks, as
  ;; custodian-managed-list does.
  ;; The custodian of each managed object, for the dump: an eq hashtable
  ;; object -> custodian ('root for the root custodian).
  (define (all-managed-owners)
    (let ([owners (make-eq-hashtable)])
      (let walk ([c root-custodian])
        (for-each
          (lambda (e)
            (let ([obj (car e)])
              (cond
                [(or (not obj) (bwp-object? obj)) (void)]
                [(eq? (cdr e) custodian-kind) (walk obj)]
                [else (hashtable-set! owners obj (if (eq? c root-custodian) 'root c))])))
          (spin-lock-custodian c (custodian-entries c))))
      owners))

  (define (all-managed-objects)
    (let walk ([c root-custodian] [acc '()])
      (fold-left
        (lambda (acc e)
          (let ([obj (car e)])
            (cond
              [(or (not obj) (bwp-object? obj)) acc]
              [(eq? (cdr e) custodian-kind) (walk obj acc)]
              [else (cons obj acc)])))
        acc
        (spin-lock-custodian c (custodian-entries c)))))

  ;; Descriptor ports and listeners (the I/O layer) register through
  ;; these; an owner of #f is the current custodian.
  (define custody-hooks-installed
    (begin
      (set-custody-hooks!
        (lambda (obj kind who owner) (custodian-register! obj kind who (or owner (current-custodian))))
        current-custodian)
      #t))

  (record-writer (record-type-descriptor custodian)
    (lambda (c port wr) (display "#<custodian>" port)))
)
