#!chezscheme
;;; Synchronized ports: one port shared by any mix of coroutine threads,
;;; parallel threads and futures.
;;;
;;; (make-synchronized-port port [mode]) returns a new port of the same
;;; kind (binary or textual; input, output or both) that forwards every
;;; operation to port, which it then owns (closing it closes port).
;;; (with-port-lock port body ...) makes the operations of body on port
;;; contiguous: no other thread's operation on it lands in between.
;;;
;;; Invariants (issue 10's socket and pipe ports rely on them):
;;; - The synchronized port has no buffer of its own (size 0): Chez calls
;;;   its handler for every operation, so no Chez buffer is ever shared.
;;;   The handler is Chez's own port-handler record, made from its
;;;   nongenerative uid (io-types.ss, unchanged in Chez 10), because R6RS
;;;   custom ports have no flush procedure and cost a handler call per
;;;   character anyway.  One handler call is one operation: put-string,
;;;   put-bytevector, get-string-n, get-bytevector-n and each character or
;;;   byte are atomic; write, display, printf, get-line and read are
;;;   several calls (use with-port-lock to keep them together).
;;; - Each direction (output, input) has its own lock, so a reader waiting
;;;   for input never holds up writers.  A lock has two parts:
;;;   owner, a re-entrant owner lock ((spindle private core owner-lock))
;;;   of the green thread in with-port-lock (its holder may be preempted
;;;   or park; other threads park until it is released, or until the
;;;   holder dies: a thread killed inside with-port-lock abandons it, and
;;;   it goes to the next waiter);
;;;   busy, held by the OS thread that is inside the wrapped port right now.
;;; - mode 'atomic (the default, for Chez's own ports, which never park):
;;;   an operation takes busy, spinning, with interrupts disabled, and runs
;;;   only when owner is free or its own; so it is never preempted, killed
;;;   or moved to another worker midway.  flush takes busy only: it never
;;;   waits for a with-port-lock holder (the exit-time flush cannot hang).
;;;   Its cost: while the wrapped port blocks in the kernel (a full pipe on
;;;   stdout), its OS thread holds up collections.
;;; - mode 'parking (for ports whose operations may park the green thread,
;;;   e.g. non-blocking sockets that sync on readiness): an operation takes
;;;   owner, like a one-operation with-port-lock, and runs with interrupts
;;;   enabled; it may be preempted or park while holding it.  The wrapped
;;;   port must stay consistent at its park points (a killed holder's lock
;;;   is taken over).
;;; - In mode 'parking an output operation runs with breaks disabled, and a
;;;   break that came meanwhile is delivered once it is done: a break that
;;;   unwound it after the wrapped port wrote its bytes but before it
;;;   emptied its buffer would have them written again by the next flush.
;;; - Operations on a closed synchronized port raise an &i/o-port error
;;;   naming the operation; closing waits for the with-port-lock holder.
;;; - make-synchronized-console-port makes (spindle console)'s ports: output
;;;   flushed after each newline, like Chez's console; input that flushes
;;;   the given output ports first (so a prompt shows before the read).
(library (spindle private impl synchronized-port)
  (export make-synchronized-port synchronized-port? with-port-lock call-with-port-lock
          make-synchronized-console-port)
  (import (chezscheme) (spindle private host ports)
          (only (spindle private core scheduler) current-gthread 
                gthread-break-enabled? gthread-break-enabled?-set!)
          (only (spindle private core thread-requests) check-requests!)
          (only (spindle private os threads) os-yield!)
          (only (spindle private core owner-lock) make-owner-lock owner-lock-owner owner-lock-acquire-as!
                owner-lock-release-as! owner-lock-await-free!))


  ;; ---------------------------------------------------------------- locks
  (define-record-type plock
    (fields busy       ; box: #f, or the id of the OS thread inside the wrapped port
            owner)     ; owner lock of with-port-lock (a dead holder's goes to the next waiter)
    (protocol (lambda (new) (lambda () (new (box #f) (make-owner-lock)))))
    (nongenerative spindle-synchronized-port-lock-v1) (sealed #t))

  (define (owner-of lk) (owner-lock-owner (plock-owner lk)))

  (define (acquire-owner! lk me) (owner-lock-acquire-as! (plock-owner lk) me))

  (define (release-owner! lk me) (owner-lock-release-as! (plock-owner lk) me))

  ;; Interrupts disabled.  Takes busy, then, unless any-owner?, waits for a
  ;; with-port-lock holder that is not us.  #t if taken, #f if this OS
  ;; thread already holds it (an exception handler of the operation in
  ;; progress writing to the same port: let it through rather than hang).
  ;; (A thread that parked may wake on another worker: the OS thread id is
  ;; read again after every wait.)
  (define (enter-busy! lk any-owner?)
    (let ([busy (plock-busy lk)])
      (let spin ([polls 0] [tid (get-thread-id)])
        (cond
          [(box-cas! busy #f tid)
           (let ([o (owner-of lk)])
             (if (or any-owner? (not o) (eq? o (current-gthread)))
                 #t
                 (begin
                   (set-box! busy #f)
                   (enable-interrupts)
                   (owner-lock-await-free! (plock-owner lk))
                   (disable-interrupts)
                   (spin 0 (get-thread-id)))))]
          [(eqv? (unbox busy) tid) #f]
          [(fx< polls 1000) (spin (fx+ polls 1) tid)]
          [else (os-yield!) (spin 0 tid)]))))

  ;; ---------------------------------------------------------------- ports
  (define-record-type sport
    (fields inner parking? out-lock in-lock
            line?          ; flush the wrapped port after output holding a newline
            console?       ; closing only flushes (like Chez's console ports)
            (mutable before-input)    ; thunk run before each input operation, or #f
            (mutable unflushed?))     ; output written since the last flush (read unlocked)
    (nongenerative spindle-synchronized-port-v1) (sealed #t))

  (define (port-state p)
    (let ([i (port-info p)]) (and (sport? i) i)))

  (define (synchronized-port? v) (and (port? v) (port-state v) #t))

  (define closed-marker (list 'closed))

  ;; Runs body as one operation of direction lk on port p (whose state is
  ;; sp); any-owner?: flush, which never waits for with-port-lock.
  (define-syntax define-op
    (syntax-rules ()
      [(_ (name sp lk who p any-owner? arg ...) body ...)
       (define (name sp lk who p any-owner? arg ...)
         (let ([r (if (sport-parking? sp)
                      (let ([me (current-gthread)])
                        (if (eq? (owner-of lk) me)
                            (if (port-closed? p) closed-marker (begin body ...))
                            (begin
                              (acquire-owner! lk me)
                              (dynamic-wind
                                void
                                (lambda () (if (port-closed? p) closed-marker (begin body ...)))
                                (lambda () (release-owner! lk me))))))
                      (begin
                        (disable-interrupts)
                        (if (enter-busy! lk any-owner?)
                            (dynamic-wind
                              void
                              (lambda () (if (port-closed? p) closed-marker (begin body ...)))
                              (lambda () (set-box! (plock-busy lk) #f) (enable-interrupts)))
                            (let ([v (if (port-closed? p) closed-marker (begin body ...))])
                              (enable-interrupts)
                              v))))])
           (if (eq? r closed-marker) (closed-error who p) r)))]))

;; An output operation of a parking port (see the top of the file).
  (define-syntax define-output-op
    (syntax-rules ()
      [(_ (name sp lk who p any-owner? arg ...) body ...)
       (begin
         (define-op (inner sp lk who p any-owner? arg ...) body ...)
         (define (name sp lk who p any-owner? arg ...)
           (if (sport-parking? sp)
               (call-without-breaks (lambda () (inner sp lk who p any-owner? arg ...)))
               (inner sp lk who p any-owner? arg ...))))]))

  ;; (No green thread: a poller handler or a signal handler printing.)
  (define (call-without-breaks thunk)
    (let* ([t (current-gthread)] [old (and t (gthread-break-enabled? t))])
      (if old
          (let ([v (dynamic-wind
                     (lambda () (gthread-break-enabled?-set! t #f))
                     thunk
                     (lambda () (gthread-break-enabled?-set! t old)))])
            (check-requests!)
            v)
          (thunk))))

  (define (closed-error who p)
    (raise (condition (make-i/o-port-error p) (make-who-condition who)
                      (make-message-condition "not permitted on a closed port") (make-irritants-condition (list p)))))

  (define (newline-in? s start end)
    (let loop ([i end]) (and (fx> i start) (or (char=? (string-ref s (fx- i 1)) #\newline) (loop (fx- i 1))))))

  ;; ---- output
  ;; After output: flush it now (line? and a newline went out), or note it.
  (define (written! sp flush?)
    (if flush?
        (begin (flush-output-port (sport-inner sp)) (sport-unflushed?-set! sp #f))
        (sport-unflushed?-set! sp #t)))

  (define-output-op (put-char-op sp lk who p any c)
    (put-char (sport-inner sp) c)
    (let ([nl? (char=? c #\newline)])
      (set-port-bol! p nl?)
      (written! sp (and nl? (sport-line? sp)))))

  (define-output-op (put-string-op sp lk who p any s start n)
    (let ([end (fx+ start n)])
      (put-string (sport-inner sp) s start n)
      (when (fx> n 0) (set-port-bol! p (char=? (string-ref s (fx- end 1)) #\newline)))
      (written! sp (and (sport-line? sp) (newline-in? s start end)))
      n))

  (define-output-op (put-u8-op sp lk who p any b) (put-u8 (sport-inner sp) b) (written! sp #f))

  (define-output-op (put-bytevector-op sp lk who p any bv start n)
    (put-bytevector (sport-inner sp) bv start n)
    (written! sp #f)
    n)

  (define-output-op (flush-op sp lk who p any) (written! sp #t))

  (define-output-op (clear-output-op sp lk who p any) (clear-output-port (sport-inner sp)))

  ;; ---- input
  (define-syntax input
    (syntax-rules ()
      [(_ sp e) (begin (let ([b (sport-before-input sp)]) (when b (b))) e)]))

  ;; get-string-n and friends want every element they asked for: fill
  ;; under the lock (one atomic read); others want what there is.
  (define filling '(get-string-n get-string-n! get-string-all get-bytevector-n get-bytevector-n!
                    get-bytevector-all))

  (define-op (ready-op sp lk who p any) (input sp (input-port-ready? (sport-inner sp))))
  (define-op (lookahead-op sp lk who p any)
    (let ([inner (sport-inner sp)]) (input sp (if (textual-port? inner) (lookahead-char inner) (lookahead-u8 inner)))))
  (define-op (unget-op sp lk who p any x)
    (let ([inner (sport-inner sp)]) (if (textual-port? inner) (unget-char inner x) (unget-u8 inner x))))
  (define-op (get-op sp lk who p any)
    (let ([inner (sport-inner sp)]) (input sp (if (textual-port? inner) (get-char inner) (get-u8 inner)))))
  (define-op (get-some-op sp lk who p any buf start n)
    (let ([inner (sport-inner sp)])
      (input sp
        (if (textual-port? inner)
            (if (memq who filling) (get-string-n! inner buf start n) (get-string-some! inner buf start n))
            (if (memq who filling) (get-bytevector-n! inner buf start n) (get-bytevector-some! inner buf start n))))))
  (define-op (clear-input-op sp lk who p any) (clear-input-port (sport-inner sp)))

  ;; ---- both
  (define-op (position-op sp lk who p any) (port-position (sport-inner sp)))
  (define-op (set-position-op sp lk who p any pos) (set-port-position! (sport-inner sp) pos))
  (define-op (length-op sp lk who p any) (port-length (sport-inner sp)))
  (define-op (set-length-op sp lk who p any len) (set-port-length! (sport-inner sp) len))

  ;; Closing waits for the with-port-lock holders (unless that is us), then
  ;; for operations in progress.
  (define (close-sport! sp p)
    (let* ([me (current-gthread)] [locks (sport-locks sp)]
           [taken (filter (lambda (lk) (not (eq? (owner-of lk) me))) locks)])
      (for-each (lambda (lk) (acquire-owner! lk me)) taken)
      (dynamic-wind
        void
        (lambda ()
          (if (sport-parking? sp)
              (close-inner! sp p)
              (begin
                (disable-interrupts)
                (let ([entered (map (lambda (lk) (enter-busy! lk #t)) locks)])
                  (dynamic-wind
                    void
                    (lambda () (close-inner! sp p))
                    (lambda ()
                      (for-each (lambda (lk e) (when e (set-box! (plock-busy lk) #f))) locks entered)
                      (enable-interrupts)))))))
        (lambda () (for-each (lambda (lk) (release-owner! lk me)) (reverse taken))))))

  (define (close-inner! sp p)
    (let ([inner (sport-inner sp)])
      (unless (port-closed? p)
        (cond
          [(sport-console? sp) (when (output-port? inner) (flush-output-port inner))]
          [else (close-port inner) (mark-port-closed! p)]))))

  ;; The handler procedures, closed over sp.
  (define (make-handler sp)
    (let ([o (sport-out-lock sp)] [i (sport-in-lock sp)] [inner (sport-inner sp)])
      (define-syntax via
        (syntax-rules ()
          [(_ lk op arg ...) (and lk (lambda (who p arg ...) (op sp lk who p #f arg ...)))]))
      (define-syntax if-has
        (syntax-rules () [(_ has? e) (and (has? inner) e)]))
      (let ([pos-lock (or o i)] [text? (textual-port? inner)])
        (make-port-handler
          (via i ready-op) (via i lookahead-op) (via i unget-op x) (via i get-op)
          (via i get-some-op buf start n) (via i clear-input-op)
          (if text? (via o put-char-op c) (via o put-u8-op b))
          (if text? (via o put-string-op s start n) (via o put-bytevector-op bv start n))
          (and o (lambda (who p) (flush-op sp o who p #t)))
          (via o clear-output-op)
          (lambda (who p) (close-sport! sp p))
          (if-has port-has-port-position? (via pos-lock position-op))
          (if-has port-has-set-port-position!? (via pos-lock set-position-op pos))
          (if-has port-has-port-length? (via pos-lock length-op))
          (if-has port-has-set-port-length!? (via pos-lock set-length-op len))
          #f #f))))

  (define (sport-locks sp)
    (let ([o (sport-out-lock sp)] [i (sport-in-lock sp)])
      (cond [(and o i) (list o i)] [o (list o)] [else (list i)])))

  (define (wrap who port mode name line? console?)
    (unless (port? port) (assertion-violation who "expected a port" port))
    (when (port-closed? port) (assertion-violation who "expected an open port" port))
    (let* ([in? (input-port? port)] [out? (output-port? port)]
           [sp (make-sport port (eq? mode 'parking) (and out? (make-plock)) (and in? (make-plock))
                           line? console? #f #f)]
           [h (make-handler sp)])
      (if (textual-port? port)
          (cond
            [(and in? out?) (make-handler-textual-input/output-port name h "" "" sp)]
            [in? (make-handler-textual-input-port name h "" sp)]
            [else (make-handler-textual-output-port name h "" sp)])
          (cond
            [(and in? out?) (make-handler-binary-input/output-port name h #vu8() #vu8() sp)]
            [in? (make-handler-binary-input-port name h #vu8() sp)]
            [else (make-handler-binary-output-port name h #vu8() sp)]))))

  (define make-synchronized-port
    (case-lambda
      [(port) (make-synchronized-port port 'atomic)]
      [(port mode)
       (cond
         [(not (memq mode '(atomic parking)))
          (assertion-violation 'make-synchronized-port "expected 'atomic or 'parking for the mode" mode)]
         [(synchronized-port? port) port]
         [else (wrap 'make-synchronized-port port mode (if (port? port) (port-name port) "") #f #f)])]))

  ;; ---------------------------------------------------------------- with-port-lock
  ;; Holds port's locks (output, then input) while thunk runs.  A port that
  ;; is not synchronized has no lock: thunk simply runs.
  (define (call-with-port-lock port thunk)
    (unless (port? port) (assertion-violation 'with-port-lock "expected a port" port))
    (unless (procedure? thunk) (assertion-violation 'call-with-port-lock "expected a procedure" thunk))
    (let ([sp (port-state port)])
      (if (not sp)
          (thunk)
          (let ([locks (sport-locks sp)] [me (current-gthread)])
            (if (for-all (lambda (lk) (eq? (owner-of lk) me)) locks)
                (thunk)
                (dynamic-wind
                  (lambda () (let ([me (current-gthread)]) (for-each (lambda (lk) (acquire-owner! lk me)) locks)))
                  thunk
                  (lambda () (let ([me (current-gthread)]) (for-each (lambda (lk) (release-owner! lk me)) (reverse locks))))))))))

  (define-syntax with-port-lock
    (syntax-rules ()
      [(_ port body1 body ...) (call-with-port-lock port (lambda () body1 body ...))]))

  ;; ---------------------------------------------------------------- console
  ;; A 'parking port over port (whose operations may park), that closing
  ;; only flushes.  Output is flushed after each newline; input first
  ;; flushes each synchronized port of flush-first that holds unflushed
  ;; output.
  (define (make-synchronized-console-port port flush-first)
    (let ([p (wrap 'make-synchronized-console-port port 'parking (port-name port) (output-port? port) #t)])
      (unless (null? flush-first)
        (let ([states (map port-state flush-first)])
          (sport-before-input-set! (port-state p)
            (lambda ()
              (for-each (lambda (sp q) (when (sport-unflushed? sp) (flush-output-port q)))
                        states flush-first)))))
      p)))
