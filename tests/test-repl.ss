#!chezscheme
;;; The REPL under a pseudo-terminal (tests/support/repl-pty.py drives it): two
;;; tickers, a coroutine thread and an 'own thread, keep ticking while the
;;; prompt waits; Ctrl-C breaks a busy evaluation and the REPL then
;;; evaluates (+ 1 2); Ctrl-D exits with status 0.  Both `bin/spindle repl`
;;; and a plain `scheme` session that imports (spindle repl).
;;; Skipped, with a message, where python3 or its pty module is missing.
(import (chezscheme) (harness)
        (only (spindle private os processes) own-pid shell-command))

(define libdirs
  (let ([ds (map (lambda (d) (if (string=? (car d) (cdr d)) (car d) (string-append (car d) "::" (cdr d))))
                 (library-directories))])
    (fold-left (lambda (acc d) (string-append acc ":" d)) (car ds) (cdr ds))))

(define python? (= 0 (shell-command "python3 -c 'import pty' >/dev/null 2>&1")))

(define (result-lines cmd tag)
  (let ([out (format "/tmp/spindle-test-repl-~a-~a" (own-pid) tag)])
    (shell-command (format "timeout 90 python3 tests/support/repl-pty.py ~a > ~a 2>&1" cmd out))
    (let ([lines (call-with-input-file out
                   (lambda (p) (let loop ([acc '()]) (let ([l (get-line p)]) (if (eof-object? l) (reverse acc) (loop (cons l acc)))))))])
      (delete-file out)
      lines)))

(define (words s)
  (let loop ([cs (string->list s)] [w '()] [acc '()])
    (cond
      [(null? cs) (reverse (if (null? w) acc (cons (list->string (reverse w)) acc)))]
      [(char=? (car cs) #\space) (loop (cdr cs) '() (if (null? w) acc (cons (list->string (reverse w)) acc)))]
      [else (loop (cdr cs) (cons (car cs) w) acc)])))

(define (field key lines)
  (let ([l (find (lambda (l) (let ([w (words l)]) (and (pair? w) (string=? (car w) key)))) lines)])
    (and l (cdr (words l)))))

(define (check-repl cmd tag)
  (let ([lines (result-lines cmd tag)])
    (printf "  ~a: ~s\n" tag lines)
    (let ([ticks (field "ticks" lines)])
      (check (list "ticks reported" lines) (and ticks (= 3 (length ticks))))
      (when (and ticks (= 3 (length ticks)))
        (let ([co (string->number (car ticks))] [own (string->number (cadr ticks))]
              [ideal (string->number (caddr ticks))])
          (check (list "coroutine ticker >= 80% while the prompt waits" ticks) (>= co (* 0.8 ideal)))
          (check (list "'own ticker >= 80% while the prompt waits" ticks) (>= own (* 0.8 ideal))))))
    (check-equal "Ctrl-C broke the loop" '("yes") (field "break" lines))
    (check-equal "then (+ 1 2)" '("3") (field "after-break" lines))
    (check-equal "Ctrl-D exits" '("0") (field "exit" lines))))

;; The status of `bin/spindle repl` reading input (a pipe) that ends with
;; or without an exit: the code given to exit, from the prompt or from a
;; thread started there (issue 31, item 16).
;; hold: seconds the input stays open after it (the prompt waits).
(define (repl-status input . hold)
  (let ([in (format "/tmp/spindle-test-repl-~a-in" (own-pid))])
    (call-with-output-file in (lambda (p) (display input p)) 'replace)
    (let ([r (shell-command (format "{ cat ~a; sleep ~a; } | timeout 60 bin/spindle repl > /dev/null 2>&1; echo $? > ~a.rc"
                                    in (if (null? hold) 0 (car hold)) in))])
      (let ([rc (call-with-input-file (string-append in ".rc") read)])
        (delete-file in) (delete-file (string-append in ".rc"))
        rc))))

(test "exit at the REPL: its code is the process's status"
  (check-equal "(exit 3) at the prompt" 3 (repl-status "(exit 3)\n(display 'not-reached)\n"))
  (check-equal "(exit) at the prompt" 0 (repl-status "(exit)\n"))
  (check-equal "end of input" 0 (repl-status "(+ 1 2)\n"))
  (check-equal "(exit 4) after leaving a nested cafe" 4 (repl-status "(new-cafe)\n(exit 1)\n(exit 4)\n"))
  (check-equal "(exit 5) from a coroutine thread started at the prompt" 5
    (repl-status "(thread (lambda () (exit 5)))\n(sleep 10)\n(exit 9)\n"))
  (check-equal "(exit 6) from a parallel thread started at the prompt" 6
    (repl-status "(thread (lambda () (exit 6)) #:pool 'own)\n(sleep 10)\n(exit 9)\n"))
  (check-equal "(exit 7) from a thread while the prompt waits" 7
    (repl-status "(thread (lambda () (sleep 0.2) (exit 7)))\n" 5)))

(if (not python?)
    (printf "skipped: python3 with its pty module is needed to drive the REPL under a terminal\n")
    (parameterize ([test-limit 100])
      (test "bin/spindle repl: threads run at the prompt, Ctrl-C breaks the evaluation"
        (check-repl "bin/spindle repl" "spindle-repl"))
      (test "(spindle repl) in a plain scheme session"
        (check-repl (format "--plain scheme --libdirs '~a'" libdirs) "plain"))))

(done)
