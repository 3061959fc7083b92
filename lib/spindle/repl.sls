#!chezscheme
;;; A read-eval-print loop in which other threads keep running.
;;;
;;; (read-eval-print-loop) runs Chez's waiter (new-cafe: its prompt, its
;;; printing, an error returns to the prompt) in the calling thread, with
;;; two differences:
;;; - It reads through spindle's console input port, which parks the
;;;   thread: coroutine threads run on while the prompt waits, and no
;;;   collection waits for the reader, so parallel threads run too.
;;;   (Chez's console port holds off every collection while it waits.)
;;; - Ctrl-C breaks the thread running the loop (break-thread), so the
;;;   evaluation in progress ends with a "user break" and the prompt comes
;;;   back; other threads are not touched.  Chez delivers SIGINT to the
;;;   program's main OS thread, which runs the handler in whichever of its
;;;   threads runs next: the loop must run in the main thread (or a
;;;   coroutine thread), where the handler is installed.
;;;
;;; - exit in the loop's thread leaves the loop, which returns exit's
;;;   arguments (`bin/spindle repl` exits with them); exit in any other
;;;   thread ends the process with its code.  new-cafe's exit handler,
;;;   which returns from the cafe, is a parameter of the OS thread, so
;;;   coroutine threads would call it too and jump into the loop's
;;;   continuation: at each prompt the loop puts its own in its place.
;;;
;;; Chez's expression editor is not used: it reads the terminal directly
;;; in C and only when the console ports are Chez's own, and its blocking
;;; read would stop every coroutine thread of the OS thread it runs on.
(library (spindle repl)
  (export read-eval-print-loop)
  (import (chezscheme)
          (only (spindle thread) current-thread break-thread)
          (only (spindle console) install-console-ports!)
          (only (spindle private core exit-hooks) exit-process))

  (define (read-eval-print-loop)
    (let ([me (current-thread)] [prompt-and-read (waiter-prompt-and-read)] [ours (make-weak-eq-hashtable)])
      ;; wraps the exit handler of the cafe at this prompt (a cafe nested
      ;; in it, `(new-cafe)` typed at the prompt, has its own)
      (define (own-exit-handler!)
        (let ([cafe-exit (exit-handler)])
          (unless (hashtable-contains? ours cafe-exit)
            (let ([h (lambda args (apply (if (eq? (current-thread) me) cafe-exit exit-process) args))])
              (hashtable-set! ours h #t)
              (exit-handler h)))))
      ;; this thread's ports, and Chez's console ports, are the parking ones
      (install-console-ports!)
      (parameterize ([keyboard-interrupt-handler (lambda () (break-thread me))]
                     [waiter-prompt-and-read (lambda (level) (own-exit-handler!) (prompt-and-read level))])
        (new-cafe)))))
