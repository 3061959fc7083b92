#!chezscheme
;;; libc for processes: starting programs (posix_spawn), pidfds,
;;; reaping, signalling, this process's identity, directory and stack
;;; limit, ending the process, and C exit hooks.
(library (spindle private os processes)
  (export spawn-program spawn-process pidfd-open pidfd-signal wait-exit-code try-reap
          exited-status? exit-status-code status-signal send-signal executable-file?
          own-pid mark-mpi-rank! mpi-rank-process? parent-pid process-ended? die-with-parent! fork-process change-directory self-executable
          stack-limit exit-process os-exit register-c-exit-entry! shell-command)
  (import (chezscheme) (spindle private os libc)
          (only (spindle private os memory) c-string c-strings)
          (only (spindle private os descriptors) o-rdonly o-wronly)
          (only (spindle private os signals) sigkill fill-signal-set! signal-set-size))

  (define loaded libc-loaded)   ; libc is loaded before the bindings below

  (define c-spawn (foreign-procedure "posix_spawn" (uptr uptr uptr uptr uptr uptr) int))
  (define c-fa-init (foreign-procedure "posix_spawn_file_actions_init" (uptr) int))
  (define c-fa-destroy (foreign-procedure "posix_spawn_file_actions_destroy" (uptr) int))
  (define c-fa-dup2 (foreign-procedure "posix_spawn_file_actions_adddup2" (uptr int int) int))
  (define c-fa-open (foreign-procedure "posix_spawn_file_actions_addopen" (uptr int uptr int int) int))
  (define c-fa-close (foreign-procedure "posix_spawn_file_actions_addclose" (uptr int) int))
  (define c-fa-closefrom
    (and (foreign-entry? "posix_spawn_file_actions_addclosefrom_np")   ; glibc 2.34
         (foreign-procedure "posix_spawn_file_actions_addclosefrom_np" (uptr int) int)))
  (define c-attr-init (foreign-procedure "posix_spawnattr_init" (uptr) int))
  (define c-attr-destroy (foreign-procedure "posix_spawnattr_destroy" (uptr) int))
  (define c-attr-setflags (foreign-procedure "posix_spawnattr_setflags" (uptr short) int))
  (define c-attr-setsigmask (foreign-procedure "posix_spawnattr_setsigmask" (uptr uptr) int))
  (define c-attr-setsigdefault (foreign-procedure "posix_spawnattr_setsigdefault" (uptr uptr) int))
  (define c-pidfd-open (foreign-procedure "pidfd_open" (int unsigned) int))
  (define c-pidfd-signal (foreign-procedure "pidfd_send_signal" (int int uptr unsigned) int))
  (define c-waitpid (foreign-procedure "waitpid" (int uptr int) int))
  (define c-kill (foreign-procedure "kill" (int int) int))
  (define c-access (foreign-procedure "access" (string int) int))
  (define c-open (foreign-procedure "open" (string int) int))
  (define c-read (foreign-procedure "read" (int u8* size_t) ssize_t))
  (define c-close (foreign-procedure "close" (int) int))
  (define c-getpid (foreign-procedure "getpid" () int))
  (define c-getppid (foreign-procedure "getppid" () int))
  (define c-prctl (foreign-procedure "prctl" (int unsigned-long unsigned-long unsigned-long unsigned-long) int))
  (define c-fork (foreign-procedure "fork" () int))
  (define c-chdir (foreign-procedure "chdir" (string) int))
  (define c-readlink (foreign-procedure "readlink" (string u8* size_t) ssize_t))
  (define c-getrlimit (foreign-procedure "getrlimit" (int u8*) int))
  (define c-exit (foreign-procedure "exit" (int) void))
  (define c-exit-now (foreign-procedure "_exit" (int) void))
  (define c-cxa-atexit (foreign-procedure "__cxa_atexit" (uptr uptr uptr) int))
  (define c-system (foreign-procedure __collect_safe "system" (uptr) int))
  (define environ-address (foreign-entry "environ"))

  (define wnohang 1)                  ; WNOHANG
  (define errno-noent 2)              ; ENOENT
  (define x-ok 1)                     ; access(2)'s X_OK
  (define pr-set-pdeathsig 1)         ; PR_SET_PDEATHSIG
  (define rlimit-stack 3)             ; RLIMIT_STACK
  (define rlim-infinity (- (expt 2 64) 1))

  ;; ---------------------------------------------------------------- wait statuses
  (define (exited-status? s) (fx= (fxand s #x7f) 0))     ; WIFEXITED
  (define (exit-status-code s) (fxand (fxsra s 8) #xff))  ; WEXITSTATUS
  (define (status-signal s) (fxand s #x7f))               ; WTERMSIG

  ;; ---------------------------------------------------------------- starting programs
  ;; What a child inherits: its descriptors 0, 1 and 2 (and any others
  ;; that `actions` name), default dispositions for every signal and an
  ;; empty signal mask, whatever this process ignores (SIGPIPE: Chez and
  ;; most runtimes) or blocks (a place blocks SIGHUP, SIGINT, SIGTERM for
  ;; its signalfd).  Every other descriptor is closed in the child by a
  ;; closefrom file action after the dup2s: descriptors this program
  ;; inherited or opened without close-on-exec (Chez's file ports and
  ;; open-process-ports pipes) never leak, without touching their flags
  ;; here.  posix_spawn is safe in a multithreaded process.
  ;;
  ;; Layouts (x86-64 and aarch64 glibc): posix_spawnattr_t 336 bytes,
  ;; posix_spawn_file_actions_t 80, sigset_t 128 (signal n is bit n-1).
  (define attr-size 336)
  (define file-actions-size 80)
  (define sigset-size signal-set-size)
  (define spawn-setsigdef #x04)            ; POSIX_SPAWN_SETSIGDEF
  (define spawn-setsigmask #x08)           ; POSIX_SPAWN_SETSIGMASK

  ;; Starts path with argv (a list of strings; the environment is this
  ;; process's).  actions: (target . source) pairs applied in order, source
  ;; a descriptor to dup2 onto target or 'null for /dev/null (read-only on
  ;; 0, write-only elsewhere).  Descriptors above the highest target are
  ;; closed.  Returns the pid, or minus the errno when it cannot start.
  (define (spawn-program path argv actions)
    (let ([fa (foreign-alloc file-actions-size)] [attr (foreign-alloc attr-size)]
          [empty (foreign-alloc sigset-size)] [all (foreign-alloc sigset-size)]
          [pidp (foreign-alloc 8)] [cpath (c-string path)] [null (c-string "/dev/null")])
      (c-fa-init fa)
      (for-each (lambda (a)
                  (if (eq? (cdr a) 'null)
                      (c-fa-open fa (car a) null (if (fx= (car a) 0) o-rdonly o-wronly) 0)
                      (c-fa-dup2 fa (cdr a) (car a))))
                actions)
      (close-others! fa (fx+ 1 (fold-left (lambda (m a) (fxmax m (car a))) 2 actions)))
      (c-attr-init attr)
      (fill-signal-set! empty '())
      ;; every signal, glibc's internal 32 and 33 included (sigaddset
      ;; refuses those; posix_spawn otherwise leaves them ignored)
      (fill-signal-set! all '())
      (foreign-set! 'unsigned-64 all 0 #xffffffffffffffff)
      (c-attr-setsigmask attr empty)
      (c-attr-setsigdefault attr all)
      (c-attr-setflags attr (fxior spawn-setsigdef spawn-setsigmask))
      (let-values ([(args owned) (c-strings argv)])
        (let* ([r (c-spawn pidp cpath fa attr args (foreign-ref 'uptr environ-address 0))]
               [pid (foreign-ref 'int pidp 0)])
          (c-fa-destroy fa)
          (c-attr-destroy attr)
          (for-each foreign-free owned)
          (for-each foreign-free (list args fa attr empty all pidp cpath null))
          (if (eqv? r 0) pid (fx- 0 r))))))

  ;; Closes descriptors from `from` on in the child.  Without
  ;; addclosefrom_np (glibc < 2.34), the descriptors open now are listed
  ;; (one opened by another OS thread meanwhile can leak).
  (define (close-others! fa from)
    (if c-fa-closefrom
        (c-fa-closefrom fa from)
        (for-each (lambda (fd) (when (fx>= fd from) (c-fa-close fa fd)))
                  (filter fixnum? (map string->number (directory-list "/proc/self/fd"))))))

  ;; Starts program with argv; its stdin is /dev/null and child-fd becomes
  ;; its descriptor 3 (stdout and stderr are this process's).
  (define (spawn-process who program argv child-fd)
    (let ([pid (spawn-program program argv (list (cons 0 'null) (cons 3 child-fd)))])
      (when (fx< pid 0) (error who "cannot start process" program))
      pid))

  (define (pidfd-open pid) (c-pidfd-open pid 0))
  (define (pidfd-signal pidfd signo) (c-pidfd-signal pidfd signo 0 0) (void))

  ;; Reaps pid (blocking); its exit code, or 1 if a signal ended it.
  (define (wait-exit-code pid)
    (let ([st (foreign-alloc 8)])
      (let retry ()
        (let ([r (c-waitpid pid st 0)])
          (if (and (fx< r 0) (fx= (errno) errno-intr))
              (retry)
              (let ([s (foreign-ref 'int st 0)])
                (foreign-free st)
                (if (exited-status? s) (exit-status-code s) 1)))))))

  (define (own-pid) (c-getpid))

  ;; A place of an MPI rank inherits the rank's environment, OMPI_*
  ;; included, and would take itself for that rank.  So the rank marks the
  ;; environment with its pid (mark-mpi-rank!, called as private/mpi/world and
  ;; fork-join's cg-backend load, before a place's template can start),
  ;; and only the process of that pid is the rank.
  (define (mark-mpi-rank!)
    (when (and (getenv "OMPI_COMM_WORLD_RANK") (not (getenv "SPINDLE_MPI_RANK_PID")))
      (putenv "SPINDLE_MPI_RANK_PID" (number->string (own-pid)))))
  (define (mpi-rank-process?)
    (and (getenv "OMPI_COMM_WORLD_RANK")
         (let ([owner (getenv "SPINDLE_MPI_RANK_PID")])
           (and owner (string=? owner (number->string (own-pid)))))
         #t))

  ;; #t if process pid (any process, not only a child) has ended: it is
  ;; gone, or a zombie nobody has reaped yet (state Z or X in
  ;; /proc/PID/stat, after the last parenthesis: the name may hold any).
  ;; #f while it runs, or when this cannot be told (out of descriptors).
  (define (process-ended? pid)
    (let ([fd (c-open (string-append "/proc/" (number->string pid) "/stat") o-rdonly)])
      (if (fx< fd 0)
          (fx= (errno) errno-noent)
          (let* ([bv (make-bytevector 512)] [n (c-read fd bv 512)])
            (c-close fd)
            (or (fx<= n 0)
                (let loop ([i (fx- n 1)])
                  (cond
                    [(fx< i 0) #f]
                    [(fx= (bytevector-u8-ref bv i) (char->integer #\)))
                     (and (fx< (fx+ i 2) n)
                          (memv (integer->char (bytevector-u8-ref bv (fx+ i 2))) '(#\Z #\X))
                          #t)]
                    [else (loop (fx- i 1))])))))))

  (define (parent-pid) (c-getppid))
  (define (die-with-parent!) (c-prctl pr-set-pdeathsig sigkill 0 0 0) (void))
  (define (fork-process) (c-fork))

  (define (send-signal pid signo) (c-kill pid signo) (void))

  ;; Reaps pid if it has ended, never blocking: (values pid status) once
  ;; reaped, (values 0 #f) while it runs, (values -1 #f) if it is not a
  ;; child of this process (any more).
  (define (try-reap pid)
    (let ([st (foreign-alloc 8)])
      (foreign-set! 'int st 0 0)
      (let* ([r (c-waitpid pid st wnohang)] [s (foreign-ref 'int st 0)])
        (foreign-free st)
        (values r (and (fx> r 0) s)))))

  (define (executable-file? path) (eqv? 0 (c-access path x-ok)))

  (define (change-directory dir) (eqv? 0 (c-chdir dir)))

  (define (self-executable)
    (let* ([bv (make-bytevector 4096)] [n (c-readlink "/proc/self/exe" bv 4096)])
      (and (fx> n 0) (utf8->string (let ([r (make-bytevector n)]) (bytevector-copy! bv 0 r 0 n) r)))))

  ;; The soft stack limit (RLIMIT_STACK) in bytes, or #f when unlimited.
  (define (stack-limit)
    (let ([rl (make-bytevector 16 0)])
      (c-getrlimit rlimit-stack rl)
      (let ([cur (bytevector-u64-native-ref rl 0)])
        (and (not (= cur rlim-infinity)) cur))))

  ;; Ends the process with code from any OS thread, after the C exit hooks
  ;; (atexit) have run in the calling thread.
  (define (os-exit code) (c-exit code))

  ;; Ends the process now, from any thread, running no exit hook (Chez's
  ;; exit may end only the calling thread when that is not the main one).
  (define (exit-process code) (c-exit-now code))

  ;; Registers the entry point of a locked foreign-callable taking one
  ;; uptr, to be called at exit; the last registered runs first.
  (define (register-c-exit-entry! entry) (c-cxa-atexit entry 0 0) (void))

  ;; Chez 9.5.8's own `system` lets other threads collect while libc still
  ;; reads the command from the Scheme heap: the string can move, and the
  ;; shell then runs garbage (exit 2 or 127; seen in CI).  This passes a copy
  ;; in C memory.  Returns the exit code, or minus the signal that ended it.
  (define (shell-command cmd)
    (unless (string? cmd) (assertion-violation 'shell-command "not a string" cmd))
    (let ([p (c-string cmd)])
      (let ([status (c-system p)])
        (foreign-free p)
        (cond
          [(= status -1) -1]
          [(exited-status? status) (exit-status-code status)]
          [else (fx- 0 (status-signal status))])))))
