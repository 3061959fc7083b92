#!chezscheme
;;; What children and places inherit (issue 22, items 6, 7 and 9):
;;; default signal dispositions and an empty signal mask, only the
;;; descriptors they are given, and a template process that is restarted
;;; after it dies.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle) (harness) (wait-until))

(test-limit 30)

(define (read-file path)
  (guard (c [#t #f])
    (call-with-port (open-file-input-port path (file-options) (buffer-mode block) (native-transcoder))
      get-string-all)))

(define (split-lines s)
  (let loop ([cs (string->list s)] [cur '()] [out '()])
    (cond
      [(null? cs) (reverse (if (null? cur) out (cons (list->string (reverse cur)) out)))]
      [(char=? (car cs) #\newline) (loop (cdr cs) '() (cons (list->string (reverse cur)) out))]
      [else (loop (cdr cs) (cons (car cs) cur) out)])))

;; The hex mask of a "SigXxx:" line of a /proc/PID/status text.
(define (sig-mask text field)
  (let ([line (find (lambda (l) (and (> (string-length l) (string-length field))
                                     (string=? (substring l 0 (string-length field)) field)))
                    (split-lines text))])
    (and line
         (string->number
           (list->string (filter (lambda (c) (not (char-whitespace? c)))
                                 (string->list (substring line (+ 1 (string-length field)) (string-length line)))))
           16))))

(define (process-alive? pid)
  (let ([s (read-file (format "/proc/~a/stat" pid))])
    (and s (not (eof-object? s))
         (let loop ([i 0])                    ; a zombie has ended
           (cond [(> (+ i 4) (string-length s)) #t]
                 [(string=? (substring s i (+ i 4)) ") Z ") #f]
                 [else (loop (+ i 1))])))))

;; pids of the processes whose parent is ppid and whose command line
;; contains text.
(define (children-matching ppid text)
  (filter
    (lambda (pid)
      (let ([stat (read-file (format "/proc/~a/stat" pid))] [cmd (read-file (format "/proc/~a/cmdline" pid))])
        (and (string? stat) (string? cmd) (string-contains? cmd text)
             (let* ([close (let find ([i (- (string-length stat) 1)])
                             (if (char=? (string-ref stat i) #\)) i (find (- i 1))))]
                    [rest (substring stat (+ close 4) (string-length stat))]
                    [sp (let find ([i 0]) (if (char=? (string-ref rest i) #\space) i (find (+ i 1))))])
               (eqv? ppid (string->number (substring rest 0 sp)))))))
    (filter values (map string->number (directory-list "/proc")))))

(define c-getpid (begin (load-shared-object "libc.so.6") (foreign-procedure "getpid" () int)))
(define c-dup2 (foreign-procedure "dup2" (int int) int))
(define c-kill (foreign-procedure "kill" (int int) int))

;; ================================================================ descriptors of places (item 7)
;; First: the template process must start after the pipe is made.
(test "a pipe of Chez's open-process-ports, made before the first place, is not held by places"
  (let-values ([(to-cat from-cat err-cat pid) (open-process-ports "exec cat > /dev/null" (buffer-mode block))])
    (let ([places (map (lambda (i) (dynamic-place '(places hygiene) 'start-echo)) (iota 3))])
      (for-each (lambda (p i) (check-equal "echo" i (place-channel-put/get p i))) places (iota 3))
      (close-port to-cat)
      (check "cat sees end of file and exits" (wait-until (lambda () (not (process-alive? pid))) 5 0.02))
      (close-port from-cat) (close-port err-cat)
      (for-each (lambda (p) (check-equal "place ends" 0 (place-wait p))) places))))

;; ================================================================ signals (item 6)
(test "a child starts with default signal dispositions and an empty signal mask"
  (let-values ([(code out) (run-command "/bin/grep" "^Sig" "/proc/self/status")])
    (check-equal "grep ran" 0 code)
    (check-equal "nothing ignored" 0 (sig-mask out "SigIgn:"))
    (check-equal "nothing blocked" 0 (sig-mask out "SigBlk:"))))

(test "a child writing to a closed pipe dies of SIGPIPE (yes | head -1)"
  (let-values ([(p o i e) (subprocess #f #f #f "/usr/bin/yes")])
    (check-equal "output" (char->integer #\y) (bytevector-u8-ref (get-bytevector-some o) 0))
    (close-port o)
    (check "ends within 5 s" (sync/timeout 5 p))
    (check-equal "killed by SIGPIPE: 128 + 13" 141 (subprocess-status p))
    (check-equal "printed nothing" (eof-object) (get-bytevector-all e))
    (close-port i) (close-port e)))

(test "a child of a place starts with nothing blocked or ignored"
  (let ([p (dynamic-place '(places hygiene) 'start-signal-report)])
    (let ([out (place-channel-get p)])
      (check-equal "nothing ignored" 0 (sig-mask out "SigIgn:"))
      (check-equal "nothing blocked" 0 (sig-mask out "SigBlk:")))
    (check-equal "place ends" 0 (place-wait p))))

(test "in a place, (subprocess-kill p #f) ends `sleep 30` (SIGINT: 128 + 2)"
  (let ([p (dynamic-place '(places hygiene) 'start-interrupt-sleep)])
    (check-equal "interrupted" 130 (place-channel-get p))
    (check-equal "place ends" 0 (place-wait p))))

;; ================================================================ descriptors (item 7)
(define (read-link path)
  (let* ([bv (make-bytevector 4096)]
         [n ((foreign-procedure "readlink" (string u8* size_t) ssize_t) path bv 4096)])
    (if (> n 0) (utf8->string (let ([r (make-bytevector n)]) (bytevector-copy! bv 0 r 0 n) r)) "?")))

(test "a child holds only 0, 1 and 2: not a Chez file port's descriptor, not an inherited one"
  (let* ([file (open-file-input-port "/etc/hostname")]
         [fd (port-file-descriptor file)])
    ;; a descriptor without close-on-exec, as a program inherits one
    (check "dup2 to 251" (= 251 (c-dup2 fd 251)))
    (let-values ([(p o i e) (subprocess #f #f #f "/bin/sleep" "5")])
      ;; (sleep may hold a descriptor for a moment while it starts: its locale)
      (let* ([fds (lambda () (list-sort < (map string->number (directory-list (format "/proc/~a/fd" (subprocess-pid p))))))]
             [seen (begin (wait-until (lambda () (equal? (fds) '(0 1 2))) 10 0.02) (fds))]
             ;; what any other descriptor is, should one stay
             [what (map (lambda (fd)
                          (guard (c [#t "?"]) (read-link (format "/proc/~a/fd/~a" (subprocess-pid p) fd))))
                        (filter (lambda (fd) (> fd 2)) seen))])
        (subprocess-kill p #t)
        (for-each close-port (list o i e))
        (check-equal (list "the child's descriptors" what) '(0 1 2) seen)))
    (let-values ([(code out) (run-command "/bin/sh" "-c" "ls /proc/$$/fd")])
      (check-equal "the shell's descriptors" '("0" "1" "2") (split-lines out)))
    (close-port file)
    ((foreign-procedure "close" (int) int) 251)))

;; ================================================================ the template process (item 9)
(test "after the template process dies, a new place starts (with a new template)"
  (let ([p (dynamic-place '(places hygiene) 'start-echo)])
    (check-equal "first place answers" 'a (place-channel-put/get p 'a))
    (place-wait p))
  (let ([templates (children-matching (c-getpid) "place-zygote")])
    (check-equal "one template" 1 (length templates))
    (c-kill (car templates) 9)
    (check "it died" (wait-until (lambda () (not (process-alive? (car templates)))) 5 0.02))
    (check "and was reaped" (wait-until (lambda () (not (file-exists? (format "/proc/~a" (car templates))))) 5 0.02)))
  (sleep 1)
  (let* ([p (dynamic-place '(places hygiene) 'start-echo)]
         [ch (make-channel)])
    (thread (lambda () (channel-put ch (place-channel-put/get p 'b))))
    (check-equal "a new place answers" 'b (sync/timeout 10 ch))
    (check "and ends" (sync/timeout 10 (place-dead-evt p)))
    (check-equal "code" 0 (place-wait p))))

(done)
