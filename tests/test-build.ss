;;; spindle build / (spindle build): a generated tree with a chain and a
;;; diamond of imports, built at -j 1 and -j 2; up-to-date objects; what a
;;; touched source rebuilds; compile errors, cycles, bad arguments.  Every
;;; build runs under `timeout`, so a hang fails instead of blocking.
(import (chezscheme) (harness) (spindle build)
        (only (spindle private os processes) shell-command))

(test-limit 200)

(define base (format "/tmp/spindle-test-build-~a-~a" (time-second (current-time)) (time-nanosecond (current-time))))
(define scratch (string-append base "-scratch"))

(define (write-file file text)
  (call-with-output-file file (lambda (out) (display text out)) 'replace))

(define (read-file file) (call-with-input-file file get-string-all))

(define (contains? s part)
  (let ([n (string-length s)] [k (string-length part)])
    (let loop ([i 0]) (and (<= (+ i k) n) (or (string=? (substring s i (+ i k)) part) (loop (+ i 1)))))))

;; The tree: a chain (t c) -> (t b) -> (t a), a diamond (t g) -> (t e),
;; (t f) -> (t d), (t h) importing both ends, and a program importing (t h);
;; notes.ss is a file of definitions, neither library nor program.
(define libraries
  '((a () "(define (a-val) 1)")
    (b ((t a)) "(define (b-val) (+ (a-val) 10))")
    (c ((t b)) "(define-syntax c-twice (syntax-rules () [(_ e) (* 2 e)]))\n  (define (c-val) (c-twice (b-val)))")
    (d () "(define (d-val) 100)")
    (e ((t d)) "(define (e-val) (+ (d-val) 1))")
    (f ((only (t d) d-val)) "(define (f-val) (+ (d-val) 2))")
    (g ((t e) (prefix (t f) f:)) "(define (g-val) (+ (e-val) (f:f-val)))")
    (h ((t c) (rename (t g) (g-val gv))) "(define (h-val) (+ (c-val) (gv)))")))

(define (library-text name imports body)
  (format "(library (t ~a)\n  (export ~a-val~a)\n  (import (chezscheme) ~{~s~^ ~})\n  ~a)\n"
          name name (if (eq? name 'c) " c-twice" "") imports body))

(define (make-tree dir)
  (shell-command (format "rm -rf '~a' && mkdir -p '~a/t'" dir dir))
  (for-each (lambda (l) (write-file (format "~a/t/~a.sls" dir (car l)) (apply library-text l))) libraries)
  (write-file (format "~a/main.ss" dir)
              "#!chezscheme\n(import (chezscheme) (t h))\n(display (h-val))\n(newline)\n")
  (write-file (format "~a/notes.ss" dir) "(define notes 1)\n"))

(define units 9)                        ; 8 libraries and the program
(define (object dir name) (format "~a/t/~a.so" dir name))
(define (mtime f)
  (and (file-exists? f) (let ([t (file-modification-time f)]) (cons (time-second t) (time-nanosecond t)))))
(define (object-times dir)
  (map (lambda (l) (cons (car l) (mtime (object dir (car l))))) libraries))

;; -> (rc . output): bin/spindle build with args, stdout and stderr together
(define (spindle-build args)
  (let ([out (string-append scratch "/out")])
    (let ([rc (shell-command (format "timeout -k 5 150 bin/spindle build ~a > '~a' 2>&1" args out))])
      (cons rc (read-file out)))))

;; Loads the tree's objects in a fresh scheme and runs the compiled
;; program: -> its output, or #f when a library was loaded from source.
(define (run-objects dir)
  (let ([check (string-append scratch "/check.ss")] [out (string-append scratch "/check.out")])
    (write-file check
      (format "(import (chezscheme))\n(import-notify #t)\n(library-directories '((~s . ~s)))\n(load ~s)\n"
              dir dir (string-append dir "/main.so")))
    (shell-command (format "timeout -k 5 60 scheme -q --script '~a' > '~a' 2>&1" check out))
    (let ([text (read-file out)])
      (and (not (contains? text "loading source")) text))))

(shell-command (format "mkdir -p '~a'" scratch))
(define tree1 (string-append base "/one"))
(define tree2 (string-append base "/two"))

(test "-j 1 builds a chain and a diamond; the objects load without their sources"
  (make-tree tree1)
  (let ([r (spindle-build (format "-j 1 '~a'" tree1))])
    (check-equal "exit" 0 (car r))
    (check "report" (contains? (cdr r) (format "built ~a, up to date 0" units)))
    (check "every object" (for-all (lambda (l) (file-exists? (object tree1 (car l)))) libraries))
    (check "the program's object" (file-exists? (string-append tree1 "/main.so")))
    (check "no object for a file of definitions" (not (file-exists? (string-append tree1 "/notes.so"))))
    (check "no temporary files" (not (contains? (let ([o (string-append scratch "/ls")])
                                                  (shell-command (format "ls -R '~a' > '~a'" tree1 o))
                                                  (read-file o))
                                                ".tmp")))
    (let ([text (run-objects tree1)])
      (check "objects used, not sources" text)
      (check "the program runs" (and text (contains? text "225"))))))

(test "a second build rebuilds nothing and says so"
  (let ([before (object-times tree1)] [r (spindle-build (format "-j 2 '~a'" tree1))])
    (check-equal "exit" 0 (car r))
    (check "report" (contains? (cdr r) (format "built 0, up to date ~a" units)))
    (check-equal "objects untouched" before (object-times tree1))))

(test "touching a source rebuilds it and its dependents only"
  (let ([before (object-times tree1)])
    (sleep (make-time 'time-duration 50000000 0))   ; past the file system's clock tick
    (shell-command (format "touch '~a/t/e.sls'" tree1))
    (let ([r (spindle-build (format "-j 2 '~a'" tree1))])
      (check-equal "exit" 0 (car r))
      (check "report" (contains? (cdr r) "built 4, up to date 5"))
      (check-equal "rebuilt" '(e g h)
                   (map car (filter (lambda (p) (not (equal? (cdr p) (cdr (assq (car p) before)))))
                                    (object-times tree1))))
      (check "objects used, not sources" (run-objects tree1)))))

(test "an object changed behind the build's back is rebuilt, and its importers"
  (sleep (make-time 'time-duration 50000000 0))
  (shell-command (format "touch '~a'" (object tree1 'a)))
  (let ([r (spindle-build (format "-j 1 '~a'" tree1))])
    (check-equal "exit" 0 (car r))
    (check "report" (contains? (cdr r) "built 5, up to date 4"))))   ; a, b, c, h, main

(test "-j 2 builds a fresh tree; the objects load"
  (make-tree tree2)
  (let ([r (spindle-build (format "-j 2 '~a'" tree2))])
    (check-equal "exit" 0 (car r))
    (check "report" (contains? (cdr r) (format "built ~a, up to date 0" units)))
    (let ([text (run-objects tree2)])
      (check "objects used, not sources" text)
      (check "the program runs" (and text (contains? text "225"))))))

(test "an include is found beside the library, as Chez's own import finds it"
  (make-tree tree2)
  (write-file (format "~a/t/d-body.scm" tree2) "(define (d-val) 100)\n")
  (write-file (format "~a/t/d.sls" tree2)
              "(library (t d) (export d-val) (import (chezscheme))\n  (include \"d-body.scm\"))\n")
  (let ([r (spindle-build (format "-j 2 '~a'" tree2))])
    (check-equal "exit" 0 (car r))
    (check "report" (contains? (cdr r) (format "built ~a, up to date 0" units)))
    (check "the program runs" (let ([text (run-objects tree2)]) (and text (contains? text "225"))))))

(test "a syntax error names the file and stops the build, non-zero"
  (make-tree tree2)
  (write-file (format "~a/t/f.sls" tree2)
              "(library (t f) (export f-val) (import (chezscheme) (t d))\n  (define (f-val) (if)))\n")
  (let ([r (spindle-build (format "-j 2 '~a'" tree2))])
    (check-equal "exit" 1 (car r))
    (check "names the file" (contains? (cdr r) (format "~a/t/f.sls: invalid syntax" tree2)))
    (check "says what was not built" (contains? (cdr r) "build failed: 1 failed"))
    (check "no object for it" (not (file-exists? (object tree2 'f))))
    (check "nothing that imports it" (not (file-exists? (object tree2 'g))))))

(test "a warning names the file, once, and does not stop the build"
  (make-tree tree2)
  (write-file (format "~a/t/d.sls" tree2)
              "(library (t d) (export d-val odd) (import (chezscheme))\n  (define (d-val) 100)\n  (define (odd) (car 1 2)))\n")
  (let ([r (spindle-build (format "-j 2 '~a'" tree2))])
    (check-equal "exit" 0 (car r))
    (check "report" (contains? (cdr r) (format "built ~a, up to date 0" units)))
    (let ([warning (format "~a/t/d.sls: Warning in compile: possible incorrect argument count" tree2)])
      (check "names the file" (contains? (cdr r) warning))
      (check "once" (not (contains? (substring (cdr r) (+ 1 (let loop ([i 0]) (if (string=? (substring (cdr r) i (+ i 8)) "Warning ") i (loop (+ i 1)))))
                                               (string-length (cdr r)))
                                    "Warning "))))))

(test "a compile that calls exit (a worker place ends mid-compile) is reported, non-zero"
  (make-tree tree2)
  (write-file (format "~a/t/e.sls" tree2)
              "(library (t e) (export e-val) (import (chezscheme) (t d))\n  (define-syntax boom (lambda (x) (exit 3)))\n  (define (e-val) (boom)))\n")
  (let ([r (spindle-build (format "-j 2 '~a'" tree2))])
    (check-equal "exit" 1 (car r))
    ;; a worker place ends; the controller, compiling while its workers
    ;; start, reports the exit as the file's error
    (check "names the file" (or (contains? (cdr r) (format "~a/t/e.sls: the worker place compiling it ended (code 3)" tree2))
                                (contains? (cdr r) (format "~a/t/e.sls: its compile-time code called exit 3" tree2))))
    (check "build failed" (contains? (cdr r) "build failed: 1 failed"))))

(test "a read error names the file, non-zero"
  (make-tree tree2)
  (write-file (format "~a/t/b.sls" tree2) "(library (t b) (export b-val) (import (chezscheme)\n")
  (let ([r (spindle-build (format "-j 1 '~a'" tree2))])
    (check-equal "exit" 1 (car r))
    (check "names the file" (contains? (cdr r) (format "cannot read ~a/t/b.sls" tree2)))))

(test "an import cycle is reported with its files"
  (make-tree tree2)
  (write-file (format "~a/t/a.sls" tree2) (library-text 'a '((t c)) "(define (a-val) 1)"))
  (let ([r (spindle-build (format "-j 2 '~a'" tree2))])
    (check-equal "exit" 1 (car r))
    (check "cycle" (contains? (cdr r) "import cycle"))
    (check "its files" (for-all (lambda (n) (contains? (cdr r) (format "~a/t/~a.sls" tree2 n))) '(a b c)))
    (check "nothing built" (not (file-exists? (object tree2 'd))))))

(test "a library the workers run on is refused"
  (make-tree tree2)
  (shell-command (format "mkdir -p '~a/spindle/private/core' && cp lib/spindle/private/core/queue.sls '~a/spindle/private/core/'" tree2 tree2))
  (let ([r (spindle-build (format "-j 1 '~a'" tree2))])
    (check-equal "exit" 1 (car r))
    (check "why" (contains? (cdr r) "(spindle private core queue) is one the build's worker places run on"))))

(test "bad arguments are refused"
  (for-each
    (lambda (args message)
      (let ([r (spindle-build args)])
        (check-equal args 2 (car r))
        (check (format "~a: ~a" args message) (contains? (cdr r) message))))
    (list (format "-j 0 '~a'" tree1) (format "-j -2 '~a'" tree1) (format "-j x '~a'" tree1)
          (format "-j 1.5 '~a'" tree1) "-j" (format "'~a/missing'" base) "" (format "-q '~a'" tree1))
    (list "-j expects a positive integer, not 0" "-j expects a positive integer, not -2"
          "-j expects a positive integer, not x" "-j expects a positive integer, not 1.5"
          "-j expects a positive integer" "no such directory" "no directory to build"
          "unknown option -q")))

(test "parallel-build: the procedure, and its argument checks"
  (let-values ([(built up-to-date) (parallel-build (list tree1) 1)])
    (check-equal "built" 0 built)
    (check-equal "up to date" units up-to-date))
  (let-values ([(built up-to-date) (parallel-build (list tree1 (string-append tree1 "/t/")) 2)])
    (check-equal "nested directories: each file once" (list 0 units) (list built up-to-date)))
  (check-raises "no directories" (assertion-from? 'parallel-build) (lambda () (parallel-build '() 1)))
  (check-raises "not a list" (assertion-from? 'parallel-build) (lambda () (parallel-build tree1 1)))
  (check-raises "jobs 0" (assertion-from? 'parallel-build) (lambda () (parallel-build (list tree1) 0)))
  (check-raises "jobs not a fixnum" (assertion-from? 'parallel-build) (lambda () (parallel-build (list tree1) 'two)))
  (check-raises "missing directory" (assertion-from? 'parallel-build) (lambda () (parallel-build (list (string-append base "/missing")) 1))))


;; ---------------------------------------------------------------- issue 31, items 11-14
;; Runs script (bash, under a time bound) with $TREE, $OUT and $SPINDLE set.
(define (run-script tree script)
  (let ([file (string-append scratch "/script.sh")] [out (string-append scratch "/script.out")])
    (write-file file (string-append "set -m\nTREE='" tree "'\nOUT='" out "'\nSPINDLE='"
                                    (current-directory) "/bin/spindle'\n" script))
    (let ([rc (shell-command (format "timeout -k 5 120 bash '~a'" file))])
      (cons rc (if (file-exists? out) (read-file out) "")))))

;; A library (s slow) whose compile touches $TREE/started, then takes
;; tenths seconds (Scheme code between short sleeps, so a break is taken
;; at once); slow-val is value.  The program main.ss prints it.
(define (slow-library tree value tenths)
  (format "(library (s slow) (export slow-val) (import (chezscheme))
  (define-syntax slow
    (lambda (x)
      (call-with-output-file ~s (lambda (p) (void)) 'replace)
      (do ([i 0 (+ i 1)]) ((= i ~a)) (sleep (make-time 'time-duration 100000000 0)))
      #'~s))
  (define (slow-val) (slow)))\n" (string-append tree "/started") tenths value))

(define (make-slow-tree tree value tenths)
  (shell-command (format "rm -rf '~a' && mkdir -p '~a/s'" tree tree))
  (write-file (string-append tree "/s/slow.sls") (slow-library tree value tenths))
  (write-file (string-append tree "/main.ss") "(import (chezscheme) (s slow))\n(display (slow-val))\n(newline)\n"))

(test "SIGINT sent to the build's process stops it (status 130)"
  (let ([tree (string-append base "/sigint")])
    (make-slow-tree tree "v" 200)
    (let ([r (run-script tree "
\"$SPINDLE\" build -j 2 \"$TREE\" > \"$OUT\" 2>&1 &
pid=$!
for i in $(seq 300); do [ -e \"$TREE/started\" ] && break; sleep 0.1; done
sleep 0.3
kill -INT $pid
for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then echo still-running >> \"$OUT\"; kill -KILL $pid; fi
wait $pid
echo \"status $?\" >> \"$OUT\"
")])
      (check (list "ended within 10 s of the SIGINT" (cdr r)) (not (contains? (cdr r) "still-running")))
      (check (list "status 130" (cdr r)) (contains? (cdr r) "status 130"))
      (check (list "says so" (cdr r)) (contains? (cdr r) "spindle build: interrupted"))
      (check "no object" (not (file-exists? (string-append tree "/s/slow.so")))))
    ;; the next build removes what the killed compile left
    (write-file (string-append tree "/s/slow.sls") (slow-library tree "v" 1))
    (let ([r (spindle-build (format "-j 1 '~a'" tree))])
      (check (list "built" (cdr r)) (contains? (cdr r) "built 2, up to date 0"))
      (check "no temporary file left" (not (exists (lambda (f) (contains? f ".tmp")) (directory-list (string-append tree "/s"))))))))

(test "an edit during the compile is not taken as compiled: the next build rebuilds"
  (let ([tree (string-append base "/edit")])
    (make-slow-tree tree "old-value" 15)
    (let ([r (run-script tree "
\"$SPINDLE\" build -j 1 \"$TREE\" > \"$OUT\" 2>&1 &
pid=$!
for i in $(seq 300); do [ -e \"$TREE/started\" ] && break; sleep 0.1; done
sleep 0.3
sed -i 's/old-value/new-value/' \"$TREE/s/slow.sls\"
wait $pid
echo \"status $?\" >> \"$OUT\"
")])
      (check (list "the first build" (cdr r)) (contains? (cdr r) "status 0")))
    (let ([r (spindle-build (format "-j 1 '~a'" tree))])
      (check-equal "exit" 0 (car r))
      (check (list "rebuilt" (cdr r)) (contains? (cdr r) "built 2, up to date 0")))
    (let ([text (run-objects tree)])
      (check (list "the new value" text) (and text (contains? text "new-value"))))))

(test "a source restored with cp -p (an older time) and an edited include are rebuilt"
  (make-tree tree2)
  (write-file (format "~a/t/d-body.scm" tree2) "(define (d-val) 100)\n")
  (write-file (format "~a/t/d.sls" tree2)
              "(library (t d) (export d-val) (import (chezscheme))\n  (include \"d-body.scm\"))\n")
  (shell-command (format "cp -p '~a/t/a.sls' '~a/a.sls.saved'" tree2 scratch))
  (sleep (make-time 'time-duration 50000000 0))
  (write-file (format "~a/t/a.sls" tree2) (library-text 'a '() "(define (a-val) 2)"))
  (let ([r (spindle-build (format "-j 2 '~a'" tree2))])
    (check-equal "exit" 0 (car r))
    (check "the program runs, a-val 2" (let ([text (run-objects tree2)]) (and text (contains? text "227")))))
  (shell-command (format "cp -p '~a/a.sls.saved' '~a/t/a.sls'" scratch tree2))
  (let ([r (spindle-build (format "-j 2 '~a'" tree2))])
    (check-equal "exit" 0 (car r))
    (check (list "a and its importers rebuilt" (cdr r)) (contains? (cdr r) "built 5, up to date 4"))
    (check "a-val 1 again" (let ([text (run-objects tree2)]) (and text (contains? text "225")))))
  (write-file (format "~a/t/d-body.scm" tree2) "(define (d-val) 1000)\n")
  (let ([r (spindle-build (format "-j 2 '~a'" tree2))])
    (check-equal "exit" 0 (car r))
    (check (list "d and its importers rebuilt" (cdr r)) (contains? (cdr r) "built 6, up to date 3"))
    (check "d-val 1000" (let ([text (run-objects tree2)]) (and text (contains? text "2025")))))
  (let ([r (spindle-build (format "-j 2 '~a'" tree2))])
    (check (list "then up to date" (cdr r)) (contains? (cdr r) (format "built 0, up to date ~a" units)))))

;; 60 libraries, each importing the two before it, and a program
(define (make-wide-tree dir n)
  (shell-command (format "rm -rf '~a' && mkdir -p '~a/w'" dir dir))
  (do ([i 0 (+ i 1)]) ((= i n))
    (write-file (format "~a/w/l~a.sls" dir i)
      (format "(library (w l~a) (export v~a) (import (chezscheme)~a~a)\n  (define (v~a) (+ 1~a~a)))\n"
              i i (if (> i 0) (format " (w l~a)" (- i 1)) "") (if (> i 1) (format " (w l~a)" (- i 2)) "")
              i (if (> i 0) (format " (v~a)" (- i 1)) "") (if (> i 1) (format " (v~a)" (- i 2)) ""))))
  (write-file (format "~a/main.ss" dir)
              (format "(import (chezscheme) (w l~a))\n(display (v~a))\n(newline)\n" (- n 1) (- n 1))))

(test "two builds of one tree at once: consistent objects, then up to date"
  (let ([tree (string-append base "/twice")] [n 60])
    (make-wide-tree tree n)
    (let ([r (run-script tree "
\"$SPINDLE\" build -j 2 \"$TREE\" > \"$OUT.1\" 2>&1 & a=$!
\"$SPINDLE\" build -j 2 \"$TREE\" > \"$OUT.2\" 2>&1 & b=$!
wait $a; echo \"first $?\" > \"$OUT\"
wait $b; echo \"second $?\" >> \"$OUT\"
cat \"$OUT.1\" \"$OUT.2\" >> \"$OUT\"
")])
      (check (list "both built" (cdr r)) (and (contains? (cdr r) "first 0") (contains? (cdr r) "second 0"))))
    (let ([text (run-objects tree)])
      ;; v(i) = 1 + v(i-1) + v(i-2): fib-like; v59 as computed here
      (let ([expected (let loop ([i 0] [a 0] [b 0]) (if (= i n) a (loop (+ i 1) (+ 1 a (if (> i 1) b 0)) a)))])
        (check (list "objects used, not sources; the program runs"
                     (and text (substring text (max 0 (- (string-length text) 300)) (string-length text))))
               (and text (contains? text (number->string expected))))))
    (let ([r (spindle-build (format "-j 2 '~a'" tree))])
      (check (list "a third build: up to date" (cdr r)) (contains? (cdr r) (format "built 0, up to date ~a" (+ n 1)))))))

(test "an unreadable file does not stop the others from compiling"
  (make-tree tree2)
  (write-file (format "~a/junk.ss" tree2) "(import (chezscheme)\n")
  (let ([r (spindle-build (format "-j 2 '~a'" tree2))])
    (check-equal "exit" 1 (car r))
    (check (list "names the file" (cdr r)) (contains? (cdr r) (format "cannot read ~a/junk.ss" tree2)))
    (check "every other file built" (for-all (lambda (l) (file-exists? (object tree2 (car l)))) libraries))
    (check "the program too" (file-exists? (string-append tree2 "/main.so")))))

(test "-k keeps going after a failure: what does not need the failed file is built"
  (make-tree tree2)
  (write-file (format "~a/t/f.sls" tree2)
              "(library (t f) (export f-val) (import (chezscheme) (t d))\n  (define (f-val) (if)))\n")
  (let ([r (spindle-build (format "-k -j 2 '~a'" tree2))])
    (check-equal "exit" 1 (car r))
    (check (list "names the file" (cdr r)) (contains? (cdr r) (format "~a/t/f.sls: invalid syntax" tree2)))
    (check (list "the count" (cdr r)) (contains? (cdr r) "build failed: 1 failed"))
    (check (list "built and not built" (cdr r)) (contains? (cdr r) "built 5, not built 3"))
    (check "every file that does not import it" (for-all (lambda (n) (file-exists? (object tree2 n))) '(a b c d e)))
    (check "none that does" (not (exists (lambda (n) (file-exists? (object tree2 n))) '(f g h)))))
  (let-values ([(built up-to-date) (guard (c [#t (values 'raised #f)]) (parallel-build (list tree2) 1 #f #t))])
    (check-equal "parallel-build's keep-going? raises at the end" 'raised built)))

(shell-command (format "rm -rf '~a' '~a'" base scratch))
(done)
