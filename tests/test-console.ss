#!chezscheme
;;; The console ports: parking stdin/stdout/stderr are the default current
;;; and console ports; reading an empty stdin stops no other thread; output
;;; through pipes, files and `| head -1`; places beside them.
(import (except (chezscheme) thread? sleep make-parameter parameterize)
        (spindle) (harness)
        (only (spindle private os processes) own-pid shell-command))

(define (read-all-string in) (let ([b (get-bytevector-all in)]) (if (eof-object? b) "" (utf8->string b))))

(define (words s)
  (let loop ([cs (string->list s)] [w '()] [acc '()])
    (cond
      [(null? cs) (reverse (if (null? w) acc (cons (list->string (reverse w)) acc)))]
      [(char-whitespace? (car cs)) (loop (cdr cs) '() (if (null? w) acc (cons (list->string (reverse w)) acc)))]
      [else (loop (cdr cs) (cons (car cs) w) acc)])))

(define (file-lines path)
  (call-with-input-file path
    (lambda (p) (let loop ([acc '()]) (let ([l (get-line p)]) (if (eof-object? l) (reverse acc) (loop (cons l acc))))))))

(define (temp-file tag) (format "/tmp/spindle-test-console-~a-~a" (own-pid) tag))

(define (write-program! path . forms)
  (call-with-output-file path
    (lambda (p)
      (put-string p "#!chezscheme\n")
      (for-each (lambda (f) (write f p) (newline p))
                (cons '(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle)) forms)))
    'replace))

(test "the console and current ports are spindle's parking ports"
  (check "current output" (eq? (current-output-port) (stdout-port)))
  (check "current error" (eq? (current-error-port) (stderr-port)))
  (check "current input" (eq? (current-input-port) (stdin-port)))
  (check "console output" (eq? (console-output-port) (stdout-port)))
  (check "console error" (eq? (console-error-port) (stderr-port)))
  (check "console input" (eq? (console-input-port) (stdin-port)))
  (check "synchronized" (for-all synchronized-port? (list (stdin-port) (stdout-port) (stderr-port))))
  (let ([seen (box #f)])
    (thread-wait (thread (lambda () (set-box! seen (list (current-input-port) (current-output-port) (current-error-port))))
                         #:pool 'own))
    (check-equal "a parallel thread has them too" (list (stdin-port) (stdout-port) (stderr-port)) (unbox seen))))

;; tests/support/console-stdin-child.ss reads its stdin, a pipe left empty, while
;; a coroutine ticker, an 'own ticker and an allocating spinner run; it
;; reports their progress over 2 s while the reader still waits.
(define (check-stdin-reader kind)
  (let-values ([(p o i e) (subprocess #f #f #f (string-append (current-directory) "/bin/spindle")
                                      "run" (string-append (current-directory) "/tests/support/console-stdin-child.ss") kind)])
    ;; the report must come while stdin is still empty
    (let ([report (sync/timeout 20 (read-line-evt o))])
      (put-bytevector i (string->utf8 "hello\n"))
      (flush-output-port i)
      (close-port i)
      (check (list "report while the reader waits" kind report) (string? report))
      (when (string? report)
        (let ([w (words report)])
          (printf "  reader ~a: coroutine ticks ~a, 'own ticks ~a, spinner windows ~a of 20 (~a)\n"
                  kind (car w) (cadr w) (caddr w) (cadddr w))
          (check-equal "reported while waiting" "while-waiting" (cadddr w))
          (check (list "coroutine ticker >= 80%" report) (>= (string->number (car w)) 160))
          (check (list "'own ticker >= 80%" report) (>= (string->number (cadr w)) 160))
          (check (list "spinner >= 80% of windows" report) (>= (string->number (caddr w)) 16))))
      (let ([rest (read-all-string o)])
        (check (list "the line was read" rest) (equal? rest "read hello\n")))
      (subprocess-wait p)
      (check-equal "child exit" 0 (subprocess-status p))
      (close-port o) (close-port e))))

(test "a main thread blocked in get-line on stdin stops no other thread"
  (check-stdin-reader "main"))

(test "an 'own thread blocked in get-line on stdin stops no other thread"
  (check-stdin-reader "own"))

(define printer (temp-file "printer.ss"))
(write-program! printer
  '(define t (thread (lambda () (do ([i 0 (+ i 1)]) ((= i 20000)) (printf "line ~a\n" i))) #:pool 'own))
  '(thread-wait t)
  '(display "end"))

(test "stdout to a file: every line, and the last one without a newline"
  (let ([out (temp-file "out")])
    (check-equal "exit" 0 (shell-command (format "bin/spindle run ~a > ~a" printer out)))
    (let ([lines (file-lines out)])
      (check-equal "line count" 20001 (length lines))
      (check-equal "first" "line 0" (car lines))
      (check-equal "last" "end" (list-ref lines 20000)))
    (delete-file out)))

(test "stdout to `| head -1`: the first line, and the writer ends"
  (let ([out (temp-file "head")] [rc (temp-file "head-rc")])
    (shell-command (format "{ timeout 20 bin/spindle run ~a 2>/dev/null; echo $? > ~a; } | head -1 > ~a" printer rc out))
    (check-equal "first line" '("line 0") (file-lines out))
    (check (list "the writer ended (not killed by timeout)" (file-lines rc)) (not (equal? (file-lines rc) '("124"))))
    (delete-file out)
    (delete-file rc)))

(test "stdin from a file"
  (let ([prog (temp-file "upcase.ss")] [in (temp-file "in")] [out (temp-file "upcase-out")])
    (write-program! prog
      '(let loop ()
         (let ([l (get-line (current-input-port))])
           (unless (eof-object? l) (display (string-upcase l)) (newline) (loop)))))
    (call-with-output-file in (lambda (p) (put-string p "one\ntwo\nthree")) 'replace)
    (check-equal "exit" 0 (shell-command (format "bin/spindle run ~a < ~a > ~a" prog in out)))
    (check-equal "lines" '("ONE" "TWO" "THREE") (file-lines out))
    (check-equal "exit, stdin /dev/null" 0 (shell-command (format "bin/spindle run ~a < /dev/null > ~a" prog out)))
    (check-equal "no lines" '() (file-lines out))
    (for-each delete-file (list prog in out))))

(define (template-epoll-check)
  (let* ([dir (temp-file "place")] [prog (string-append dir "/main.ss")] [out (string-append dir "/out")])
    (shell-command (format "mkdir -p ~a" dir))
    (call-with-output-file (string-append dir "/console-place-worker.sls")
      (lambda (p)
        (put-string p "#!chezscheme\n")
        (write '(library (console-place-worker)
                  (export start)
                  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))
                  (define readlink (foreign-procedure "readlink" (string u8* size_t) ssize_t))
                  (define (link path)
                    (let* ([bv (make-bytevector 256)] [n (readlink path bv 256)])
                      (and (> n 0) (utf8->string (bytevector-copy-subrange bv n)))))
                  (define (bytevector-copy-subrange bv n)
                    (let ([c (make-bytevector n)]) (bytevector-copy! bv 0 c 0 n) c))
                  ;; #t if process pid holds an epoll descriptor
                  (define (has-epoll? pid)
                    (let ([dir (format "/proc/~a/fd" pid)])
                      (exists (lambda (f) (equal? (link (string-append dir "/" f)) "anon_inode:[eventpoll]"))
                              (directory-list dir))))
                  (define (start ch)
                    (do ([i 0 (+ i 1)]) ((= i 2000)) (printf "place ~a\n" i))
                    (place-channel-put ch (has-epoll? ((foreign-procedure "getppid" () int))))))
               p))
      'replace)
    (write-program! prog
      '(define p (dynamic-place '(console-place-worker) 'start))
      '(do ([i 0 (+ i 1)]) ((= i 2000)) (printf "main ~a\n" i))
      '(define template-epoll? (place-channel-get p))
      '(place-wait p)
      '(printf "template-epoll ~a\n" template-epoll?))
    (check-equal "exit" 0 (shell-command (format "bin/spindle run ~a > ~a 2>&1" prog out)))
    (let ([lines (file-lines out)])
      (check-equal "line count" 4001 (length lines))
      (check-equal "template" "template-epoll #f" (list-ref lines (- (length lines) 1)))
      (check (list "no torn line" lines)
             (for-all (lambda (l) (or (string=? l "template-epoll #f")
                                      (and (> (string-length l) 5) (member (substring l 0 5) '("place" "main ")))))
                      lines)))
    (shell-command (format "rm -rf ~a" dir))))

(test "a place prints beside its creator; the place template holds no epoll instance"
  (template-epoll-check))

(done)
