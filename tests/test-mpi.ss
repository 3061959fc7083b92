#!chezscheme
;;; (spindle mpi) and `spindle mpirun`: jobs of 1 to 4 ranks on this machine
;;; (tests/support/mpi/mpi-child.ss runs each scenario).  make test installs Open
;;; MPI (the Makefile's mpi target); without it these tests are skipped
;;; with a message.
;;; time limit: 480 s
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness) (only (text-files) read-file)
        (only (spindle private os processes) shell-command own-pid) (mpi-jobs))

(test-limit 120)

(if (not have-mpi?)
    (begin
      (printf "skipped: Open MPI is not installed (make test installs openmpi-bin and libopenmpi-dev with apt-get; it failed)\n")
      (unless (eqv? 0 (shell-command "command -v mpirun >/dev/null 2>&1"))
        (test "spindle mpirun says clearly that mpirun is missing"
          (check-equal "exit code" 127
            (shell-command (format "bin/spindle mpirun -np 2 tests/support/mpi/mpi-child.ss x >~a/out 2>&1" work)))
          (check "the message names mpirun" (contains? (read-file (format "~a/out" work)) "mpirun not found")))))
    (begin
      (test "1, 2, 3 and 4 ranks over shared memory (btl self,vader) and over TCP (btl tcp,self): every collective against a sequential computation"
        (for-each
          (lambda (btl)
            (for-each
              (lambda (np)
                (let-values ([(rc text secs) (mpirun/env (format "OMPI_MCA_btl=~a" btl) np 60 "collectives" np)])
                  (check-run (format "~a ranks over ~a: exit code" np btl) rc text np "collectives")))
              '(1 2 3 4)))
          '("self,vader" "tcp,self")))

      (test "10^5 messages between two ranks, in order and exactly once (and a second tag's stream), over shared memory and over TCP"
        (check-over-transports 90 "stream" 100000))

      (test "rmpi-recv of one stream by four parallel threads at once (one from any source, one through the evt): 2000 bytevectors, most over 64 KiB (a header, then the bytes), each received exactly once and intact, none taking another's bytes; over shared memory and over TCP"
        (check-over-transports 90 "receivers" 2000))

      (test "values over 64 KiB (encoded, and bytevectors) between small ones arrive intact and in order, through rmpi-recv from a rank and from any, and through the evt; over shared memory and over TCP"
        (check-over-transports 60 "large-values"))

      (test "10^5 in-place messages (rmpi-send-bytes, rmpi-recv-bytes! into one buffer) between two ranks, in order and exactly once, beside rmpi-send's stream on the same tag and a second tag's, over shared memory and over TCP"
        (check-over-transports 90 "bytes-stream" 100000))

      (test "in-place receives: a buffer too small raises naming rmpi-recv-bytes! (and a large message writes nothing past the range); into shared vectors (1 MiB too); a thread parked on one while another counts; sync choosing between one and an alarm; a thread killed while parked loses no message"
        (let-values ([(rc text secs) (mpirun 2 60 "bytes-misc")])
          (check-run "exit code" rc text 2 "bytes-misc")))

      (test "in-place receives of one stream by several threads at once (from rank 0 and from any source; one through the evt): 2000 messages of distinct sizes, most of them large, each received exactly once and intact; receives posted in a known order, the first one's thread suspended during its spin, get the large messages in that order (none takes another's bytes); over shared memory and over TCP"
        (check-over-transports 90 "bytes-receivers" 2000 4))

      (test "in-place data tags repeat every 65536 large messages of a stream: a receive whose header shares its data tag with an earlier message's still held (by a suspended receiver) waits for it, not taking its bytes; if that receiver is killed instead, the waiting receive takes the older message and the next receive the later"
        (for-each
          (lambda (how)
            (let-values ([(rc text secs) (mpirun 2 90 "bytes-wrap" how)])
              (check-run (format "~a: exit code" how) rc text 2 "bytes-wrap")))
          '("resume" "kill")))

      (test "a thread broken 0 to 80 us after posting an in-place receive (while it spins, as the message completes, or after): the message is received exactly once, by it or by the next receive; a broken small receive leaves its buffer unwritten, or holding that very message if it completed as the break came"
        (let-values ([(rc text secs) (mpirun 2 90 "bytes-break" 400)])
          (check-run "exit code" rc text 2 "bytes-break")))

      (test "several hosts on one machine: 3 network namespaces joined by a bridge, 2, 2 and 1 ranks, launched through ip netns exec (or one host if the sandbox refuses)"
        (let* ([name (format "spt~a" (own-pid))]
               [log (format "~a/netns.out" work)]
               [up? (eqv? 0 (shell-command (format "tests/support/mpi/netns.sh up ~a 3 >~a 2>&1" name log)))])
          (define (run scenario . args)
            (let ([out (format "~a/hosts.out" work)])
              (let ([rc (shell-command
                          (format "SPINDLE_NETNS_NP=5 SPINDLE_NETNS_HOSTS=10.77.0.1:2,10.77.0.2:2,10.77.0.3:1 timeout -k 5 60 tests/support/mpi/netns.sh run ~a 3 tests/support/mpi/mpi-child.ss ~a ~a >~a 2>&1"
                                  name scenario (apply string-append (map (lambda (a) (format " ~a" a)) args)) out))])
                (values rc (read-file out)))))
          (if up?
              (begin
                ;; "hosts 3": the ranks are on 3 hosts; then every collective
                (let-values ([(rc text) (run "hosts" 3 5)])
                  (check-run "hosts: exit code" rc text 5 "hosts")
                  (check-ok 5 text "collectives"))
                (shell-command (format "tests/support/mpi/netns.sh down ~a" name))
                (check-equal "the namespaces are removed" 0
                  (shell-command (format "test -z \"$(ip netns list | grep '^~a-')\"" name))))
              (begin
                (printf "  network namespaces refused (~a): falling back to one host\n" (read-file log))
                (let-values ([(rc text secs) (mpirun 5 60 "collectives" 5)])
                  (check-equal "collectives on one host: exit code" 0 rc)
                  (check-ok 5 text "collectives"))))))

      (test "two threads of each rank split two different communicators at once, 20 times, in opposite orders at even and odd ranks: no deadlock (the blocking MPI_Comm_split runs on a helper OS thread, not under the engine lock); 2 and 4 ranks"
        (for-each
          (lambda (np)
            (let-values ([(rc text secs) (mpirun np 60 "split-threads" 20)])
              (check-run (format "~a ranks: exit code" np) rc text np "split-threads")))
          '(2 4)))

      (test "reductions whose operands are fixnums at some ranks and flonums (or ratnums, vectors of exact 0s, fxvectors) at others, and sums past the fixnums: the general path's result at every rank, not garbage or a hang; 1 to 3 ranks"
        (for-each
          (lambda (np)
            (let-values ([(rc text secs) (mpirun np 60 "mixed-reduce")])
              (check-run (format "~a ranks: exit code" np) rc text np "mixed-reduce")))
          '(1 2 3)))

      (test "in-place messages from a parallel thread started after the main thread used MPI (its OS thread inherits the main thread's thread parameters) while the main thread ping-pongs: 20000 each way, in order, intact (they shared scratch memory: wrong bytes)"
        (let-values ([(rc text secs) (mpirun 2 60 "scratch-threads" 20000 "bytes")])
          (check-run "exit code" rc text 2 "scratch-threads")))

      (test "the same with rmpi-send and rmpi-recv (the engine's per-OS-thread area and send buffer were shared: invalid memory references, invalid requests)"
        (let-values ([(rc text secs) (mpirun 2 60 "scratch-threads" 20000 "recv")])
          (check-run "exit code" rc text 2 "scratch-threads")))

      (test "rmpi-recv in a parallel thread broken 0 to 80 us in, 300 rounds of small, 3 KB and 70 KB messages: each message received once, by the thread or by the next receive"
        (let-values ([(rc text secs) (mpirun 2 90 "recv-break" 300 "own")])
          (check-run "exit code" rc text 2 "recv-break")))

      (test "receive evts in choices with alarms, 10000 messages, and two racing receivers on a second tag: every message once and in order per thread (a message a lost sync gave back was overtaken by the progress thread's, under load)"
        (let-values ([(rc text secs) (mpirun 2 120 "choice-stress" 10000)])
          (check-run "exit code" rc text 2 "choice-stress")))

      (test "rmpi-finish while other threads are parked in a receive, sync on receive evts, or send: each ends with an error naming its procedure, the parked receive too (it called MPI_Improbe after MPI_Finalize, aborting the job, or stayed parked)"
        (let-values ([(rc text secs) (mpirun 2 60 "finish-busy")])
          (check-run "exit code" rc text 2 "finish-busy")
          (check "the parked receiver raised" (string-contains? text "parked receiver: raised"))))

      (test "a rank's first wait is a thread's under a custodian then shut down: another thread parked on a receive meanwhile still gets its message (the progress thread is not the custodian's), and the killed thread's message is the next receive's"
        (let-values ([(rc text secs) (mpirun 2 60 "custodian")])
          (check-run "exit code" rc text 2 "custodian")))

      (test "a thread waiting in a collective (allreduce, barrier, broadcast of a packed bytevector: a size then the bytes, typed allgather) is broken or killed before the other ranks arrive: the collective completes, later ones match and give the right results (a broken broadcast left the rank one operation behind: heap corruption); 2 and 3 ranks"
        (for-each
          (lambda (np)
            (let-values ([(rc text secs) (mpirun np 60 "collective-break")])
              (check-run (format "~a ranks: exit code" np) rc text np "collective-break")))
          '(2 3)))

      (test "odd but legal arguments: empty messages, vectors and ranges, the largest user tag, messages to self (large ones too), a communicator of one rank, partitions of 0 and 10^20 items, any-source receives from every rank in per-source order; 3 ranks"
        (let-values ([(rc text secs) (mpirun 3 60 "odd")])
          (check-run "exit code" rc text 3 "odd")))

      (test "collectives on three communicators from three parallel threads of each rank at once (typed, general, broadcast, allgather, barrier) beside a point-to-point ring"
        (let-values ([(rc text secs) (mpirun 3 90 "parallel-collectives" 200 "own")])
          (check-run "exit code" rc text 3 "parallel-collectives")))

      (test "rmpi-send, rmpi-send-bytes, rmpi-broadcast and rmpi-allgather of 30 MB, intact"
        (let-values ([(rc text secs) (mpirun 2 90 "huge" 30)])
          (check-run "exit code" rc text 2 "huge")))

      (test "a thread parked on a receive while another thread counts; an idle receive does not spin"
        (let-values ([(rc text secs) (mpirun 2 60 "parked")])
          (check-run "exit code" rc text 2 "parked")))

      (test "sync chooses among an MPI receive, a place channel and an alarm; the loser loses no message"
        (let-values ([(rc text secs) (mpirun 2 60 "choice")])
          (check-run "exit code" rc text 2 "choice")))

      (test "places inside a rank: they start and answer; a place that calls rmpi-world is refused"
        (let-values ([(rc text secs) (mpirun 2 90 "places")])
          (check-run "exit code" rc text 2 "places")))

      (test "two ranks send each other 1 MiB messages before receiving: no deadlock; a bytevector changed after rmpi-send returns arrives as sent"
        (let-values ([(rc text secs) (mpirun 2 60 "exchange")])
          (check-run "exit code" rc text 2 "exchange")))

      (test "a thread broken right after its 4 MB send: the message still arrives intact"
        (let-values ([(rc text secs) (mpirun 2 60 "broken-sender")])
          (check-run "exit code" rc text 2 "broken-sender")))

      (test "errors name the procedure: bad rank, bad tag, not a communicator, a place channel, a 2 GiB message, bad collective arguments, bad in-place buffers and ranges; a receive, send (in place too) or collective after rmpi-finish"
        (let-values ([(rc text secs) (mpirun 2 60 "errors")])
          (check-run "exit code" rc text 2 "errors")))

      (test "rmpi-world outside mpirun says how to start the program"
        (let ([out (format "~a/plain.out" work)])
          (check "the program fails"
            (not (eqv? 0 (shell-command (format "timeout 60 bin/spindle run tests/support/mpi/mpi-child.ss collectives 1 >~a 2>&1" out)))))
          (check "the message names rmpi-world and spindle mpirun"
            (let ([text (read-file out)]) (and (contains? text "rmpi-world") (contains? text "spindle mpirun"))))))

      (test "a rank that raises ends the job within 10 s with an error naming the rank; no process is left"
        (let-values ([(rc text secs) (mpirun 3 60 "raise" work)])
          (check "the job failed" (not (eqv? rc 0)))
          (check "within 10 s" (< secs 10))
          (check "the error is printed" (contains? text "deliberate failure"))
          (check "the failed rank is named" (contains? text "rank 2 failed (an uncaught exception)"))
          (sleep 0.5)
          ;; the scenario's argument (this test's work directory) marks its processes
          ;; ([m] keeps the pattern from matching the shell that runs pgrep)
          (check-equal "no process left" 0
            (shell-command (format "test -z \"$(pgrep -f '[m]pi-child.ss raise ~a')\"" work)))))

      (test "a rank that exits with a non-zero code ends the job within 10 s, naming the rank and the code; no process is left"
        (let-values ([(rc text secs) (mpirun 3 60 "exit" work)])
          (check "the job failed" (not (eqv? rc 0)))
          (check "within 10 s" (< secs 10))
          (check "the rank and its exit code are named" (contains? text "rank 2 failed (exit code 3)"))
          (sleep 0.5)
          (check-equal "no process left" 0
            (shell-command (format "test -z \"$(pgrep -f '[m]pi-child.ss exit ~a')\"" work)))))

      (test "a killed rank ends the job within 10 s, naming the rank; no process is left"
        (let ([out (format "~a/killed.out" work)] [rc-file (format "~a/killed.rc" work)])
          (shell-command
            (format "{ timeout -k 5 60 bin/spindle mpirun -np 3 tests/support/mpi/mpi-child.ss idle ~a >~a 2>&1; echo $? >~a; } &"
                    work out rc-file))
          ;; rank 2's pid, once every rank is ready
          (let ([pid (let loop ([k 0])
                       (let ([text (if (file-exists? out) (read-file out) "")])
                         (cond
                           [(and (contains? text "rank 0: ready") (contains? text "rank 1: ready")
                                 (contains? text "rank 2: ready pid "))
                            (let ([p (open-string-input-port text)])
                              (let find ()
                                (let ([l (get-line p)])
                                  (cond
                                    [(eof-object? l) #f]
                                    [(contains? l "rank 2: ready pid ") (string->number (substring l 18 (string-length l)))]
                                    [else (find)]))))]
                           [(> k 600) #f]
                           [else (sleep 0.1) (loop (+ k 1))])))])
            (check "every rank got ready" pid)
            (when pid
              (let ([t0 (current-inexact-monotonic-milliseconds)])
                (shell-command (format "kill -9 ~a" pid))
                (let loop ()
                  (unless (or (file-exists? rc-file) (> (- (current-inexact-monotonic-milliseconds) t0) 15000))
                    (sleep 0.1) (loop)))
                (check "the job ended within 10 s" (< (- (current-inexact-monotonic-milliseconds) t0) 10000))
                (check "the job failed" (and (file-exists? rc-file) (not (string=? (read-file rc-file) "0\n"))))
                (check "the killed rank is named" (contains? (read-file out) "rank 2"))
                (sleep 0.5)
                (check-equal "no process left" 0
                  (shell-command (format "test -z \"$(pgrep -f '[m]pi-child.ss idle ~a')\"" work))))))))

      (test "pingpong of 8-byte messages (printed, not asserted)"
        (let-values ([(rc text secs) (mpirun 2 60 "pingpong" 500)])
          (check-equal "exit code" 0 rc)
          (let ([p (open-string-input-port text)])
            (let loop ()
              (let ([l (get-line p)])
                (unless (eof-object? l)
                  (when (contains? l "round trip") (printf "  ~a\n" l))
                  (loop)))))
          (check-ok 2 text "pingpong")))))

(shell-command (format "rm -rf ~a" work))
(done)
