#!chezscheme
;;; Tracing a run: SPINDLE_TRACE=FILE (or bin/spindle trace) records what
;;; each OS worker did, with a monotonic clock in microseconds, and writes
;;; FILE at exit as Chrome Trace Event Format JSON (Perfetto and Chromium's
;;; tracing page open it; bin/spindle trace-view draws it as one HTML page).
;;;
;;; Off (the default), every hook in the scheduler and elsewhere is one test
;;; of tracing?, a constant of this library.  On, each OS thread appends to
;;; its own buffer (a thread parameter, checked against the OS thread id
;;; since forked threads inherit it): no lock, and no allocation but the
;;; clock reading and a new chunk every 2048 events.  Buffers are read only
;;; at exit (a reader may miss an event being written at that moment).
;;;
;;; Processes: the process that first sees SPINDLE_TRACE is the root; it
;;; sets SPINDLE_TRACE_ROOT so that its children know they are not.  A place
;;; (trace-place-start!) writes its events to FILE.PID.part when it ends;
;;; the root merges the parts it finds when it writes FILE.  Other children
;;; (the places' template process) write nothing.
;;;
;;; Bounded traces: SPINDLE_TRACE_LIMIT (bin/spindle trace --limit) keeps
;;; only the end of a run, as a ring: "50MB" (also KB, GB; a plain number
;;; is bytes) bounds the file, "10s" keeps the last seconds.  Each buffer
;;; then recycles its oldest chunk instead of growing, once the process
;;; holds about the limit's worth of events (or the chunk's events are
;;; older than the window); at exit the root keeps the newest events of all
;;; processes that fit (by their timestamps) and writes them oldest first.
;;;
;;; Events (pid = OS process, tid = OS thread):
;;;   run     X  a green thread ran from ts for dur (args: thread, id, end)
;;;   spawn wake park finish   i  thread events (park: reason)
;;;   future  X  a future's thunk ran; future-create, future-touch  i
;;;   place-create place-send place-recv  i  (send/recv: size in bytes)
;;;   cg-barrier  X  a fork-join member from its arrival at a barrier to its
;;;                  release (member id, np)
;;;   gc      X  a collection, from its request to its end (bytes before/after)
(library (spindle private diagnostics trace)
  (export tracing? trace-now set-trace-namer!
          trace-run-start! trace-run-end! trace-park-reason! trace-park!
          trace-wake! trace-spawn! trace-finish!
          trace-instant! trace-span! trace-place-start! trace-write-place!)
  (import (chezscheme) (spindle private core clock) (spindle private core exit-hooks)
          (only (spindle private os processes) own-pid))

  (define trace-path
    (let ([p (getenv "SPINDLE_TRACE")]) (and p (not (string=? p "")) p)))
  (define tracing? (and trace-path #t))

  ;; (bytes . n), (seconds . x) or #f, from SPINDLE_TRACE_LIMIT.
  (define trace-limit
    (let ([text (and tracing? (getenv "SPINDLE_TRACE_LIMIT"))])
      (and text (not (string=? text ""))
           (or (parse-limit text)
               (let ([e (console-error-port)])
                 (fprintf e "spindle trace: ignoring SPINDLE_TRACE_LIMIT=~a (expected say 50MB or 10s)\n" text)
                 #f)))))

  (define (parse-limit text)
    (let* ([s (string-downcase text)] [n (string-length s)]
           [digits (let loop ([i 0]) (if (and (fx< i n) (or (char-numeric? (string-ref s i)) (char=? (string-ref s i) #\.))) (loop (fx+ i 1)) i))]
           [x (and (fx> digits 0) (string->number (substring s 0 digits)))]
           [unit (substring s digits n)])
      (and x (> x 0)
           (cond
             [(member unit '("" "b")) (cons 'bytes (exact (round x)))]
             [(member unit '("k" "kb")) (cons 'bytes (exact (round (* x 1024))))]
             [(member unit '("m" "mb")) (cons 'bytes (exact (round (* x 1024 1024))))]
             [(member unit '("g" "gb")) (cons 'bytes (exact (round (* x 1024 1024 1024))))]
             [(member unit '("s")) (cons 'seconds x)]
             [else #f]))))

  ;; A written event takes about 125 bytes (measured on channel ping-pong):
  ;; a process keeps events for the limit at 100 bytes each, so that the
  ;; newest that fit are still there at exit.
  (define ring-events
    (and trace-limit (eq? (car trace-limit) 'bytes) (fxquotient (cdr trace-limit) 100)))
  (define ring-window-us
    (and trace-limit (eq? (car trace-limit) 'seconds) (exact (round (* 1000000 (cdr trace-limit))))))
  ;; Chunks held by all buffers of this process (changed with box-cas!).
  (define held-chunks (box 0))
  (define (add-held! k)
    (let loop () (let ([n (unbox held-chunks)]) (unless (box-cas! held-chunks n (fx+ n k)) (loop)))))

  (define getpid own-pid)

  ;; root?: this process writes trace-path; place-name: set in a place.
  (define root? (and tracing? (not (getenv "SPINDLE_TRACE_ROOT"))))
  (define place-name #f)
  (define root-marked (and root? (begin (putenv "SPINDLE_TRACE_ROOT" (number->string (getpid))) #t)))

  ;; Microseconds of a clock shared by all processes (places are processes).
  (define (trace-now) (shared-monotonic-us))

  ;; ------------------------------------------------------------ buffers
  ;; An event is 6 slots of a chunk: kind ts dur a b c.
  (define chunk-events 2048)
  (define-record-type tbuf
    (fields tid (mutable chunks) (mutable vec) (mutable pos)
            (mutable open-obj) (mutable open-name) (mutable open-ts)
            (mutable pool) (mutable reason))
    (nongenerative spindle-trace-buffer-v1) (sealed #t))

  (define buffers (box '()))
  (define buffer-param (make-thread-parameter #f))

  (define (buffer)
    (let ([b (buffer-param)])
      (if (and b (fx= (tbuf-tid b) (get-thread-id)))
          b
          (let ([b (make-tbuf (get-thread-id) '() (make-vector (fx* 6 chunk-events) #f) 0
                              #f #f 0 #f #f)])
            (buffer-param b)
            (add-held! 1)
            (let loop ()
              (let ([old (unbox buffers)])
                (unless (box-cas! buffers old (cons b old)) (loop))))
            b))))

  (define (emit! b kind ts dur x y z)
    (let ([v (tbuf-vec b)] [i (tbuf-pos b)])
      (if (fx= i (vector-length v))
          (begin
            (tbuf-vec-set! b (or (recycled-chunk! b ts) (begin (add-held! 1) (make-vector (fx* 6 chunk-events) #f))))
            (tbuf-chunks-set! b (cons v (tbuf-chunks b)))
            (tbuf-pos-set! b 0)
            (emit! b kind ts dur x y z))
          (begin
            (vector-set! v i kind) (vector-set! v (fx+ i 1) ts) (vector-set! v (fx+ i 2) dur)
            (vector-set! v (fx+ i 3) x) (vector-set! v (fx+ i 4) y) (vector-set! v (fx+ i 5) z)
            (tbuf-pos-set! b (fx+ i 6))))))

  ;; In ring mode, b's oldest full chunk when it is no longer needed (the
  ;; process holds more than the limit's events, or the chunk's newest
  ;; event is older than the window), dropped from b's chunks; else #f.
  ;; chunks is newest first.
  (define (recycled-chunk! b now)
    (let ([chunks (tbuf-chunks b)])
      (and (pair? chunks)
           (let ([oldest (list-ref chunks (fx- (length chunks) 1))])
             (and (cond
                    [ring-events (fx> (fx* (unbox held-chunks) chunk-events) (fx+ ring-events chunk-events))]
                    [ring-window-us (fx< (vector-ref oldest (fx- (fx* 6 chunk-events) 5)) (fx- now ring-window-us))]
                    [else #f])
                  (begin
                    (tbuf-chunks-set! b (list-head chunks (fx- (length chunks) 1)))
                    (vector-fill! oldest #f)
                    oldest))))))

  ;; ------------------------------------------------------------ hooks
  ;; A green thread starts running on this OS thread (pool: its pool).
  ;; The scheduler's gthread-name and gthread-pool (it imports this library).
  (define thread-name (lambda (t) t))
  (define thread-pool (lambda (t) #f))
  (define (set-trace-namer! name pool) (set! thread-name name) (set! thread-pool pool))

  (define trace-run-start!
    (case-lambda
      [(t) (trace-run-start! t (thread-name t) (thread-pool t))]
      [(t name pool) (run-start! t name pool)]))
  (define (run-start! t name pool)
    (let ([b (buffer)])
      (when (tbuf-open-obj b) (close-run! b (trace-now)))
      (unless (tbuf-pool b) (tbuf-pool-set! b pool))
      (tbuf-open-obj-set! b t)
      (tbuf-open-name-set! b name)
      (tbuf-open-ts-set! b (trace-now))))

  (define (close-run! b now)
    (let ([t0 (tbuf-open-ts b)])
      (emit! b 'run t0 (fx- now t0) (tbuf-open-obj b) (tbuf-open-name b) (or (tbuf-reason b) 'yield))
      (tbuf-open-obj-set! b #f)
      (tbuf-reason-set! b #f)))

  ;; The running thread is switched out (parked, yielded, preempted, ended).
  (define (trace-run-end!)
    (let ([b (buffer)])
      (when (tbuf-open-obj b) (close-run! b (trace-now)))))

  ;; What the next park! of this OS thread waits on (sync says).
  (define (trace-park-reason! why) (tbuf-reason-set! (buffer) why))

  (define (trace-park! t)
    (let ([b (buffer)] [name (thread-name t)])
      (unless (tbuf-reason b) (tbuf-reason-set! b 'suspend))
      (emit! b 'park (trace-now) #f t name (tbuf-reason b))))

  (define (trace-wake! t) (emit! (buffer) 'wake (trace-now) #f t (thread-name t) #f))
  (define (trace-spawn! t) (emit! (buffer) 'spawn (trace-now) #f t (thread-name t) #f))
  (define (trace-finish! t)
    (let ([b (buffer)])
      (tbuf-reason-set! b 'finished)
      (emit! b 'finish (trace-now) #f t (thread-name t) #f)))

  ;; kind: future-create, future-touch, place-create, place-send, place-recv.
  (define (trace-instant! kind x y) (emit! (buffer) kind (trace-now) #f x y #f))
  ;; kind: future (x: the future) or cg-barrier (x: member id, y: np),
  ;; from t0 to now.
  (define (trace-span! kind t0 x y) (emit! (buffer) kind t0 (fx- (trace-now) t0) x y #f))

  ;; Collections: from the request to the end of the handler, on the OS
  ;; thread that ran it (all others are stopped meanwhile).
  (define gc-wrapped
    (and tracing?
         (let ([handler (collect-request-handler)])
           (collect-request-handler
             (lambda ()
               (let ([t0 (trace-now)] [before (bytes-allocated)])
                 (handler)
                 (emit! (buffer) 'gc t0 (fx- (trace-now) t0) before (bytes-allocated) #f))))
           #t)))

  ;; The program's own thread runs from the start ('main: the scheduler's
  ;; name for it, and the key its later spans are counted under).
  (define main-opened
    (and root? (begin (trace-run-start! 'main 'main #f) #t)))

  ;; ------------------------------------------------------------ places
  ;; In a fresh place process (a fork of the template): forget the
  ;; template's events.
  (define (trace-place-start! name)
    (when tracing?
      (set! place-name name)
      (set-box! buffers '())
      (buffer-param #f)
      (trace-run-start! 'main 'main #f)))

  (define (trace-write-place!)
    (when (and tracing? place-name)
      (write-file! (format "~a.~a.part" trace-path (getpid)) #f)))

  ;; ------------------------------------------------------------ writing
  (define (json-string s port)
    (let ([s (if (string? s) s (format "~a" s))])
      (put-char port #\")
      (string-for-each
        (lambda (c)
          (cond
            [(char=? c #\") (put-string port "\\\"")]
            [(char=? c #\\) (put-string port "\\\\")]
            [(or (char<? c #\space) (char=? c #\<) (char=? c #\>) (char=? c #\&))
             (put-string port (format "\\u~4,'0x" (char->integer c)))]
            [else (put-char port c)]))
        s)
      (put-char port #\")))

  ;; Every event of every buffer from time cutoff on, oldest first per
  ;; buffer, as JSON objects separated by commas, after the process's and
  ;; the buffers' names.  measure: #f, or a procedure that receives each
  ;; event's ts and size in bytes instead (nothing is written, no names).
  (define (write-events out pid cutoff measure)
    (let* ([ids (make-eq-hashtable)] [next-id 0] [first? #t] [now (trace-now)]
           [pools (make-eq-hashtable)] [futures (make-eq-hashtable)]
           [port (if measure (open-output-string) out)])
      (define (id-of obj name)
        (let ([key (if (eq? name 'main) 'main obj)])
          (or (hashtable-ref ids key #f)
              (begin (set! next-id (fx+ next-id 1)) (hashtable-set! ids key next-id) next-id))))
      (define (numbered table x)
        (or (hashtable-ref table x #f)
            (let ([n (fx+ 1 (hashtable-size table))]) (hashtable-set! table x n) n)))
      (define (sep) (if (or first? measure) (set! first? #f) (put-string port ",\n")))
      (define (event name cat ph ts dur tid args)
        (sep)
        (when measure (get-output-string port))          ; empties it
        (put-string port "{\"name\":") (json-string name port)
        (put-string port ",\"cat\":") (json-string cat port)
        (put-string port (format ",\"ph\":\"~a\",\"ts\":~a" ph ts))
        (when dur (put-string port (format ",\"dur\":~a" dur)))
        (when (string=? ph "i") (put-string port ",\"s\":\"t\""))
        (put-string port (format ",\"pid\":~a,\"tid\":~a,\"args\":{" pid tid))
        (let loop ([args args] [first #t])
          (unless (null? args)
            (unless first (put-string port ","))
            (json-string (caar args) port)
            (put-string port ":")
            (let ([v (cdar args)])
              (if (and (number? v) (exact? v)) (put-string port (number->string v)) (json-string v port)))
            (loop (cdr args) #f)))
        (put-string port "}}")
        (when measure (measure ts (fx+ 2 (utf8-length (get-output-string port))))))
      (define (lane-name b)
        (let ([p (tbuf-pool b)])
          (cond
            [(fx= (tbuf-tid b) 0) "OS thread 0 · main pool"]
            [p (format "OS thread ~a · pool ~a" (tbuf-tid b) (numbered pools p))]
            [else (format "OS thread ~a" (tbuf-tid b))])))
      (sep)
      (put-string port (format "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":~a,\"tid\":0,\"args\":{\"name\":" pid))
      (json-string (if place-name (format "place ~a (pid ~a)" place-name pid)
                       (format "spindle ~a (pid ~a)" (car (command-line)) pid))
                   port)
      (put-string port "}}")
      (for-each
        (lambda (b)
          (let ([tid (tbuf-tid b)])
            (when (tbuf-open-obj b) (close-run! b now))
            (sep)
            (put-string port (format "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":~a,\"tid\":~a,\"args\":{\"name\":" pid tid))
            (json-string (lane-name b) port)
            (put-string port "}}")
            (for-each
              (lambda (v n)
                (do ([i 0 (fx+ i 6)]) ((fx>= i n))
                  (let ([kind (if (fx< (vector-ref v (fx+ i 1)) cutoff) 'skip (vector-ref v i))]
                        [ts (vector-ref v (fx+ i 1))] [dur (vector-ref v (fx+ i 2))]
                        [x (vector-ref v (fx+ i 3))] [y (vector-ref v (fx+ i 4))] [z (vector-ref v (fx+ i 5))])
                    (case kind
                      [(run) (event (thread-label y) "run" "X" ts dur tid `(("thread" . ,y) ("id" . ,(id-of x y)) ("end" . ,z)))]
                      [(park) (event "park" "thread" "i" ts #f tid `(("thread" . ,y) ("id" . ,(id-of x y)) ("reason" . ,z)))]
                      [(wake spawn finish) (event kind "thread" "i" ts #f tid `(("thread" . ,y) ("id" . ,(id-of x y))))]
                      [(future) (event (format "future ~a" (numbered futures x)) "future" "X" ts dur tid
                                       `(("future" . ,(numbered futures x))))]
                      [(future-create future-touch)
                       (event kind "future" "i" ts #f tid
                              `(("future" . ,(numbered futures x)) ,@(if y `(("blocked" . ,(format "~a" y))) '())))]
                      [(place-create) (event kind "place" "i" ts #f tid `(("place" . ,x) ("module" . ,(format "~s" y))))]
                      [(place-send place-recv) (event kind "place" "i" ts #f tid `(("size" . ,x)))]
                      [(cg-barrier) (event "barrier" "cg" "X" ts dur tid `(("member" . ,x) ("np" . ,y)))]
                      [(gc) (event "gc" "gc" "X" ts dur tid `(("bytes_before" . ,x) ("bytes_after" . ,y)))]
                      [else (void)]))))
              (reverse (cons (tbuf-vec b) (tbuf-chunks b)))
              (reverse (cons (tbuf-pos b) (map vector-length (tbuf-chunks b)))))))
        (reverse (unbox buffers)))))

  (define (thread-label name) (if (number? name) (format "thread ~a" name) name))

  ;; whole?: the root's file, with the places' parts merged in.  With a
  ;; size limit, each process keeps its newest events that fit, and the
  ;; root the newest of all (cutoff-for: the time from which they fit).
  (define (write-file! path whole?)
    (guard (c [#t (let ([e (console-error-port)])
                    (display "spindle trace: cannot write " e) (display path e) (newline e))])
      (let* ([parts (if whole? (part-files path) '())]
             [cutoff (cond
                       [ring-window-us (fx- (trace-now) ring-window-us)]
                       [ring-events (cutoff-for parts (cdr trace-limit))]
                       [else 0])]
             [port (open-file-output-port path (file-options no-fail) (buffer-mode block) (native-transcoder))])
        (when whole? (put-string port "{\"traceEvents\":[\n"))
        (write-events port (getpid) cutoff #f)
        (for-each-part-line parts
          (lambda (l)
            (when (or (meta-line? l) (>= (line-ts l) cutoff))
              (put-string port ",\n")
              (put-string port (trim-comma l)))))
        (for-each delete-file parts)
        (when whole? (put-string port "\n],\"displayTimeUnit\":\"ms\"}\n"))
        (close-port port))))

  ;; The earliest time from which this process's events and those of the
  ;; parts fit in limit bytes, with the names (metadata) and the file's
  ;; frame.  Events are sorted by time, newest first, and counted in until
  ;; the next would not fit: from just after its time on, they all fit.
  (define (cutoff-for parts limit)
    (let ([sizes '()] [reserved (fx* 256 (fx+ 1 (length (unbox buffers))))])
      (write-events #f (getpid) 0 (lambda (ts n) (set! sizes (cons (cons ts n) sizes))))
      (for-each-part-line parts
        (lambda (l)
          (if (meta-line? l)
              (set! reserved (fx+ reserved 2 (utf8-length l)))
              (set! sizes (cons (cons (line-ts l) (fx+ 1 (utf8-length l))) sizes)))))
      (let loop ([es (list-sort (lambda (a b) (> (car a) (car b))) sizes)] [left (- limit 64 reserved)])
        (cond
          [(null? es) 0]
          [(< left (cdar es)) (+ (caar es) 1)]
          [else (loop (cdr es) (- left (cdar es)))]))))

  ;; Calls (proc line) for every line of every part file, in order.
  (define (for-each-part-line parts proc)
    (for-each
      (lambda (part)
        (call-with-input-file part
          (lambda (in)
            (let loop ()
              (let ([l (get-line in)])
                (unless (eof-object? l) (proc l) (loop)))))))
      parts))

  ;; A line of a part: one event (strings escape newlines) and a comma,
  ;; but for the last.
  (define (trim-comma l)
    (let ([n (string-length l)])
      (if (and (fx> n 0) (char=? (string-ref l (fx- n 1)) #\,)) (substring l 0 (fx- n 1)) l)))

  (define (meta-line? l) (and (string-index-of l "\"ph\":\"M\"") #t))

  (define (utf8-length s)
    (let ([n (string-length s)])
      (let loop ([i 0] [k 0])
        (if (fx= i n)
            k
            (let ([c (char->integer (string-ref s i))])
              (loop (fx+ i 1) (fx+ k (cond [(fx< c #x80) 1] [(fx< c #x800) 2] [(fx< c #x10000) 3] [else 4]))))))))

  (define (string-index-of s sub)
    (let ([n (string-length s)] [k (string-length sub)])
      (let loop ([i 0])
        (cond [(fx> (fx+ i k) n) #f]
              [(let match ([j 0])
                 (or (fx= j k) (and (char=? (string-ref s (fx+ i j)) (string-ref sub j)) (match (fx+ j 1)))))
               i]
              [else (loop (fx+ i 1))]))))

  ;; The "ts" of an event line.
  (define (line-ts l)
    (let ([i (string-index-of l "\"ts\":")])
      (if (not i)
          0
          (let loop ([j (fx+ i 5)] [v 0])
            (if (and (fx< j (string-length l)) (char-numeric? (string-ref l j)))
                (loop (fx+ j 1) (+ (* v 10) (fx- (char->integer (string-ref l j)) 48)))
                v)))))

  (define (part-files path)
    (let* ([slash (let loop ([i (fx- (string-length path) 1)])
                    (cond [(fx< i 0) #f] [(char=? (string-ref path i) #\/) i] [else (loop (fx- i 1))]))]
           [dir (if slash (substring path 0 (fx+ slash 1)) "")]
           [base (if slash (substring path (fx+ slash 1) (string-length path)) path)]
           [prefix (string-append base ".")])
      (map (lambda (f) (string-append dir f))
           (filter (lambda (f)
                     (let ([n (string-length f)] [k (string-length prefix)])
                       (and (fx> n (fx+ k 5))
                            (string=? (substring f 0 k) prefix)
                            (string=? (substring f (fx- n 5) n) ".part"))))
                   (directory-list (if slash dir "."))))))

  ;; The root writes at exit (by `exit` or by falling off the program's end).
  (define exit-hook
    (and root? (begin (add-exit-hook! (lambda () (write-file! trace-path #t))) #t))))
