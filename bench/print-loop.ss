#!chezscheme
;;; For `bin/spindle bench sharing`: a single-threaded printing loop on the
;;; console, with stdout sent to /dev/null by the caller.
;;;
;;;   scheme --libdirs LIBDIRS --program bench/print-loop.ss MODE N OUTFILE
;;;
;;; MODE: chez     Chez's own console port (spindle not loaded)
;;;       spindle  the parking console port that loading spindle installs
;;;       custom   the other design measured: an R6RS custom port with a
;;;                size-0 buffer whose write! takes a spin lock and writes to
;;;                a block-buffered port on descriptor 1 (flushed at newlines)
;;; Writes "LOOP NS-PER-LINE" lines to OUTFILE, for three loops of N lines.
(import (chezscheme))

(define args (command-line-arguments))
(define mode (string->symbol (car args)))
(define n (string->number (cadr args)))
(define outfile (caddr args))

(define (custom-console)
  (let* ([fd1 (open-fd-output-port 1 (buffer-mode block) (native-transcoder))] [lock (box #f)]
         [p (make-custom-textual-output-port "custom"
              (lambda (s start k)
                (disable-interrupts)
                (let spin () (unless (box-cas! lock #f #t) (spin)))
                (put-string fd1 s start k)
                (let loop ([i (+ start k)])
                  (when (> i start)
                    (if (char=? (string-ref s (- i 1)) #\newline) (flush-output-port fd1) (loop (- i 1)))))
                (set-box! lock #f)
                (enable-interrupts)
                k)
              #f #f #f)])
    (set-textual-port-output-size! p 0)
    p))

(define port
  (case mode
    [(chez) (console-output-port)]
    [(spindle)
     ;; referencing the library invokes it, which replaces the console ports
     (unless (eval '(let () (import (spindle console)) (eq? (current-output-port) (stdout-port))))
       (error 'print-loop "console ports not installed"))
     (current-output-port)]
    [(custom) (custom-console)]
    [else (error 'print-loop "unknown mode" mode)]))

(define (time-ns thunk)
  (collect-rendezvous)
  (let ([t0 (current-time 'time-monotonic)])
    (thunk)
    (flush-output-port port)
    (let ([d (time-difference (current-time 'time-monotonic) t0)])
      (/ (+ (* (time-second d) 1e9) (time-nanosecond d)) n))))

(define (best thunk) (min (time-ns thunk) (time-ns thunk) (time-ns thunk)))

(define results
  (list
    (cons "put-string" (best (lambda () (do ([i 0 (fx+ i 1)]) ((fx= i n)) (put-string port "0123456789abcdef") (newline port)))))
    (cons "display" (best (lambda () (do ([i 0 (fx+ i 1)]) ((fx= i n)) (display i port) (newline port)))))
    (cons "printf" (best (lambda () (do ([i 0 (fx+ i 1)]) ((fx= i n)) (fprintf port "item ~a: ~s\n" i "abc")))))))

(call-with-output-file outfile
  (lambda (o) (for-each (lambda (r) (fprintf o "~a ~a\n" (car r) (cdr r))) results))
  'replace)
