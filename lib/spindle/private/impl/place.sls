#!chezscheme
;;; Over 450 lines: the place API, the template process and the child's side share the place record and its start protocol.
;;; Places: isolated parallel instances (OS processes) that talk through
;;; place channels.  The manual: doc/reference.md, "Places".
;;;
;;; Places start from a template process (lib/spindle/private/places/place-zygote.ss),
;;; one per creating process, started on the first place.  It has compiled
;;; spindle and each requested library once, and forks a place per request
;;; (a fork costs about a millisecond; a fresh Chez and compiling spindle,
;;; about 200 ms).  It reaps its children and reports their exit codes over
;;; its control socket; it kills them all and exits when that socket
;;; closes, that is when the creating process ends in any way.  Places die
;;; with it (PR_SET_PDEATHSIG), so no process outlives the program.  If the
;;; template dies (killed from outside), its places end with code 1 and the
;;; next place starts a new template.
(library (spindle private impl place)
  (export dynamic-place place lift-places place? place-enabled? place-wait place-kill
          place-break place-dead-evt place-channel place-channel? place-channel-put
          place-channel-get place-channel-put/get (rename (place-message-allowed?* place-message-allowed?))
          processor-count
          make-shared-bytes shared-bytes shared-bytes? shared-bytes-length
          shared-bytes-ref shared-bytes-set! shared-bytes->bytevector
          make-shared-fxvector shared-fxvector shared-fxvector? shared-fxvector-length
          shared-fxvector-ref shared-fxvector-set!
          make-shared-flvector shared-flvector shared-flvector? shared-flvector-length
          shared-flvector-ref shared-flvector-set!
          ;; for the template process ((spindle place) leaves them out)
          start-lifted-place place-child-main)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (only (spindle private core atomic) with-os-mutex)
          (only (spindle private core sim-hooks) check-deterministic)
          (only (spindle private host objects) reset-gensym-session!)
          (only (spindle private os descriptors) close-fd write-octet)
          (only (spindle private os processes) spawn-process wait-exit-code own-pid change-directory self-executable exit-process)
          (only (spindle private os signals) place-signals signals->descriptor read-signal signal-number signal-break-kind)
          (only (spindle private os sockets) make-socket-pair) (spindle private places place-channel)
          (spindle private places place-message) (spindle private places shared-vector)
          (spindle private core keywords)
          (only (spindle private core evt-core) make-latch make-owned-latch owned-latch-owner-set! latch-fire!)
          (only (spindle private core scheduler) set-worker-exit-handler!)
          (only (spindle private core thread-requests) request-break!)
          (only (spindle private diagnostics trace) tracing? trace-instant! trace-place-start! trace-write-place!)
          (only (spindle private core sync) sync register-evt-record-type! wrap-evt)
          (only (spindle private io poller) level-watch-idle-when!)
          (only (spindle private impl thread) processor-count current-thread sleep register-dump-kind!)
          (only (spindle private impl custodian) custodian-register! make-custodian-kind))

  ;; ---------------------------------------------------------------- places
  ;; A place is its creator's end of the initial channel, plus its state.
  (define-record-type (place-record make-place place?)
    (fields (immutable endpoint place-endpoint) (immutable id place-id)
            (mutable pid place-pid place-pid-set!) (mutable code place-code place-code-set!)
            (immutable dead place-dead)         ; fires with the completion value
            (immutable reaped place-reaped)     ; fires when the process is gone
            (immutable launcher place-launcher)) ; the template's control endpoint
    (protocol (lambda (new)
                (lambda (ep id launcher)
                  (let ([p (new ep id #f #f (make-owned-latch (lambda (l) l) #f) (make-owned-latch (lambda (l) l) #f) launcher)])
                    ;; dump-threads names the place a thread waits for
                    (owned-latch-owner-set! (place-dead p) p)
                    (owned-latch-owner-set! (place-reaped p) p)
                    p))))
    (nongenerative spindle-place-v1) (sealed #t))

  ;; dump-threads lists the places of this process with their pids.
  (define place-dump-registered
    (begin
      (register-dump-kind! place?
        (lambda (p)
          (let ([code (place-code p)])
            (format "place ~a pid ~a ~a" (place-id p) (or (place-pid p) "(starting)")
                    (if code (format "exited ~a" code) "running")))))
      #t))

  (define (place-enabled?) #t)

  (define (place-channel? v) (or (endpoint? v) (place? v)))

  (define (channel-endpoint who v)
    (cond
      [(endpoint? v) v]
      [(place? v) (place-endpoint v)]
      [else (assertion-violation who "expected a place channel" v)]))

  (define (place-channel)
    (make-endpoint-pair 'place-channel))

  ;; ---------------------------------------------------------------- messages
  (define (place-message-allowed?* v) (place-message-allowed? v place-channel?))

  (define (decode bv raw? fds)
    (when tracing? (trace-instant! 'place-recv (bytevector-length bv) #f))
    (decode-message bv raw? fds descriptor->endpoint))

  ;; an endpoint, a shared vector, or a raw descriptor.  A closed endpoint
  ;; (its stream ended) travels as a socket whose peer is closed: its
  ;; receiver reads the end (the descriptor is closed once sent).
  (define (owner-fd who o add-handed!)
    (cond
      [(endpoint? o)
       (or (endpoint-fd o)
           (let-values ([(a b) (make-socket-pair who)])
             (close-fd b)
             (add-handed! a)
             a))]
      [(shared-vector? o) (shared-vector-fd o)]
      [else o]))

  ;; An endpoint sent away stops being read here; what was read from it
  ;; and not yet got travels with it (its descriptors are ours to close
  ;; once sent).
  (define (put who pch v)
    (let ([ep (channel-endpoint who pch)] [handed-fds '()])
      (let-values ([(bv owners raw?)
                    (encode-message who v place-channel?
                                    (lambda (c)
                                      (let ([e (channel-endpoint who c)])
                                        (let-values ([(unread fds) (endpoint-take-unread! e)])
                                          (set! handed-fds (append fds handed-fds))
                                          (values e unread fds)))))])
        (when tracing? (trace-instant! 'place-send (bytevector-length bv) #f))
        (let ([fds (fold-right (lambda (o acc) (cons (owner-fd who o (lambda (fd) (set! handed-fds (cons fd handed-fds)))) acc))
                               '() owners)])
          (endpoint-send! ep bv raw? fds owners handed-fds)))))

  (define (place-channel-put pch v) (put 'place-channel-put pch v))

  (define (place-channel-get pch)
    (endpoint-get (channel-endpoint 'place-channel-get pch) decode))

  (define (place-channel-put/get pch v)
    (put 'place-channel-put/get pch v)
    (place-channel-get pch))

  (define (channel-evt v) (endpoint-evt (channel-endpoint 'sync v) decode))

  (define evts-registered
    (begin
      (register-evt-record-type! (record-type-descriptor place-record) channel-evt)
      (register-evt-record-type! endpoint-record-type channel-evt)
      #t))

  ;; ---------------------------------------------------------------- the template process
  (define launcher-lock (make-mutex))
  (define launcher #f)                    ; control endpoint, once started
  (define next-place-id 0)
  (define live-places (make-eqv-hashtable)) ; id -> place, under launcher-lock

  ;; The template program: its compiled object (the cache's or the
  ;; installed one, made by bin/spindle and make install; ~20 ms less to
  ;; start than the source) unless the source is newer.
  (define (locate-zygote who)
    (let loop ([dirs (library-directories)])
      (if (null? dirs)
          (error who "cannot find spindle/private/places/place-zygote.ss in the library directories")
          (let ([f (string-append (caar dirs) "/spindle/private/places/place-zygote.ss")]
                [o (string-append (cdar dirs) "/spindle/private/places/place-zygote.so")])
            (cond
              [(not (file-exists? f)) (loop (cdr dirs))]
              [(and (file-exists? o)
                    (time>=? (file-modification-time o) (file-modification-time f)))
               o]
              [else f])))))

  (define (absolute dir)
    (if (and (fx> (string-length dir) 0) (char=? (string-ref dir 0) #\/))
        dir
        (string-append (current-directory) "/" dir)))

  ;; A (source . object) pair of library-directories as --libdirs spells it.
  (define (libdir-argument d)
    (if (string=? (car d) (cdr d))
        (absolute (car d))
        (string-append (absolute (car d)) "::" (absolute (cdr d)))))

  ;; The template's --libdirs: it needs only spindle's own libraries to
  ;; start (each place gets the whole list in its spawn request), and
  ;; --libdirs separates directories with ':', so a directory whose name
  ;; holds one is left out rather than split in two.
  (define (libdirs-argument dirs)
    (let ([args (map libdir-argument
                     (filter (lambda (d) (not (memv #\: (append (string->list (car d)) (string->list (cdr d))))))
                             dirs))])
      (if (null? args) ""
          (fold-left (lambda (acc d) (string-append acc ":" d)) (car args) (cdr args)))))

  (define (start-launcher! who)
    (let ([exe (or (self-executable) "scheme")]
          [zygote (locate-zygote who)])
      (let-values ([(mine theirs) (make-socket-pair who)])
        (let ([pid (spawn-process who exe
                       (list exe "--libdirs"
                             (libdirs-argument (library-directories))
                             "--optimize-level" (number->string (optimize-level))
                             "--program" zygote)
                       theirs)])
          (close-fd theirs)
          (let ([ctl (descriptor->endpoint mine)])
            (endpoint-set-frame-hook! ctl (lambda (bv fds) (on-launcher-frame ctl pid bv fds)))
            ;; with no place alive, the template has nothing to report
            ;; that could wake a thread (for the deadlock watch)
            (level-watch-idle-when! mine
              (lambda () (with-os-mutex launcher-lock (fx= 0 (hashtable-size live-places)))))
            ctl)))))

  ;; Runs in the poller thread: spawn and exit reports from the template
  ;; whose control endpoint is ctl and process pid.
  (define (on-launcher-frame ctl pid bv fds)
    (if bv
        (let ([msg (fasl-read (open-bytevector-input-port bv))])
          (case (vector-ref msg 0)
            [(spawned)
             (let ([p (live-place (vector-ref msg 1))])
               (when p (place-pid-set! p (vector-ref msg 2))))]
            [(exited) (place-ended! (vector-ref msg 1) (vector-ref msg 2))]
            [(reaped) (place-reaped! (vector-ref msg 1))]))
        ;; The template is gone: so are its places, those whose spawn request
        ;; it never read included (a place is registered with its template
        ;; under launcher-lock); the next place starts a new template.  It
        ;; has closed its end by exiting, so reaping it does not wait.
        (let ([ended (with-os-mutex launcher-lock
                       (when (eq? launcher ctl) (set! launcher #f))
                       (filter (lambda (p) (eq? (place-launcher p) ctl))
                               (vector->list (hashtable-values live-places))))])
          (wait-exit-code pid)
          (for-each (lambda (p) (place-ended! (place-id p) 1) (place-reaped! (place-id p))) ended))))

  ;; A place stays in live-places until its process is reaped: one whose
  ;; value is known may still be sending its queued messages.
  (define (live-place id)
    (with-os-mutex launcher-lock (hashtable-ref live-places id #f)))

  (define (place-ended! id code)
    (let ([p (live-place id)])
      (when (and p (not (place-code p)))
        (place-code-set! p code)
        (latch-fire! (place-dead p)))))

  ;; A place's process is gone: its channel lets its descriptors go once
  ;; what the place left in it is read (see endpoint-read-to-end!).
  (define (place-reaped! id)
    (let ([p (with-os-mutex launcher-lock
               (let ([p (hashtable-ref live-places id #f)])
                 (hashtable-delete! live-places id)
                 p))])
      (when p
        (latch-fire! (place-reaped p))
        (endpoint-read-to-end! (place-endpoint p)))))

  ;; To p's template (a message to a dead one is dropped: its places are
  ;; ended by on-launcher-frame).
  (define (to-launcher! p msg fds)
    (let-values ([(port get) (open-bytevector-output-port)])
      (fasl-write msg port)
      (endpoint-send! (place-launcher p) (get) #f fds '() fds)))

  ;; module: a library name, a file path, or #(lifted library ordinal).
  (define (launch! who module start)
    (let-values ([(mine theirs) (make-socket-pair who)])
      (let* ([ep (descriptor->endpoint mine)]
             ;; The template is started under the lock (a spawn takes about
             ;; a millisecond, with interrupts disabled like every Chez mutex
             ;; hold in spindle), so racing first places share one.
             [p (with-os-mutex launcher-lock
                  (unless launcher (set! launcher (start-launcher! who)))
                  (set! next-place-id (fx+ next-place-id 1))
                  (let ([p (make-place ep next-place-id launcher)])
                    (hashtable-set! live-places next-place-id p)
                    p))]
             [id (place-id p)])
        (when tracing? (trace-instant! 'place-create id module))
        (to-launcher! p
                      (vector 'spawn id module start (current-directory)
                              (library-directories) (library-extensions) (optimize-level))
                      (list theirs))
        ;; the place belongs to the current custodian (a shut-down one
        ;; refuses it: the place is killed and the error raised)
        (guard (c [#t (place-kill p) (raise c)])
          (custodian-register! p place-kind who))
        p)))

  (define place-kind
    (make-custodian-kind (lambda (p) (place-kill p)) (lambda (p) (not (live-place? p)))))

  ;; ---------------------------------------------------------------- creating
  (define (library-name? v)
    (and (list? v) (pair? v) (for-all (lambda (x) (or (symbol? x) (list? x))) v)))

  (define dynamic-place*
    (case-lambda
      [(module start) (dynamic-place* module start #f #f)]
      [(module start at) (dynamic-place* module start at #f)]
      [(module start at named) (make-dynamic-place module start at named)]))

  (define (make-dynamic-place module start at named)
    (check-deterministic 'dynamic-place)
    (unless (or (library-name? module) (string? module))
      (assertion-violation 'dynamic-place "expected a library name or a file path" module))
    (when (and (string? module) (not (file-exists? module)))
      (error 'dynamic-place "cannot read file" module))
    (unless (symbol? start)
      (assertion-violation 'dynamic-place "expected a symbol" start))
    (when at (assertion-violation 'dynamic-place "#:at is not supported (distributed places are future work)" at))
    (when named (assertion-violation 'dynamic-place "#:named is not supported (distributed places are future work)" named))
    (launch! 'dynamic-place (if (string? module) (absolute module) module) start))

  (define-keyword-procedure dynamic-place dynamic-place* (module #f) (start-name #f) (at #f) (named #f))

  ;; Bodies of place forms, by (library name . ordinal).
  (define lifted-lock (make-mutex))
  (define lifted-bodies (make-hashtable equal-hash equal?))

  (define (register-lifted-bodies! lib first bodies)
    (with-os-mutex lifted-lock
      (do ([i 0 (fx+ i 1)]) ((fx= i (vector-length bodies)))
        (hashtable-set! lifted-bodies (cons lib (fx+ first i)) (vector-ref bodies i))))
    #t)

  (define (lifted-body lib n)
    (with-os-mutex lifted-lock (hashtable-ref lifted-bodies (cons lib n) #f)))

  (define (start-lifted-place who lib n)
    (unless (lifted-body lib n)
      (assertion-violation who "place body not registered: (lift-places (lib ...)) must be the last form of the library" lib))
    (launch! who (vector 'lifted lib n) 'lifted))

  ;; Place bodies not yet registered, in order (expand time): each entry is
  ;; (library-identifier . #'(lambda (id) body ...)).  The identifier is
  ;; %spindle-place-library in the place form's context; it is bound by that
  ;; library's lift-places, which takes only its own entries (a library with
  ;; a missing or misplaced lift-places cannot shift another's ordinals).
  (meta define pending-bodies '())

  (meta define (bodies-of lib)
    (filter (lambda (e) (free-identifier=? (car e) lib)) pending-bodies))

  ;; (place id body ...): the body becomes (lambda (id) body ...) lifted to
  ;; the library's lift-places; here it leaves a start by ordinal.
  (define-syntax place
    (lambda (x)
      (syntax-case x ()
        [(_ id body0 body ...)
         (identifier? #'id)
         (let ([lib (datum->syntax #'id '%spindle-place-library)])
           (if (free-identifier=? lib #'%spindle-place-library)
               ;; unbound there, as here: no lift-places in the library
               #'(assertion-violation 'place
                   "place body not registered: (lift-places (lib ...)) must be the last form of the library")
               (let ([n (length (bodies-of lib))])
                 (set! pending-bodies
                   (append pending-bodies (list (cons lib #'(lambda (id) body0 body ...)))))
                 (with-syntax ([lib lib] [n n])
                   #'(start-lifted-place 'place lib n)))))])))

  ;; Must be the library's last form.  Its definitions are scanned first;
  ;; their right-hand sides expand after every earlier one, so collect-bodies
  ;; sees all the place forms of the library.
  (define-syntax lift-places
    (lambda (x)
      (syntax-case x ()
        [(k (name ...))
         (with-syntax ([lib (datum->syntax #'k '%spindle-place-library)]
                       [reg (datum->syntax #'k '%spindle-place-registration)])
           #'(begin
               (define lib '(name ...))
               (define reg (collect-bodies lib (name ...) 0))))])))

  ;; Registers this library's bodies from ordinal `from` on.  Expanding them
  ;; may expand place forms nested in them, which add bodies: the trailing
  ;; collect-bodies registers those, until no new body appears.
  (define-syntax collect-bodies
    (lambda (x)
      (syntax-case x ()
        [(_ lib (name ...) from)
         (let* ([start (syntax->datum #'from)] [mine (bodies-of #'lib)] [n (length mine)])
           (if (fx= start n)
               (begin
                 (set! pending-bodies
                   (filter (lambda (e) (not (free-identifier=? (car e) #'lib))) pending-bodies))
                 #'#t)
               (with-syntax ([(body ...) (map cdr (list-tail mine start))] [next n])
                 #'(begin
                     (register-lifted-bodies! '(name ...) from (vector body ...))
                     (collect-bodies lib (name ...) next)))))])))

  ;; ---------------------------------------------------------------- control
  (define (check-place who p)
    (unless (place? p) (assertion-violation who "expected a place" p)))

  (define (place-dead-evt p)
    (check-place 'place-dead-evt p)
    (letrec ([e (wrap-evt (place-dead p) (lambda (l) e))]) e))

  (define (place-wait p)
    (check-place 'place-wait p)
    (sync (place-dead p))
    (place-code p))

  ;; Also ends a place whose value is known but whose process still waits
  ;; for a slow reader of its queued messages (they are dropped); the
  ;; value stays.
  (define (place-kill p)
    (check-place 'place-kill p)
    (when (live-place? p)
      (to-launcher! p (vector 'signal (place-id p) 9) '())
      (sync (place-reaped p)))
    (void))

  (define (live-place? p) (eq? p (live-place (place-id p))))

  (define place-break
    (case-lambda
      [(p) (place-break p #f)]
      [(p kind)
       (check-place 'place-break p)
       (let ([signo (signal-number kind)])
         (unless (and signo (not (eq? kind 'kill)))
           (assertion-violation 'place-break "expected #f, hang-up or terminate" kind))
         (unless (place-code p)
           (to-launcher! p (vector 'signal (place-id p) signo) '())))]))

  ;; ---------------------------------------------------------------- in the place
  ;; A fresh place's young generation.  A place is a fork of the template,
  ;; so each page its allocation first touches costs a copy-on-write fault
  ;; (~2.4 us on the reference VM): with Chez's default 8 MB between
  ;; collections, ~2,500 of them (~6 ms) before the first collection.  A place
  ;; starts with 2 MB (~800 faults; its collections are cheap while its old
  ;; objects are the template's static ones) and goes back to the inherited
  ;; setting once its own live data outgrows twice that, where a small young
  ;; generation would promote too much (hash-nums).  bench/LOG.md, "Fresh places".
  ;; A size the place's own code set meanwhile is its choice and stays (NAS
  ;; CG's 1 MB nursery went back to 8 MB in member 1 once its rows were live).
  (define fresh-place-collect-trip-bytes (* 2 1024 1024))

  (define (start-small-young-generation!)
    (let ([inherited (collect-trip-bytes)] [handler (collect-request-handler)])
      (when (< fresh-place-collect-trip-bytes inherited)
        (collect-trip-bytes fresh-place-collect-trip-bytes)
        (collect-request-handler
          (lambda ()
            (handler)
            (when (> (- (bytes-allocated) (bytes-allocated 'static)) (* 2 fresh-place-collect-trip-bytes))
              (when (= (collect-trip-bytes) fresh-place-collect-trip-bytes)
                (collect-trip-bytes inherited))
              (collect-request-handler handler)))))))

  ;; Called in a fresh fork of the template.  Never returns.
  ;; report-fd: a pipe to the template.  A place reports its completion
  ;; value there as soon as it has one, then stays until its queued
  ;; messages have left (a peer that is slow to read must not lose them,
  ;; and place-wait must not wait for that peer), then exits.
  (define (place-child-main fd report-fd module start cwd)
    (start-small-young-generation!)
    ;; A fork shares the template's gensym session key (gensyms made in two
    ;; places would be eq? once sent) and its random state.
    (reset-gensym-session!)
    (random-seed (+ 1 (mod (+ (* 7919 (own-pid)) (time-nanosecond (current-time))) 4294967000)))
    (trace-place-start! (if (vector? module) (vector-ref module 1) module))
    (let ()
      (define (finish code)
        (trace-write-place!)
        (flush-output-port (current-output-port))
        (flush-output-port (console-error-port))
        (write-octet report-fd code)
        (wait-for-output! sleep)
        (exit-process code))
      (let ([handler (lambda args
                       (finish (if (and (pair? args) (fixnum? (car args)) (fx<= 0 (car args) 255))
                                   (car args)
                                   0)))])
        (exit-handler handler)
        (set-worker-exit-handler! handler))
      (change-directory cwd)
      (let ([ep (descriptor->endpoint fd)] [main (current-thread)]
            [signals (signals->descriptor place-signals)])
        ;; place-break's signals arrive through the poller, since the place's
        ;; threads may all be asleep outside Scheme.  The handler may run on
        ;; main's own worker, in a timer tick: the break is requested, and
        ;; main takes it when that tick switches (break-thread would raise
        ;; it in the handler).
        (watch-descriptor! signals
          (lambda ()
            (let loop ()
              (let ([signo (read-signal signals)])
                (when signo
                  (request-break! main (signal-break-kind signo))
                  (loop))))))
        (finish
          (call/cc
            (lambda (k)
              (with-exception-handler
                (lambda (c)
                  (let ([err (console-error-port)])
                    (fprintf err "place ~s: " (if (vector? module) (vector-ref module 1) module))
                    (if (condition? c) (display-condition c err) (fprintf err "non-condition raised: ~s" c))
                    (newline err))
                  (k 1))
                (lambda ()
                  ((start-procedure module start) ep)
                  0))))))))

  (define (start-procedure module start)
    (cond
      [(vector? module)
       (invoke-library (vector-ref module 1))
       (or (lifted-body (vector-ref module 1) (vector-ref module 2))
           (error 'place "place body not registered" (vector-ref module 1)))]
      [(string? module)
       (let ([first (call-with-input-file module read)])
         (load module)
         (eval start (if (and (pair? first) (eq? (car first) 'library))
                         (environment (cadr first))
                         (interaction-environment))))]
      [else (eval start (environment module))])))
