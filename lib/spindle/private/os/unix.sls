#!chezscheme
;;; libc for places: descriptors, Unix sockets with descriptor passing,
;;; epoll's event bits (the poller is (spindle private io poller)), shared
;;; memory, processes.  Layouts are those of x86-64 and
;;; aarch64 Linux with glibc (64-bit pointers and size_t).
;;;
;;; errno is read right after the failing call, before anything else can
;;; allocate, with interrupts disabled (a collection could overwrite it).
(library (spindle private os unix)
  (export malloc free memcpy-to-bytevector! memcpy-from-bytevector! memmove!
          close-fd make-socket-pair set-nonblocking!
          send-frame-chunk recv-chunk max-fds-per-message
          epoll-in epoll-out epoll-hangup-mask
          make-memfd map-shared unmap
          spawn-program spawn-process pidfd-open pidfd-signal wait-exit-code own-pid parent-pid
          die-with-parent! fork-process poll-readable change-directory self-executable
          signal-number signal-break-kind signals->descriptor read-signal make-pipe write-octet read-octet exit-process block-place-signals! place-signals
          descriptor-inode shell-command c-string)
  (import (chezscheme))

  (define libc-loaded (begin (load-shared-object "libc.so.6") #t))

  (define malloc (foreign-procedure "malloc" (size_t) uptr))
  (define free (foreign-procedure "free" (uptr) void))
  (define c-memcpy-to (foreign-procedure "memcpy" (u8* uptr size_t) uptr))
  (define c-memcpy-from (foreign-procedure "memcpy" (uptr u8* size_t) uptr))
  (define c-memmove (foreign-procedure "memmove" (uptr uptr size_t) uptr))
  (define c-close (foreign-procedure "close" (int) int))
  (define c-socketpair (foreign-procedure "socketpair" (int int int uptr) int))
  (define c-fcntl (foreign-procedure "fcntl" (int int int) int))
  (define c-sendmsg (foreign-procedure "sendmsg" (int uptr int) ssize_t))
  (define c-recvmsg (foreign-procedure "recvmsg" (int uptr int) ssize_t))
  (define c-errno-location (foreign-procedure "__errno_location" () uptr))
  (define c-memfd-create (foreign-procedure "memfd_create" (string unsigned) int))
  (define c-ftruncate (foreign-procedure "ftruncate" (int long) int))
  (define c-mmap (foreign-procedure "mmap" (uptr size_t int int int long) uptr))
  (define c-munmap (foreign-procedure "munmap" (uptr size_t) int))
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
  (define c-getpid (foreign-procedure "getpid" () int))
  (define c-getppid (foreign-procedure "getppid" () int))
  (define c-prctl (foreign-procedure "prctl" (int unsigned-long unsigned-long unsigned-long unsigned-long) int))
  (define c-fork (foreign-procedure "fork" () int))
  (define c-poll (foreign-procedure "poll" (uptr unsigned-long int) int))
  (define c-chdir (foreign-procedure "chdir" (string) int))
  (define c-readlink (foreign-procedure "readlink" (string u8* size_t) ssize_t))
  (define environ-address (foreign-entry "environ"))
  (define c-sigemptyset (foreign-procedure "sigemptyset" (uptr) int))
  (define c-sigaddset (foreign-procedure "sigaddset" (uptr int) int))
  (define c-sigprocmask (foreign-procedure "sigprocmask" (int uptr uptr) int))
  (define c-signalfd (foreign-procedure "signalfd" (int uptr int) int))
  (define c-read (foreign-procedure "read" (int uptr size_t) ssize_t))
  (define c-write (foreign-procedure "write" (int uptr size_t) ssize_t))
  (define c-pipe2 (foreign-procedure "pipe2" (uptr int) int))
  (define c-exit (foreign-procedure "_exit" (int) void))
  (define c-fstat (foreign-procedure "fstat" (int uptr) int))
  (define c-system (foreign-procedure __collect_safe "system" (uptr) int))

  (define (errno) (foreign-ref 'int (c-errno-location) 0))
  (define eagain 11)
  (define eintr 4)

  (define (memcpy-to-bytevector! bv addr n) (c-memcpy-to bv addr n) (void))
  (define (memmove! to from n) (c-memmove to from n) (void))
  (define (memcpy-from-bytevector! addr bv n) (c-memcpy-from addr bv n) (void))

  (define (close-fd fd) (c-close fd) (void))

  ;; Two connected stream sockets, close-on-exec, blocking.
  (define (make-socket-pair who)
    (let ([sv (malloc 8)])
      (let ([r (c-socketpair 1 (fxior 1 #x80000) 0 sv)]) ; AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC
        (let ([a (foreign-ref 'int sv 0)] [b (foreign-ref 'int sv 4)])
          (free sv)
          (unless (eqv? r 0) (error who "socketpair failed (out of descriptors?)"))
          (values a b)))))

  (define (set-nonblocking! fd)
    (let ([flags (c-fcntl fd 3 0)])                  ; F_GETFL
      (c-fcntl fd 4 (fxior flags #x800))             ; F_SETFL O_NONBLOCK
      (void)))

  ;; ---------------------------------------------------------------- messages
  ;; SCM_MAX_FD in Linux is 253.
  (define max-fds-per-message 253)
  (define control-space (+ 16 (* 4 max-fds-per-message) 4))

  ;; One scratch msghdr + iovec + control buffer per OS thread.  Thread
  ;; parameters are inherited by fork-thread, so the area is believed only
  ;; on the OS thread that made it.
  (define scratch (make-thread-parameter #f))
  (define (scratch-area)
    (let ([s (scratch)])
      (if (and s (fx= (car s) (get-thread-id)))
          (cdr s)
          (let ([a (malloc (+ 56 16 control-space))])
            (scratch (cons (get-thread-id) a))
            a))))

  (define (fill-msghdr! a buf len control controllen)
    (let ([iov (+ a 56)])
      (foreign-set! 'uptr iov 0 buf)
      (foreign-set! 'size_t iov 8 len)
      (foreign-set! 'uptr a 0 0)
      (foreign-set! 'unsigned-32 a 8 0)
      (foreign-set! 'uptr a 16 iov)
      (foreign-set! 'size_t a 24 1)
      (foreign-set! 'uptr a 32 control)
      (foreign-set! 'size_t a 40 controllen)
      (foreign-set! 'int a 48 0)))

  ;; Sends up to len bytes at address buf, with the descriptors fds (a list,
  ;; sent only if non-empty).  Never blocks when fd is non-blocking.
  ;; Returns the count sent, 'again, or 'closed (the peer is gone).
  (define (send-frame-chunk fd buf len fds)
    (with-interrupts-disabled
      (let* ([a (scratch-area)] [control (+ a 72)] [n (length fds)])
        (if (null? fds)
            (fill-msghdr! a buf len 0 0)
            (let ([clen (+ 16 (* 4 n))])
              (foreign-set! 'size_t control 0 clen)
              (foreign-set! 'int control 8 1)        ; SOL_SOCKET
              (foreign-set! 'int control 12 1)       ; SCM_RIGHTS
              (let loop ([fds fds] [i 0])
                (unless (null? fds)
                  (foreign-set! 'int control (+ 16 (* 4 i)) (car fds))
                  (loop (cdr fds) (fx+ i 1))))
              (fill-msghdr! a buf len control (fxand (fx+ clen 7) (fxnot 7)))))
        (let retry ()
          (let ([r (c-sendmsg fd a #x4000)])         ; MSG_NOSIGNAL
            (if (fx>= r 0)
                r
                (let ([e (errno)])
                  (cond [(fx= e eintr) (retry)]
                        [(fx= e eagain) 'again]
                        [else 'closed]))))))))

  ;; Receives up to len bytes into address buf.  Returns two values: the
  ;; count (0 means the peer closed), 'again or 'closed; and the list of
  ;; descriptors that came with the bytes.
  (define (recv-chunk fd buf len)
    (with-interrupts-disabled
      (let* ([a (scratch-area)] [control (+ a 72)])
        (fill-msghdr! a buf len control control-space)
        (let retry ()
          (let ([r (c-recvmsg fd a #x40000000)])    ; MSG_CMSG_CLOEXEC
            (cond
              [(fx>= r 0) (values r (collect-fds a control))]
              [else
               (let ([e (errno)])
                 (cond [(fx= e eintr) (retry)]
                       [(fx= e eagain) (values 'again '())]
                       [else (values 'closed '())]))]))))))

  (define (collect-fds a control)
    (let ([total (foreign-ref 'size_t a 40)])
      (let loop ([off 0] [acc '()])
        (if (fx> (fx+ off 16) total)
            (reverse acc)
            (let* ([clen (foreign-ref 'size_t control off)]
                   [level (foreign-ref 'int control (fx+ off 8))]
                   [type (foreign-ref 'int control (fx+ off 12))])
              (if (fx< clen 16)
                  (reverse acc)
                  (loop (fx+ off (fxand (fx+ clen 7) (fxnot 7)))
                        (if (and (fx= level 1) (fx= type 1))
                            (let fds ([i 0] [acc acc])
                              (if (fx< i (fxquotient (fx- clen 16) 4))
                                  (fds (fx+ i 1) (cons (foreign-ref 'int control (fx+ off 16 (fx* 4 i))) acc))
                                  acc))
                            acc))))))))

  ;; ---------------------------------------------------------------- epoll
  (define epoll-in 1)
  (define epoll-out 4)
  (define epoll-hangup-mask (fxior 8 #x10))          ; EPOLLERR | EPOLLHUP

  ;; ---------------------------------------------------------------- shared memory
  (define (make-memfd who size)
    (let ([fd (c-memfd-create "spindle-shared" 1)])   ; MFD_CLOEXEC
      (when (fx< fd 0) (error who "memfd_create failed"))
      (unless (eqv? 0 (c-ftruncate fd (max size 1)))
        (c-close fd)
        (error who "cannot size shared memory" size))
      fd))

  (define (map-shared who fd size)
    (let ([a (c-mmap 0 (max size 1) 3 1 fd 0)])       ; PROT_READ|PROT_WRITE, MAP_SHARED
      (when (= a (- (expt 2 64) 1)) (error who "mmap failed" size))
      a))

  (define (unmap addr size) (c-munmap addr (max size 1)) (void))

  ;; ---------------------------------------------------------------- processes
  ;; A NUL-terminated UTF-8 copy of str in C memory; free it.
  (define (c-string str)
    (let* ([bv (string->utf8 str)] [n (bytevector-length bv)] [s (malloc (+ n 1))])
      (memcpy-from-bytevector! s bv n)
      (foreign-set! 'unsigned-8 s n 0)
      s))

  (define (c-strings lst)
    (let ([v (malloc (* 8 (+ 1 (length lst))))])
      (let loop ([l lst] [i 0] [owned '()])
        (if (null? l)
            (begin (foreign-set! 'uptr v (* 8 i) 0) (values v owned))
            (let ([s (c-string (car l))])
              (foreign-set! 'uptr v (* 8 i) s)
              (loop (cdr l) (+ i 1) (cons s owned)))))))

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
  (define sigset-size 128)
  (define spawn-setsigdef #x04)            ; POSIX_SPAWN_SETSIGDEF
  (define spawn-setsigmask #x08)           ; POSIX_SPAWN_SETSIGMASK

  ;; Starts path with argv (a list of strings; the environment is this
  ;; process's).  actions: (target . source) pairs applied in order, source
  ;; a descriptor to dup2 onto target or 'null for /dev/null (read-only on
  ;; 0, write-only elsewhere).  Descriptors above the highest target are
  ;; closed.  Returns the pid, or minus the errno when it cannot start.
  (define (spawn-program path argv actions)
    (let ([fa (malloc file-actions-size)] [attr (malloc attr-size)]
          [empty (malloc sigset-size)] [all (malloc sigset-size)]
          [pidp (malloc 8)] [cpath (c-string path)] [null (c-string "/dev/null")])
      (c-fa-init fa)
      (for-each (lambda (a)
                  (if (eq? (cdr a) 'null)
                      (c-fa-open fa (car a) null (if (fx= (car a) 0) 0 1) 0)   ; O_RDONLY / O_WRONLY
                      (c-fa-dup2 fa (cdr a) (car a))))
                actions)
      (close-others! fa (fx+ 1 (fold-left (lambda (m a) (fxmax m (car a))) 2 actions)))
      (c-attr-init attr)
      (c-sigemptyset empty)
      (c-sigemptyset all)
      ;; every signal, glibc's internal 32 and 33 included (sigaddset
      ;; refuses those; posix_spawn otherwise leaves them ignored)
      (foreign-set! 'unsigned-64 all 0 #xffffffffffffffff)
      (c-attr-setsigmask attr empty)
      (c-attr-setsigdefault attr all)
      (c-attr-setflags attr (fxior spawn-setsigdef spawn-setsigmask))
      (let-values ([(args owned) (c-strings argv)])
        (let* ([r (c-spawn pidp cpath fa attr args (foreign-ref 'uptr environ-address 0))]
               [pid (foreign-ref 'int pidp 0)])
          (c-fa-destroy fa)
          (c-attr-destroy attr)
          (for-each free owned)
          (for-each free (list args fa attr empty all pidp cpath null))
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
    (let ([st (malloc 8)])
      (let retry ()
        (let ([r (c-waitpid pid st 0)])
          (if (and (fx< r 0) (fx= (errno) eintr))
              (retry)
              (let ([s (foreign-ref 'int st 0)])
                (free st)
                (if (fx= (fxand s #x7f) 0) (fxand (fxsra s 8) #xff) 1)))))))

  (define (own-pid) (c-getpid))
  (define (parent-pid) (c-getppid))
  (define (die-with-parent!) (c-prctl 1 9 0 0 0) (void))  ; PR_SET_PDEATHSIG, SIGKILL
  (define (fork-process) (c-fork))

  ;; Blocks until one of fds is readable (or hung up); returns those fds.
  (define (poll-readable fds)
    (let* ([n (length fds)] [a (malloc (max 8 (* 8 n)))])
      (let loop ([l fds] [i 0])
        (unless (null? l)
          (foreign-set! 'int a (* 8 i) (car l))
          (foreign-set! 'short a (+ (* 8 i) 4) 1)    ; POLLIN
          (foreign-set! 'short a (+ (* 8 i) 6) 0)
          (loop (cdr l) (+ i 1))))
      (c-poll a n -1)
      (let loop ([l fds] [i 0] [acc '()])
        (if (null? l)
            (begin (free a) (reverse acc))
            (loop (cdr l) (+ i 1)
                  (if (fx= 0 (foreign-ref 'short a (+ (* 8 i) 6))) acc (cons (car l) acc)))))))

  (define (change-directory dir) (eqv? 0 (c-chdir dir)))

  (define (self-executable)
    (let* ([bv (make-bytevector 4096)] [n (c-readlink "/proc/self/exe" bv 4096)])
      (and (fx> n 0) (utf8->string (bytevector-copy-prefix bv n)))))
  (define (bytevector-copy-prefix bv n)
    (let ([r (make-bytevector n)]) (bytevector-copy! bv 0 r 0 n) r))

  ;; The signals of place-break: SIGHUP, SIGINT, SIGTERM.
  (define place-signals '(1 2 15))

  (define (signal-set signos)
    (let ([set (malloc 128)])
      (c-sigemptyset set)
      (for-each (lambda (n) (c-sigaddset set n)) signos)
      set))

  ;; Blocks them in this thread and the threads and processes it will
  ;; start: they stay pending until a signalfd reads them.
  (define (block-place-signals!)
    (let ([set (signal-set place-signals)])
      (c-sigprocmask 0 set 0)                        ; SIG_BLOCK
      (free set)))

  ;; Returns a non-blocking descriptor that reads the (blocked) signals:
  ;; they then reach the process even while every thread sleeps outside
  ;; Scheme, and one sent before the descriptor existed is not lost.
  (define (signals->descriptor signos)
    (let ([set (signal-set signos)])
      (c-sigprocmask 0 set 0)                        ; SIG_BLOCK
      (let ([fd (c-signalfd -1 set (fxior #x800 #x80000))]) ; SFD_NONBLOCK | SFD_CLOEXEC
        (free set)
        fd)))

  ;; Ends the process now, from any thread (Chez's exit may end only the
  ;; calling thread when that is not the main one).
  (define (exit-process code) (c-exit code))

  ;; The number of the next pending signal on a signalfd, or #f.
  (define (read-signal fd)
    (let* ([info (malloc 128)] [r (c-read fd info 128)])
      (let ([signo (and (eqv? r 128) (foreign-ref 'unsigned-32 info 0))])
        (free info)
        signo)))

  ;; A pipe (read end, write end), close-on-exec.
  (define (make-pipe who)
    (let ([fds (malloc 8)])
      (let* ([r (c-pipe2 fds #x80000)] [a (foreign-ref 'int fds 0)] [b (foreign-ref 'int fds 4)])
        (free fds)
        (unless (eqv? r 0) (error who "pipe failed"))
        (values a b))))

  (define (write-octet fd b)
    (let ([buf (malloc 1)])
      (foreign-set! 'unsigned-8 buf 0 b)
      (c-write fd buf 1)
      (free buf)
      (void)))

  ;; The next byte, or #f at end of file or on error.
  (define (read-octet fd)
    (let* ([buf (malloc 1)] [r (c-read fd buf 1)] [b (and (eqv? r 1) (foreign-ref 'unsigned-8 buf 0))])
      (free buf)
      b))

  ;; The inode of what fd refers to: two descriptors of one socket share it.
  (define (descriptor-inode fd)
    (let* ([st (malloc 256)] [r (c-fstat fd st)] [ino (and (eqv? r 0) (foreign-ref 'unsigned-64 st 8))])
      (free st)
      ino))

  (define (signal-number kind)
    (case kind [(#f) 2] [(hang-up) 1] [(terminate) 15] [(kill) 9] [else #f]))

  ;; The break kind of one of place-signals.
  (define (signal-break-kind signo)
    (case signo [(1) 'hang-up] [(15) 'terminate] [else #f]))

  ;; Chez 9.5.8's own `system` lets other threads collect while libc still
  ;; reads the command from the Scheme heap: the string can move, and the
  ;; shell then runs garbage (exit 2 or 127; seen in CI).  This passes a copy
  ;; in C memory.  Returns the exit code, or minus the signal that ended it.
  (define (shell-command cmd)
    (unless (string? cmd) (assertion-violation 'shell-command "not a string" cmd))
    (let ([p (c-string cmd)])
      (let ([status (c-system p)])
        (free p)
        (cond
          [(= status -1) -1]
          [(fxzero? (fxand status #x7f)) (fxand (fxsrl status 8) #xff)]
          [else (fx- 0 (fxand status #x7f))]))))
)
