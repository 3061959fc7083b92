#!chezscheme
;;; bin/spindle's compiled-object cache: built once per state of lib/, in a
;;; directory named after the sources, never half-built, and optional.
;;; Each test works on a copy of bin/ and lib/ and a cache of its own.
(import (chezscheme) (harness) (text-files)
        (only (spindle private os processes) own-pid shell-command))

(test-limit 120)

(define work (format "/tmp/spindle-test-tooling-~a" (own-pid)))

(define (sh fmt . args)
  (shell-command (string-append "set -e; " (apply format fmt args))))

(define (first-line file) (let ([ls (read-lines file)]) (and (pair? ls) (car ls))))

(define (string-prefix? prefix s)
  (let ([k (string-length prefix)])
    (and (>= (string-length s) k) (string=? (substring s 0 k) prefix))))

;; The entries of dir (names), sorted.
(define (entries dir)
  (sh "ls -A ~a > ~a/ls.out" dir work)
  (list-sort string<? (read-lines (string-append work "/ls.out"))))

;; run, trace and mpirun of a program beside its library, in a directory
;; whose name has a colon, the --libdirs separator (issue 31, item 15);
;; the checkout's own bin/spindle and cache
(test "spindle run, trace and mpirun: a program in a directory named c:olon"
  (let ([dir (string-append work "-colon/c:olon")])
    (sh "rm -rf '~a' && mkdir -p '~a/lib'" dir dir)
    (call-with-output-file (string-append dir "/lib/alpha.sls")
      (lambda (p) (write '(library (lib alpha) (export alpha) (import (chezscheme)) (define alpha 'alpha-value)) p)))
    (call-with-output-file (string-append dir "/main.ss")
      (lambda (p)
        (write '(import (except (chezscheme) sleep) (only (spindle) sleep) (lib alpha)) p)
        (write '(sleep 0.01) p)
        (write '(write (list alpha (command-line-arguments))) p)
        (write '(newline) p)))
    (let ([spindle (string-append (current-directory) "/bin/spindle")] [out (string-append work "-colon/out")])
      (check-equal "run" 0 (sh "cd '~a/..' && ~a run c:olon/main.ss x 'y z' > ~a 2>&1 || { cat ~a; exit 1; }" dir spindle out out))
      (check-equal "run: the library found, the arguments passed" '("(alpha-value (\"x\" \"y z\"))") (read-lines out))
      (check-equal "trace" 0 (sh "cd '~a/..' && ~a trace -o ~a.json c:olon/main.ss x > ~a 2>/dev/null || { cat ~a; exit 1; }" dir spindle out out out))
      (check-equal "trace: the library found" '("(alpha-value (\"x\"))") (read-lines out))
      ;; a place re-imports the library beside the program
      (sh "mkdir -p '~a/app'" dir)
      (call-with-output-file (string-append dir "/app/squares.sls")
        (lambda (p)
          (write '(library (app squares) (export run)
                    (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
                    (define (run n)
                      (let ([p (place ch (place-channel-put ch (* (place-channel-get ch) (place-channel-get ch))))])
                        (place-channel-put p n)
                        (place-channel-put p n)
                        (list (place-channel-get p) (place-wait p))))
                    (lift-places (app squares)))
                 p)))
      (call-with-output-file (string-append dir "/squares.ss")
        (lambda (p) (write '(import (chezscheme) (app squares)) p) (write '(write (run 12)) p)))
      (check-equal "run, a place" 0 (sh "cd '~a/..' && ~a run c:olon/squares.ss > ~a 2>&1 || { cat ~a; exit 1; }" dir spindle out out))
      (check-equal "the place found the library" '("(144 0)") (read-lines out))
      (when (file-exists? "/usr/bin/mpirun")
        (check-equal "mpirun" 0 (sh "cd '~a/..' && timeout 60 ~a mpirun -np 1 c:olon/main.ss x > ~a 2>&1 || { cat ~a; exit 1; }" dir spindle out out))
        (check-equal "mpirun: the library found" '("(alpha-value (\"x\"))") (read-lines out))))
    (sh "rm -rf '~a-colon'" work)))

(test "a copy of bin/ and lib/ to work on"
  (check-equal "copied" 0 (sh "rm -rf ~a && mkdir -p ~a && cp -r bin lib ~a/" work work work)))

(test "libdirs builds the cache once and then reuses it"
  (let ([cache (string-append work "/cache1")])
    (check-equal "first" 0 (sh "SPINDLE_CACHE=~a ~a/bin/spindle libdirs > ~a/out1" cache work work))
    (check-equal "second" 0 (sh "SPINDLE_CACHE=~a ~a/bin/spindle libdirs > ~a/out2" cache work work))
    (let ([a (first-line (string-append work "/out1"))] [b (first-line (string-append work "/out2"))])
      (check-equal "same path twice" a b)
      (check (list 'names-the-cache a) (and a (string-prefix? (format "~a/lib::~a/" work cache) a)))
      (check-equal "one directory, nothing half-built" 1 (length (entries cache)))
      (check "objects of spindle and of the other libraries"
             (for-all file-exists?
                      (map (lambda (f) (format "~a/~a/~a" cache (car (entries cache)) f))
                           '("spindle.so" "spindle/place.so" "spindle/private/core/scheduler.so"
                             "srfi/:18.so" "util/concurrent.so")))))))

(test "a changed source gets a new directory, and programs run on it"
  (let ([cache (string-append work "/cache2")])
    (sh "SPINDLE_CACHE=~a ~a/bin/spindle libdirs > ~a/before" cache work work)
    (sh "sleep 0.01; touch ~a/lib/spindle/thread.sls" work)
    (sh "SPINDLE_CACHE=~a ~a/bin/spindle libdirs > ~a/after" cache work work)
    (check "another directory"
           (not (equal? (first-line (string-append work "/before")) (first-line (string-append work "/after")))))
    (check-equal "both kept" 2 (length (entries cache)))
    (call-with-output-file (string-append work "/prog.ss")
      (lambda (p)
        (write '(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle)) p)
        (write '(display (touch (future (lambda () (* 6 7))))) p)
        (write '(newline) p)))
    (check-equal "the program ran" 0
                 (sh "scheme --libdirs \"$(cat ~a/after)\" --program ~a/prog.ss > ~a/prog.out 2>&1" work work work))
    (check-equal "and printed" '("42") (read-lines (string-append work "/prog.out")))))

(test "SPINDLE_CACHE=off, or a cache that cannot be written: lib/ alone"
  (sh "SPINDLE_CACHE=off ~a/bin/spindle libdirs > ~a/off" work work)
  (check-equal "off" (string-append work "/lib") (first-line (string-append work "/off")))
  (check-equal "unwritable: still works" 0
               (sh "SPINDLE_CACHE=/proc/spindle-cannot-write ~a/bin/spindle libdirs > ~a/bad" work work))
  (check-equal "unwritable" (string-append work "/lib") (first-line (string-append work "/bad"))))

(test "concurrent first runs agree and leave one directory"
  (let ([cache (string-append work "/cache3")])
    (check-equal "all ran" 0
                 (sh "for i in 1 2 3 4; do SPINDLE_CACHE=~a ~a/bin/spindle libdirs > ~a/c$i & done; wait" cache work work))
    (let ([outs (map (lambda (i) (first-line (format "~a/c~a" work i))) '(1 2 3 4))])
      (check (list 'same outs) (and (car outs) (for-all (lambda (o) (equal? o (car outs))) outs)))
      (check (list 'uses-the-cache (car outs)) (and (car outs) (string-prefix? (format "~a/lib::" work) (car outs)))))
    (check-equal "one directory" 1 (length (entries cache)))))

(test "a program that just ends flushes its output while pool workers live (Chez alone would not)"
  (call-with-output-file (string-append work "/end.ss")
    (lambda (p)
      (write '(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle)) p)
      (write '(define pool (make-parallel-thread-pool 2)) p)
      (write '(thread (lambda () (let loop () (sleep 1) (loop))) pool) p)
      (write '(display (touch (future (lambda () (* 6 7))))) p)
      (write '(display "+" (console-error-port)) p)))
  (check-equal "exit code" 0
               (sh "scheme --libdirs ~a/lib --program ~a/end.ss > ~a/end.out 2> ~a/end.err" work work work work))
  (check-equal "stdout" '("42") (read-lines (string-append work "/end.out")))
  (check-equal "stderr" '("+") (read-lines (string-append work "/end.err"))))

(test "exit flushes the output ports while pool workers live (Chez alone would not)"
  (call-with-output-file (string-append work "/exit.ss")
    (lambda (p)
      (write '(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle)) p)
      (write '(display (touch (future (lambda () (* 6 7))))) p)
      (write '(display "+" (console-error-port)) p)
      (write '(exit 3) p)))
  (check-equal "exit code" 3
               (sh "scheme --libdirs ~a/lib --program ~a/exit.ss > ~a/exit.out 2> ~a/exit.err || exit $?" work work work work))
  (check-equal "stdout" '("42") (read-lines (string-append work "/exit.out")))
  (check-equal "stderr" '("+") (read-lines (string-append work "/exit.err"))))

(sh "rm -rf ~a" work)
(done)
