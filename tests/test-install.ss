#!chezscheme
;;; make install / make uninstall: install into a temporary prefix, run
;;; programs that use threads, a future and places from a directory outside
;;; the checkout (with plain scheme --libdirs and with the installed
;;; spindle command), then uninstall and check that nothing is left.
(import (chezscheme) (harness) (text-files)
        (only (spindle private os processes) own-pid shell-command))

(test-limit 180)

(define checkout (current-directory))
(define work (format "/tmp/spindle-test-install-~a" (own-pid)))
(define install-prefix (string-append work "/prefix"))
(define prog-dir (string-append work "/prog"))

(define (sh fmt . args)
  (shell-command (string-append "set -e; " (apply format fmt args))))

(define (contains? s part)
  (let ([n (string-length s)] [k (string-length part)])
    (let loop ([i 0])
      (and (<= (+ i k) n)
           (or (string=? (substring s i (+ i k)) part) (loop (+ i 1)))))))

(define (write-file file text)
  (call-with-output-file file (lambda (p) (display text p)) 'replace))

;; Threads (coroutine and parallel), a future, and a place started from a
;; source file given by path.
(define program-text "#!chezscheme
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
(define ch (make-channel))
(define producer (thread (lambda () (channel-put ch 20))))
(define consumer (thread (lambda () (+ 1 (channel-get ch))) #:pool 'own #:keep 'results))
(define f (future (lambda () (* 2 (thread-wait consumer)))))
(define p (dynamic-place \"worker.ss\" 'start))
(place-channel-put p (touch f))
(printf \"~a ~a\\n\" (place-channel-get p) (place-wait p))
")

(define worker-text "#!chezscheme
(library (install-test worker)
  (export start)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
  (define (start ch)
    (place-channel-put ch (list 'squared (let ([n (place-channel-get ch)]) (* n n))))))
")

;; The place form, in a library beside the program (found through the
;; program's directory, which spindle run adds to the library path).
(define place-program-text "#!chezscheme
(import (chezscheme) (app squares))
(printf \"~a\\n\" (run 12))
")

(define squares-text "#!chezscheme
(library (app squares)
  (export run)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
  (define (run n)
    (let ([p (place ch (place-channel-put ch (* (place-channel-get ch) (place-channel-get ch))))])
      (place-channel-put p n)
      (place-channel-put p n)
      (list (place-channel-get p) (place-wait p))))
  (lift-places (app squares)))
")

(test "make install into a temporary prefix"
  (check-equal "work directory" 0 (sh "rm -rf ~a && mkdir -p ~a/app" work prog-dir))
  (check-equal "make install" 0
    (sh "make -s -C ~a install PREFIX=~a > ~a/install.out 2>&1" checkout install-prefix work))
  (for-each
    (lambda (f) (check (list 'installed f) (file-exists? (string-append install-prefix "/" f))))
    '("bin/spindle" "lib/spindle/spindle.sls" "lib/spindle/spindle.so"
      "lib/spindle/spindle/private/places/place-zygote.ss" "lib/spindle/srfi/:18.so"
      "lib/spindle/util/concurrent.so" "share/doc/spindle/reference.md"
      "share/doc/spindle/README.md" "lib/spindle/install-manifest"))
  (check-equal "bin/spindle is executable" 0 (sh "test -x ~a/bin/spindle" install-prefix))
  (check-equal "spindle libdirs names the prefix" (list (string-append install-prefix "/lib/spindle"))
    (begin (sh "env -u SPINDLE_LIBDIRS ~a/bin/spindle libdirs > ~a/libdirs.out" install-prefix work)
           (read-lines (string-append work "/libdirs.out")))))

(test "scheme --libdirs PREFIX/lib/spindle runs threads, a future and a place, compiled"
  (write-file (string-append prog-dir "/prog.ss") program-text)
  (write-file (string-append prog-dir "/worker.ss") worker-text)
  (check-equal "run" 0
    (sh "cd ~a && scheme --libdirs ~a/lib/spindle --import-notify --program prog.ss > ~a/run1.out 2>&1"
        prog-dir install-prefix work))
  (let ([lines (read-lines (string-append work "/run1.out"))])
    (check (list 'output lines) (member "(squared 1764) 0" lines))
    ;; every spindle library came from an installed object, none from source
    (check (list 'loaded-from-objects lines)
           (not (find (lambda (l) (contains? l "loading source file")) lines)))
    (check (list 'objects-in-prefix lines)
           (find (lambda (l) (contains? l (string-append install-prefix "/lib/spindle/spindle/thread.so"))) lines))))

(test "PREFIX/bin/spindle run works from another directory, the place form included"
  (write-file (string-append prog-dir "/squares.ss") place-program-text)
  (write-file (string-append prog-dir "/app/squares.sls") squares-text)
  (check-equal "run prog.ss" 0
    (sh "cd ~a && env -u SPINDLE_LIBDIRS PATH=~a/bin:$PATH spindle run prog.ss > ~a/run2.out 2>&1"
        prog-dir install-prefix work))
  (check-equal "prog.ss output" '("(squared 1764) 0") (read-lines (string-append work "/run2.out")))
  (check-equal "run prog/squares.ss" 0
    (sh "cd ~a && env -u SPINDLE_LIBDIRS PATH=~a/bin:$PATH spindle run prog/squares.ss > ~a/run3.out 2>&1"
        work install-prefix work))
  (check-equal "squares.ss output" '("(144 0)") (read-lines (string-append work "/run3.out"))))

(test "make uninstall removes everything install wrote"
  (check-equal "make uninstall" 0
    (sh "make -s -C ~a uninstall PREFIX=~a > ~a/uninstall.out 2>&1" checkout install-prefix work))
  (check (list 'prefix-gone (read-lines (string-append work "/uninstall.out")))
         (not (file-exists? install-prefix))))

(test "uninstall keeps files others put in the prefix"
  (check-equal "install" 0
    (sh "mkdir -p ~a/bin && touch ~a/bin/other && make -s -C ~a install PREFIX=~a > /dev/null 2>&1"
        install-prefix install-prefix checkout install-prefix))
  (check-equal "reinstall over it" 0
    (sh "make -s -C ~a install PREFIX=~a > /dev/null 2>&1" checkout install-prefix))
  (check-equal "uninstall" 0 (sh "make -s -C ~a uninstall PREFIX=~a > /dev/null 2>&1" checkout install-prefix))
  (check-equal "left" 0 (sh "cd ~a && test \"$(find . | sort | tr '\\n' ' ')\" = '. ./bin ./bin/other '" install-prefix)))

(sh "rm -rf ~a" work)
(done)
