#!chezscheme
;;; Subprocesses with Racket's names (racket/base `subprocess`,
;;; racket/system `system*`, `process*`), started with posix_spawn (safe
;;; while other OS threads run; never through /bin/sh unless a
;;; shell-command variant is asked for).
;;;
;;; Exit notification: each child gets a pidfd (pidfd_open), watched
;;; level-triggered by the poller.  When it turns readable the child has
;;; ended; the poller's callback reaps it with waitpid(pid, WNOHANG) and
;;; fires the subprocess's latch.  No SIGCHLD handler, no race with pid
;;; reuse (signals go through the pidfd), and every child is reaped as
;;; soon as the poller sees it end, waited for or not.
;;;
;;; Descriptors: pipes are made close-on-exec; the parent's end is
;;; non-blocking and becomes a spindle fd port (reads and writes park the
;;; green thread), the child's end is made blocking and dup2'ed onto 0, 1
;;; or 2 by posix_spawn file actions.  The child inherits only 0, 1, 2,
;;; with default signal dispositions and an empty signal mask
;;; ((spindle private os processes) spawn-program).
;;;
;;; Exit codes: the code the child passed to exit, or 128 + the signal
;;; number when a signal ended it (as Racket CS reports it, and as shells do).
(library (spindle subprocess)
  (export subprocess subprocess? subprocess-wait subprocess-status subprocess-kill (rename (subprocess-pid* subprocess-pid))
          find-executable-path system* system*/exit-code process* shell-command/exit-code
          run-command port-descriptor)
  (import (chezscheme) (only (spindle private core atomic) with-os-mutex)
          (only (spindle private core sim-hooks) check-deterministic)
          (spindle private io poller) (spindle private io fd-port)
          (spindle private core evt-core)
          (only (spindle private os descriptors) sys-close make-nonblocking-pipe set-descriptor-blocking!)
          (only (spindle private os processes) spawn-program pidfd-open pidfd-signal send-signal try-reap
                executable-file? exited-status? exit-status-code status-signal)
          (only (spindle private os signals) sigint sigkill)
          (only (spindle private os polling) epoll-in)
          (only (spindle private core sync) sync wrap-evt register-evt-record-type!)
          (only (spindle thread) thread thread-wait)
          (rename (only (spindle thread) sleep) (sleep green-sleep))
          (only (spindle console) console-port-descriptor)
          (only (spindle custodian) custodian-register! make-custodian-kind))

  ;; ---------------------------------------------------------------- records
  (define-record-type (subprocess-record make-subprocess subprocess?)
    (fields (immutable pid subprocess-pid)
            (immutable lock subprocess-lock)
            (immutable done subprocess-done)                  ; a latch fired once reaped
            (mutable pidfd subprocess-pidfd subprocess-pidfd-set!)   ; #f once reaped
            (mutable code subprocess-code subprocess-code-set!))     ; #f while running
    (nongenerative spindle-subprocess-v1) (sealed #t))

  ;; A subprocess is an evt ready when it has ended (and been reaped);
  ;; its result is the subprocess.
  (define registered
    (begin
      (register-evt-record-type! (record-type-descriptor subprocess-record)
        (lambda (p) (wrap-evt (subprocess-done p) (lambda (_) p))))
      (record-writer (record-type-descriptor subprocess-record)
        (lambda (p port wr) (fprintf port "#<subprocess ~a>" (subprocess-pid p))))
      #t))

  (define (check-subprocess who p)
    (unless (subprocess? p) (assertion-violation who "expected a subprocess" p)))

  ;; ---------------------------------------------------------------- reaping
  (define (decode-status s)
    (if (exited-status? s)
        (exit-status-code s)
        (fx+ 128 (status-signal s))))

  ;; Reaps p if it has ended (never blocks).  #t once reaped.
  (define (try-reap! p)
    (with-os-mutex (subprocess-lock p)
      (or (and (subprocess-code p) #t)
          (let-values ([(r s) (try-reap (subprocess-pid p))])
            (cond
              [(fx= r (subprocess-pid p)) (reaped! p (decode-status s)) #t]
              ;; not ours any more (ECHILD): someone else reaped it
              [(fx< r 0) (reaped! p 255) #t]
              [else #f])))))

  ;; With p's lock held.
  (define (reaped! p code)
    (subprocess-code-set! p code)
    (let ([fd (subprocess-pidfd p)])
      (when fd
        (subprocess-pidfd-set! p #f)
        (unwatch-level! fd)
        (sys-close fd)))
    (latch-fire! (subprocess-done p)))

  ;; ---------------------------------------------------------------- descriptors
  ;; The descriptor of a port, or #f: spindle fd ports, spindle console
  ;; ports, Chez file ports, and Chez's console ports (0, 1, 2).
  (define (port-descriptor p)
    (cond
      [(not (port? p)) #f]
      [(fd-port-handle p) => handle-fd]
      [(console-port-descriptor p) => values]
      [(file-port? p) (port-file-descriptor p)]
      [(eq? p (console-input-port)) 0]
      [(eq? p (console-output-port)) 1]
      [(eq? p (console-error-port)) 2]
      [else #f]))

  ;; A pipe for the child's descriptor child-fd: (values parent-fd child-fd),
  ;; the child's end blocking.
  (define (child-pipe who child-reads?)
    (let-values ([(r w) (make-nonblocking-pipe)])
      (when (fx< r 0) (raise-os-error who r "cannot make a pipe"))
      (if child-reads?
          (begin (set-descriptor-blocking! r #t) (values w r))
          (begin (set-descriptor-blocking! w #t) (values r w)))))

  ;; Starts path with argv; actions: a list of (target . source) where
  ;; source is a descriptor or 'null.  Returns the pid or raises.  What
  ;; the child inherits: see spawn-program.
  (define (spawn who path argv actions)
    (let ([pid (spawn-program path argv actions)])
      (when (fx< pid 0) (raise-os-error who (fx- 0 pid) "cannot run" path))
      pid))

  ;; ---------------------------------------------------------------- subprocess
  (define (check-stream who v what stderr?)
    (unless (or (not v) (and stderr? (eq? v 'stdout))
                (and (port-descriptor v) (if (string=? what "stdin") (input-port? v) (output-port? v))))
      (assertion-violation who
        (string-append "expected #f" (if stderr? ", 'stdout" "") " or an " (if (string=? what "stdin") "input" "output")
                       " port with a file descriptor for " what)
        v)))

  ;; (subprocess stdout stdin stderr command arg ...) ->
  ;; (values subprocess stdout-in-or-#f stdin-out-or-#f stderr-in-or-#f)
  (define (subprocess stdout stdin stderr command . args)
    (check-deterministic 'subprocess)
    (check-stream 'subprocess stdout "stdout" #f)
    (check-stream 'subprocess stdin "stdin" #f)
    (check-stream 'subprocess stderr "stderr" #t)
    (unless (string? command) (assertion-violation 'subprocess "expected a path string for the command" command))
    (for-each (lambda (a) (unless (string? a) (assertion-violation 'subprocess "expected a string argument" a))) args)
    (when (fx= 0 (string-length command)) (assertion-violation 'subprocess "empty command" command))
    (for-each (lambda (p) (when (and (port? p) (output-port? p)) (flush-output-port p))) (list stdout stderr))
    (let ([closers '()] [made '()])
      (define (pipe-for child-fd child-reads?)
        (let-values ([(mine theirs) (child-pipe 'subprocess child-reads?)])
          (set! closers (cons theirs closers))
          (set! made (cons (cons child-fd mine) made))
          theirs))
      (let* ([out-src (if stdout (port-descriptor stdout) (pipe-for 1 #f))]
             [in-src (if stdin (port-descriptor stdin) (pipe-for 0 #t))]
             [err-src (cond [(eq? stderr 'stdout) out-src]
                            [stderr (port-descriptor stderr)]
                            [else (pipe-for 2 #f)])]
             [pid (guard (c [#t (for-each sys-close closers)
                                (for-each (lambda (m) (sys-close (cdr m))) made)
                                (raise c)])
                    (spawn 'subprocess command (cons command args)
                           (list (cons 0 in-src) (cons 1 out-src) (cons 2 err-src))))])
        (for-each sys-close closers)
        (let* ([pidfd (pidfd-open pid)]
               [p (make-subprocess pid (make-mutex) (make-owned-latch (lambda (l) l) #f) (and (fx>= pidfd 0) pidfd) #f)])
          (owned-latch-owner-set! (subprocess-done p) p)   ; dump-threads names it
          (if (fx>= pidfd 0)
              (watch-level! pidfd epoll-in (lambda (mask) (try-reap! p)))
              (poll-for-exit p))                ; no pidfd (kernel < 5.3)
          ;; the subprocess belongs to the current custodian, which kills it
          ;; at shutdown; a shut-down custodian refuses it, and it is killed
          (guard (c [#t (subprocess-kill p #t)
                        (for-each (lambda (m) (sys-close (cdr m))) made)
                        (raise c)])
            (custodian-register! p subprocess-kind 'subprocess))
          (let ([port-of (lambda (child-fd in?)
                           (let ([m (assv child-fd made)])
                             (and m
                                  (let-values ([(i o) (make-fd-ports (cdr m)
                                                        (format "~a:~a" command (case child-fd [(0) "stdin"] [(1) "stdout"] [else "stderr"]))
                                                        'pipe in? (not in?))])
                                    (or i o)))))])
            (values p (port-of 1 #t) (port-of 0 #f) (port-of 2 #t)))))))

  (define subprocess-kind
    (make-custodian-kind (lambda (p) (subprocess-kill p #t)) (lambda (p) (and (subprocess-code p) #t))))

  ;; Fallback without pidfds: a thread looks every 10 ms.
  (define (poll-for-exit p)
    (thread (lambda ()
              (let loop ()
                (unless (try-reap! p)
                  (green-sleep 0.01)
                  (loop))))))

  (define (subprocess-pid* p)
    (check-subprocess 'subprocess-pid p)
    (subprocess-pid p))

  (define (subprocess-wait p)
    (check-subprocess 'subprocess-wait p)
    (sync (subprocess-done p))
    (void))

  ;; 'running or the exit code.
  (define (subprocess-status p)
    (check-subprocess 'subprocess-status p)
    (if (try-reap! p) (subprocess-code p) 'running))

  ;; force? #t: SIGKILL; #f: SIGINT (as Racket).  No effect once it ended.
  (define (subprocess-kill p force?)
    (check-subprocess 'subprocess-kill p)
    (with-os-mutex (subprocess-lock p)
      (let ([fd (subprocess-pidfd p)])
        (if fd
            (pidfd-signal fd (if force? sigkill sigint))
            (unless (subprocess-code p)
              (send-signal (subprocess-pid p) (if force? sigkill sigint))))))
    (when force? (subprocess-wait p))
    (void))

  ;; ---------------------------------------------------------------- conveniences
  ;; Racket's find-executable-path (one argument): a name with a slash is
  ;; returned if it exists; otherwise the first executable on PATH.
  (define (find-executable-path name)
    (unless (string? name) (assertion-violation 'find-executable-path "expected a string" name))
    (cond
      [(fx= 0 (string-length name)) #f]
      [(has-slash? name) (and (file-exists? name) name)]
      [else
       (let loop ([dirs (split (or (getenv "PATH") "/usr/local/bin:/usr/bin:/bin") #\:)])
         (and (pair? dirs)
              (let ([f (string-append (if (string=? (car dirs) "") "." (car dirs)) "/" name)])
                (if (and (file-exists? f) (not (file-directory? f)) (executable-file? f))
                    f
                    (loop (cdr dirs))))))]))

  (define (has-slash? s) (and (memv #\/ (string->list s)) #t))

  (define (split s ch)
    (let loop ([i 0] [start 0] [acc '()])
      (cond
        [(fx= i (string-length s)) (reverse (cons (substring s start i) acc))]
        [(char=? (string-ref s i) ch) (loop (fx+ i 1) (fx+ i 1) (cons (substring s start i) acc))]
        [else (loop (fx+ i 1) start acc)])))

  ;; The conveniences look a command without a slash up on PATH (Racket's
  ;; need find-executable-path for that); `subprocess` itself never does.
  (define (resolve who command)
    (unless (string? command) (assertion-violation who "expected a command string" command))
    (if (has-slash? command)
        command
        (or (find-executable-path command)
            (raise (condition (make-error) (make-who-condition who)
                              (make-message-condition "command not found on PATH")
                              (make-irritants-condition (list command)))))))

  ;; Copies everything from in to out (binary in; out binary or textual),
  ;; then closes in.
  (define (pump in out)
    (let loop ()
      (let ([bv (get-bytevector-some in)])
        (unless (eof-object? bv)
          (if (textual-port? out)
              (put-string out (utf8->string bv))
              (put-bytevector out bv))
          (flush-output-port out)
          (loop))))
    (close-port in))

  ;; Runs command with the current ports (by descriptor when they have
  ;; one, else through a pipe and a copying thread; stdin without a
  ;; descriptor reads /dev/null).  Returns the exit code.
  (define (run/current-ports who command args)
    (let* ([path (resolve who command)]
           [out (current-output-port)] [err (current-error-port)] [in (current-input-port)]
           [out-fd (port-descriptor out)] [err-fd (port-descriptor err)])
      (flush-output-port out) (flush-output-port err)
      (let-values ([(p o i e) (apply subprocess (and out-fd out) (and (port-descriptor in) in) (and err-fd err) path args)])
        (when i (close-port i))
        (let ([pumps (append (if o (list (thread (lambda () (pump o out)) #f 'results)) '())
                             (if e (list (thread (lambda () (pump e err)) #f 'results)) '()))])
          (for-each thread-wait pumps)
          (subprocess-wait p)
          (subprocess-status p)))))

  ;; (system* command arg ...) -> #t if it exited with 0.
  (define (system* command . args)
    (fx= 0 (run/current-ports 'system* command args)))

  (define (system*/exit-code command . args)
    (run/current-ports 'system*/exit-code command args))

  ;; (shell-command/exit-code string): through /bin/sh -c, explicitly.
  (define (shell-command/exit-code cmd)
    (unless (string? cmd) (assertion-violation 'shell-command/exit-code "expected a string" cmd))
    (run/current-ports 'shell-command/exit-code "/bin/sh" (list "-c" cmd)))

  ;; (process* command arg ...) -> (list stdout-in stdin-out pid stderr-in control)
  ;; control accepts 'status ('running, 'done-ok or 'done-error),
  ;; 'exit-code (#f while running), 'wait, 'interrupt, 'kill, as Racket's.
  (define (process* command . args)
    (let-values ([(p o i e) (apply subprocess #f #f #f (resolve 'process* command) args)])
      (list o i (subprocess-pid p) e
            (lambda (msg)
              (case msg
                [(status) (let ([s (subprocess-status p)])
                            (cond [(eq? s 'running) 'running] [(fx= s 0) 'done-ok] [else 'done-error]))]
                [(exit-code) (let ([s (subprocess-status p)]) (and (fixnum? s) s))]
                [(wait) (subprocess-wait p)]
                [(interrupt) (subprocess-kill p #f)]
                [(kill) (subprocess-kill p #t)]
                [(subprocess) p]
                [else (assertion-violation 'process* "unknown control message" msg)])))))

  ;; (run-command command arg ...) -> (values exit-code stdout-string):
  ;; stdin is /dev/null-like (closed at once), stdout is collected as
  ;; UTF-8, stderr goes to the current error port.
  (define (run-command command . args)
    (let* ([path (resolve 'run-command command)] [err (current-error-port)] [err-fd (port-descriptor err)])
      (flush-output-port err)
      (let-values ([(p o i e) (apply subprocess #f #f (and err-fd err) path args)])
        (close-port i)
        (let* ([pump-err (and e (thread (lambda () (pump e err)) #f 'results))]
               [bytes (get-bytevector-all o)])
          (close-port o)
          (when pump-err (thread-wait pump-err))
          (subprocess-wait p)
          (values (subprocess-status p) (if (eof-object? bytes) "" (utf8->string bytes))))))))
