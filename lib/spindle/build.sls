#!chezscheme
;;; Over 450 lines: the controller and its worker places speak one protocol; the scan and the stamps are private/tools/'s.
;;; The parallel build (`bin/spindle build`): compiles a tree of R6RS
;;; libraries and programs with worker places, in the dependency order read
;;; from their import forms.  The manual: doc/reference.md, "(spindle build)".
;;;
;;; The controller is the one of the Places paper's Figure 1 (Tew et al.,
;;; DLS 2011): each worker place asks for a file, compiles it and reports
;;; back; the controller syncs on every worker at once and hands the next
;;; ready file to whichever reports first.  A file is ready once every
;;; scanned library it imports has been compiled.  Until the first worker
;;; has said it is ready, the controller compiles ready files itself, so
;;; the places' start (a fresh template process) overlaps work.
;;;
;;; Invariants:
;;; - A file is compiled by one worker (or the controller), once: both run with
;;;   compile-imported-libraries off, so an import of a scanned library
;;;   loads the object its own job wrote (the controller hands a file out only
;;;   after its dependencies' objects are in place).
;;; - An object is written under a temporary name and renamed, so a reader
;;;   (another build, a running program) never sees half of one; then its
;;;   record (FILE.dep: what it was compiled from, read as its compile
;;;   started; see (spindle private tools build-stamp)) is written the
;;;   same way.  An object whose record does not match is rebuilt, so an
;;;   object of a build that was cut short is never taken as up to date.
;;; - A build holds an exclusive lock (flock) on every directory it writes
;;;   objects into, taken in one order, from before it decides what is up
;;;   to date to its end: a second build of the same files waits for it.
;;; - A break (SIGINT) of the controller is never caught here: it ends the
;;;   build, killing the worker places.
;;; - Workers already run on spindle's libraries: a scanned library with the
;;;   name of one loaded in a worker would be compiled against the loaded
;;;   instance, and Chez would refuse its object later (it loads the source
;;;   instead); such a build is refused.
(library (spindle build)
  (export parallel-build)
  (import (chezscheme)
          (only (spindle place) place lift-places place-channel-put place-channel-get
                place-channel-put/get place-wait place-kill place-dead-evt processor-count)
          (only (spindle event) sync sync/timeout wrap-evt)
          (only (spindle thread) break-condition?)
          (only (spindle private os descriptors) try-lock-directory close-fd)
          (only (spindle private os libc) sys-strerror)
          (spindle private tools build-graph)
          (spindle private tools build-stamp))

  ;; The compile parameters workers take from the caller.
  (define (compile-settings)
    (vector (optimize-level) (debug-level) (generate-inspector-information)
            (generate-procedure-source-information) (enable-cross-library-optimization)))

  ;; A worker place: takes its settings, then asks for files until told to
  ;; stop.  Its first request carries the names of the libraries it runs on.
  (define (build-worker ch)
    (let ([config (place-channel-get ch)])
      (unless (eq? config 'unused) (run-build-worker ch config))))

  (define (run-build-worker ch config)
    (let ([s (vector-ref config 1)])
      (optimize-level (vector-ref s 0))
      (debug-level (vector-ref s 1))
      (generate-inspector-information (vector-ref s 2))
      (generate-procedure-source-information (vector-ref s 3))
      (enable-cross-library-optimization (vector-ref s 4)))
    (keep-young-generation! (* 64 1024 1024))
    (with-job-settings (vector-ref config 0)
      (lambda ()
        (let loop ([report (cons 'ready (library-list))])
          (let ([job (place-channel-put/get ch report)])
            (if (eq? job 'stop)
                (place-channel-put ch (vector 'stopped (cpu-time) (time->ms (sstats-gc-cpu (statistics)))))
                (loop (compile-job job))))))))

  ;; What every compile of the build runs under, in a worker or in the
  ;; controller: the build's library path, and no compile of imported
  ;; libraries (a scanned one is loaded from the object its job wrote).
  (define (with-job-settings libdirs thunk)
    (parameterize ([library-directories libdirs]
                   [compile-imported-libraries #f]
                   [generate-wpo-files #f]
                   [import-notify #f])
      (thunk)))

  (define (time->ms t) (+ (* 1000 (time-second t)) (quotient (time-nanosecond t) 1000000)))

  ;; A compile's garbage is short-lived: collecting every 64 MB instead of
  ;; every 2-8 MB copies less of it (200 generated libraries: 360 collections
  ;; and 0.54 s of 2.7 s CPU at -j 1 before).  A fresh place's handler sets
  ;; collect-trip-bytes back and hands over to the handler it wrapped (see
  ;; start-small-young-generation! in place.sls), so this one stays
  ;; outermost: it calls whatever handler is current below it (spindle's
  ;; policy and its hooks), then takes its place back and restores the trip.
  (define (keep-young-generation! bytes)
    (letrec ([inner (collect-request-handler)]
             [outer (lambda ()
                      (inner)
                      (let ([now (collect-request-handler)])
                        (unless (eq? now outer)
                          (set! inner now)
                          (collect-request-handler outer)))
                      (collect-trip-bytes bytes))])
      (collect-request-handler outer)
      (collect-trip-bytes bytes)))

  ;; job: #(compile kind source object imports) -> #(done ok? text seconds
  ;; instance), text being the warnings (ok) or the error (not ok), instance
  ;; the name of this compile; imports: ((library-name . instance) ...) of
  ;; the build's libraries it imports.  An include is found beside the
  ;; file first, as when Chez compiles a library it imports.
  (define (compile-job job)
    (let* ([kind (vector-ref job 1)] [src (vector-ref job 2)] [obj (vector-ref job 3)]
           [imports (vector-ref job 4)]
           [tmp (format "~a.~a.tmp" obj (gensym->unique-string (gensym)))]
           [dirs (cons (path-parent src) (source-directories))]
           [instance (new-instance)] [warnings '()] [t0 (real-time)])
      (let-values ([(source includes) (compile-inputs src dirs)])
        (let ([error-text
               (guard (c [(break-condition? c) (when (file-exists? tmp) (delete-file tmp)) (raise c)]
                         [#t (condition-text c)])
                 (with-exception-handler
                   (lambda (c)
                     ;; Chez's two cp0 passes may raise one warning twice
                     (if (warning? c)
                         (let ([text (condition-text c)])
                           (unless (member text warnings) (set! warnings (cons text warnings))))
                         (raise c)))
                   (lambda ()
                     ;; Chez announces each compile on the current output port.
                     (parameterize ([current-output-port (open-output-string)]
                                    [source-directories dirs])
                       (if (eq? kind 'library) (compile-library src tmp) (compile-program src tmp)))))
                 (rename-file tmp obj)
                 (write-stamp! obj (compile-settings) source includes imports instance)
                 #f)])
          (when (and error-text (file-exists? tmp)) (delete-file tmp))
          (vector 'done (not error-text)
                  (or error-text (apply string-append (map (lambda (w) (string-append w "\n")) (reverse warnings))))
                  (/ (- (real-time) t0) 1000.0)
                  instance)))))

  (define (start-worker) (place ch (build-worker ch)))

  ;; The controller's own compile of job, while no worker place has started
  ;; yet (a place template's start is ~0.1 s of a build that -j cannot
  ;; divide): with the workers' settings, and an exit from the file's
  ;; compile-time code raised as an error in the file instead of ending the
  ;; build.
  (define (compile-here job libdirs)
    (with-job-settings libdirs
      (lambda ()
        (parameterize ([exit-handler (lambda args
                                       (error #f (format "its compile-time code called exit~{ ~s~}" args)))])
          (compile-job job)))))

  (define (job-of u) (vector 'compile (unit-kind u) (unit-file u) (unit-object u) (import-instances u)))

  ;; The instances of the build's libraries u imports.
  (define (import-instances u) (map (lambda (d) (cons (unit-name d) (unit-instance d))) (unit-deps u)))

  ;; u's object is up to date (build-stamp's rule); notes its instance.
  (define (current? u settings)
    (let ([s (read-stamp (unit-object u))])
      (unit-instance-set! u (and s (stamp-instance s)))
      (stamp-current? s settings (unit-file u) (unit-object u) (import-instances u))))

  ;; (parallel-build dirs [jobs] [verbose?] [keep-going?]) -> (values built up-to-date)
  (define parallel-build
    (case-lambda
      [(dirs) (parallel-build dirs (processor-count) #f #f)]
      [(dirs jobs) (parallel-build dirs jobs #f #f)]
      [(dirs jobs verbose?) (parallel-build dirs jobs verbose? #f)]
      [(dirs jobs verbose? keep-going?)
       (unless (and (list? dirs) (pair? dirs) (for-all string? dirs))
         (assertion-violation 'parallel-build "expected a non-empty list of directory names" dirs))
       (unless (and (fixnum? jobs) (fx> jobs 0))
         (assertion-violation 'parallel-build "expected a positive fixnum for jobs" jobs))
       (for-each (lambda (d)
                   (unless (file-directory? d)
                     (assertion-violation 'parallel-build "no such directory" d)))
                 dirs)
       (build (map absolute dirs) jobs verbose? keep-going?)]))

  ;; The workers (no more than there are files) are started before the
  ;; files are read, so that the place template's start overlaps the scan
  ;; (0.1 s of the 0.23 s a build of 200 libraries cannot divide); those the
  ;; build does not need are told 'unused and end.
  (define (build dirs jobs verbose? keep-going?)
    (let* ([files (let ([seen (make-hashtable string-hash string=?)])   ; nested DIRs
                    (filter (lambda (f) (and (not (hashtable-ref seen f #f)) (hashtable-set! seen f #t) #t))
                            (apply append (map source-files dirs))))]
           [workers (map (lambda (i) (start-worker)) (iota (fxmin jobs (length files))))]
           [used '()])
      (dynamic-wind
        void
        (lambda ()
          (build-with dirs files verbose? keep-going? workers
                      (lambda (n) (set! used (list-head workers n)) used)))
        (lambda ()
          (for-each (lambda (w)
                      (unless (memq w used) (guard (c [#t (void)]) (place-channel-put w 'unused))))
                    workers)))))

  ;; take-workers: n -> the first n workers, now the build's.  A file
  ;; that cannot be read is reported at once and fails the build at its
  ;; end; the others are built.
  (define (build-with dirs files verbose? keep-going? workers take-workers)
    (let* ([scanned (map (lambda (f) (cons f (scan-file f))) files)]
           [unreadable (map car (filter (lambda (s) (string? (cdr s))) scanned))]
           [units (filter unit? (map cdr scanned))]
           [by-name (make-hashtable equal-hash equal?)]
           [by-object (make-hashtable string-hash string=?)])
      (for-each (lambda (s)
                  (when (string? (cdr s))
                    (fprintf (current-error-port) "spindle build: cannot read ~a: ~a\n" (car s) (cdr s))))
                scanned)
      (for-each
        (lambda (u)
          (let ([other (hashtable-ref by-object (unit-object u) #f)])
            (when other
              (fail 'parallel-build "~a and ~a would both compile to ~a" (unit-file other) (unit-file u) (unit-object u)))
            (hashtable-set! by-object (unit-object u) u))
          (when (unit-name u)
            (let ([other (hashtable-ref by-name (unit-name u) #f)])
              (when other
                (fail 'parallel-build "library ~s is defined by both ~a and ~a" (unit-name u) (unit-file other) (unit-file u)))
              (hashtable-set! by-name (unit-name u) u))))
        units)
      (for-each
        (lambda (u)
          (let ([deps (fold-left (lambda (acc n)
                                   (let ([d (hashtable-ref by-name n #f)])
                                     (if (and d (not (memq d acc))) (cons d acc) acc)))
                                 '() (unit-imports u))])
            (unit-deps-set! u (reverse deps))
            (for-each (lambda (d) (unit-dependents-set! d (cons u (unit-dependents d)))) deps)))
        units)
      (let ([ordered (order-units units)])
        (with-directory-locks (object-directories units)
          (lambda ()
            (for-each remove-temporaries! (object-directories units))
            (let ([settings (compile-settings)])
              (mark-stale! ordered (lambda (u) (current? u settings))))
            (set-priorities! ordered)
            (let ([stale (filter unit-stale? ordered)])
              (if (null? stale)
                  (begin
                    (unless (null? unreadable) (build-failed unreadable 0 0))
                    (values 0 (length units)))
                  (let ([built (run-workers stale (take-workers (fxmin (length workers) (length stale)))
                                            (worker-library-directories dirs units) verbose? keep-going?
                                            unreadable)])
                    (values built (- (length units) (length stale)))))))))))

  (define (build-failed failed built not-built)
    (fail 'parallel-build "build failed: ~a failed (~{~a~^, ~}); built ~a, not built ~a"
          (length failed) failed built not-built))

  ;; The directories the units' objects go to, sorted.
  (define (object-directories units)
    (let ([seen (make-hashtable string-hash string=?)])
      (for-each (lambda (u) (hashtable-set! seen (path-parent (unit-object u)) #t)) units)
      (list-sort string<? (vector->list (hashtable-keys seen)))))

  ;; Runs thunk holding an exclusive lock on each of dirs, taken in their
  ;; order (so two builds never wait for each other crosswise), waiting
  ;; while another build holds one; they are let go when thunk returns or
  ;; is left (and by the kernel if the process ends).
  (define (with-directory-locks dirs thunk)
    (let ([held '()])
      (dynamic-wind
        void
        (lambda ()
          (for-each (lambda (d) (set! held (cons (lock-directory d) held))) dirs)
          (thunk))
        (lambda () (for-each close-fd held) (set! held '())))))

  ;; The temporary objects and records of compiles cut short (a worker
  ;; place killed) in dir, which this build has locked.
  (define (remove-temporaries! dir)
    (for-each (lambda (name)
                (when (and (string-suffix? name ".tmp") (or (string-contains? name ".so.") (string-contains? name ".dep.")))
                  (guard (c [(i/o-error? c) (void)]) (delete-file (string-append dir "/" name)))))
              (guard (c [(i/o-error? c) '()]) (directory-list dir))))

  (define (string-suffix? s suffix)
    (let ([n (string-length s)] [k (string-length suffix)])
      (and (fx>= n k) (string=? (substring s (fx- n k) n) suffix))))

  (define (string-contains? s part)
    (let ([n (string-length s)] [k (string-length part)])
      (let loop ([i 0]) (and (fx<= (fx+ i k) n) (or (string=? (substring s i (fx+ i k)) part) (loop (fx+ i 1)))))))

  (define (lock-directory dir)
    (let loop ([said? #f])
      (let ([r (try-lock-directory dir)])
        (cond
          [(not r)
           (unless said?
             (fprintf (current-error-port) "spindle build: waiting for another build of ~a\n" dir))
           (sleep (make-time 'time-duration 50000000 0))
           (loop #t)]
          [(fx< r 0) (fail 'parallel-build "cannot lock ~a: ~a" dir (sys-strerror r))]
          [else r]))))

  ;; The scanned directories and the roots of the scanned libraries, then the
  ;; caller's library path (where the external imports are found).
  (define (worker-library-directories dirs units)
    (let ([roots (fold-left (lambda (acc d) (if (member d acc) acc (append acc (list d))))
                            '()
                            (append (filter values (map (lambda (u) (and (unit-name u) (library-root u))) units))
                                    dirs))])
      (append (map (lambda (d) (cons d d)) roots) (library-directories))))

  ;; How many jobs a worker holds at most: the one it compiles and the next,
  ;; queued in its channel, so that it starts that one without waiting for
  ;; the controller to be scheduled (with as many workers as cores, the
  ;; controller shares them, and a hand-off per file cost 10-15% at -j 2).
  (define jobs-per-worker 2)

  ;; The controller (member 0): -> the number of files compiled, or raises
  ;; once every in-flight compile has ended when one failed (or, with
  ;; keep-going?, once every file that does not import a failed one has
  ;; been compiled), or when unreadable (files) is not empty.  held maps a
  ;; worker to the units it was given and has not reported, oldest (the one
  ;; it compiles) first; taking lists the workers that said they are ready.
  (define (run-workers stale workers libdirs verbose? keep-going? unreadable)
    (let ([settings (compile-settings)]
          [names (make-hashtable equal-hash equal?)]
          [held (make-eq-hashtable)]
          [compiled-by (make-eq-hashtable)] ; worker -> files it compiled
          [err (current-error-port)]
          [ready '()] [taking '()] [in-flight 0] [built 0] [here 0] [failed '()] [refused #f])
      (define (stopping?) (or refused (and (pair? failed) (not keep-going?))))
      (define (compiled! u)
        (set! built (+ built 1))
        (for-each (lambda (d)
                    (when (unit-stale? d)
                      (unit-waiting-set! d (- (unit-waiting d) 1))
                      (when (zero? (unit-waiting d)) (set! ready (insert-ready d ready)))))
                  (unit-dependents u)))
      (define (held-count w) (length (hashtable-ref held w '())))
      (define (check-clash! loaded)
        (let ([clash (find (lambda (name) (hashtable-ref names name #f)) loaded)])
          (when (and clash (not refused))
            (set! refused
              (format "cannot build ~a: library ~s is one the build's worker places run on"
                      (unit-file (hashtable-ref names clash #f)) clash)))))
      ;; Until a worker has said it is ready, the controller compiles the
      ;; next ready unit itself (between two looks at the workers).
      (define (compile-here?) (and (null? taking) (not (stopping?)) (pair? ready)))
      (define (compile-while-starting!)
        (when (compile-here?)
          (let ([u (car ready)])
            (set! ready (cdr ready))
            (let ([m (compile-here (job-of u) libdirs)])
              (set! here (+ here 1))
              (report! u m)))))
      ;; The next unit goes to the worker holding fewest, under the limit.
      (define (dispatch!)
        (unless (or (stopping?) (null? ready) (null? taking))
          (let ([w (fold-left (lambda (best w) (if (fx< (held-count w) (held-count best)) w best))
                              (car taking) (cdr taking))])
            (when (fx< (held-count w) jobs-per-worker)
              (let ([u (car ready)])
                (set! ready (cdr ready))
                (hashtable-set! held w (append (hashtable-ref held w '()) (list u)))
                (set! in-flight (+ in-flight 1))
                (place-channel-put w (job-of u))
                (dispatch!))))))
      (define (receive! w m)
        (cond
          [(and (pair? m) (eq? (car m) 'ready))
           (check-clash! (cdr m))
           (set! taking (append taking (list w)))]
          [else                           ; #(done ok? text seconds)
           (let ([u (car (hashtable-ref held w '()))])
             (hashtable-update! held w cdr '())
             (set! in-flight (- in-flight 1))
             (hashtable-update! compiled-by w (lambda (k) (+ k 1)) 0)
             (report! u m))]))
      (define (report! u m)
        (let ([ok? (vector-ref m 1)] [text (vector-ref m 2)])
          (cond
            [ok?
             (unless (string=? text "")
               (fprintf err "spindle build: ~a: ~a" (unit-file u) text))
             (when verbose?
               (printf "compiled ~a (~,2f s)\n" (unit-file u) (vector-ref m 3)))
             (unit-instance-set! u (vector-ref m 4))
             (compiled! u)]
            [else
             (fprintf err "spindle build: ~a: ~a\n" (unit-file u) text)
             (set! failed (cons (unit-file u) failed))])))
      (define (dead! w live)
        ;; a report it sent before it ended may still be queued
        (let ([m (guard (c [(not (break-condition? c)) #f]) (sync/timeout 0 w))])
          (when m (receive! w m)))
        ;; the unit it was compiling failed; those queued behind go back
        (let ([us (hashtable-ref held w '())])
          (hashtable-delete! held w)
          (set! taking (remq w taking))
          (set! in-flight (- in-flight (length us)))
          (when (pair? us)
            (fprintf err "spindle build: ~a: the worker place compiling it ended (code ~a)\n"
                     (unit-file (car us)) (place-wait w))
            (set! failed (cons (unit-file (car us)) failed))
            (for-each (lambda (u) (set! ready (insert-ready u ready))) (cdr us)))
          (remq w live)))
      ;; Stops the live workers; with verbose?, prints what each did.
      ;; A worker that never said it was ready (the controller built
      ;; everything while it started) is not waited for: it ends by itself
      ;; once it reads the stop queued for it.
      (define (finish live)
        (for-each (lambda (w) (place-channel-put w 'stop)) live)
        (when (and verbose? (positive? here))
          (printf "controller: ~a file~:p, while the workers started\n" here))
        (let ([started (filter (lambda (w) (memq w taking)) live)])
          (for-each
           (lambda (w k)
             (let ([m (let get () (let ([m (guard (c [(not (break-condition? c)) #f]) (place-channel-get w))])
                                    (if (and m (not (vector? m))) (get) m)))])
               (when (and m verbose?)
                 (printf "worker ~a: ~a file~:p, CPU ~,2f s (collections ~,2f s)\n"
                         k (hashtable-ref compiled-by w 0) (/ (vector-ref m 1) 1000.0) (/ (vector-ref m 2) 1000.0))))
             (place-wait w))
           started (iota (length started))))
        (let ([not-built (- (length stale) built (length failed))])
          (cond
            [refused (fail 'parallel-build "~a" refused)]
            [(or (pair? failed) (pair? unreadable))
             (build-failed (append unreadable (reverse failed)) built not-built)]
            [(positive? not-built)
             (fail 'parallel-build "every worker place ended; built ~a, not built ~a" built not-built)]
            [else built])))
      (for-each (lambda (u) (when (unit-name u) (hashtable-set! names (unit-name u) u))) stale)
      ;; the controller runs on the libraries a worker runs on
      (check-clash! (library-list))
      (for-each (lambda (u)
                  (unit-waiting-set! u (length (filter unit-stale? (unit-deps u))))
                  (when (zero? (unit-waiting u)) (set! ready (insert-ready u ready))))
                stale)
      (for-each (lambda (w) (place-channel-put w (vector libdirs settings))) workers)
      ;; Ends when nothing is in flight and nothing more will be handed out.
      ;; Left otherwise (a break), it kills the workers.
      (let ([live-workers workers] [done? #f])
        (dynamic-wind
          void
          (lambda ()
            (let loop ([live workers])
              (set! live-workers live)
              (dispatch!)
              (if (and (zero? in-flight)
                       (or (stopping?) (null? ready) (null? live)))
                  (begin (set! done? #t) (finish live))
                  ;; A channel whose place has ended raises "peer place ended"
                  ;; from sync; its place-dead-evt says which one.  While the
                  ;; controller has a unit it may compile, it only looks.
                  (let ([got (guard (c [(not (break-condition? c)) #f])
                               (apply (if (compile-here?)
                                          (lambda evts (or (apply sync/timeout 0 evts) (begin (compile-while-starting!) 'compiled)))
                                          sync)
                                      (apply append
                                             (map (lambda (w)
                                                    (list (wrap-evt w (lambda (m) (cons w m)))
                                                          (wrap-evt (place-dead-evt w) (lambda (e) (cons w #f)))))
                                                  live))))])
                    (cond
                      [(eq? got 'compiled) (loop live)]
                      [(not got)
                       (loop (fold-left (lambda (live w) (if (sync/timeout 0 (place-dead-evt w)) (dead! w live) live))
                                        live live))]
                      [(cdr got) (receive! (car got) (cdr got)) (loop live)]
                      [else (loop (dead! (car got) live))])))))
          (lambda () (unless done? (for-each place-kill live-workers)))))))

  (lift-places (spindle build)))
