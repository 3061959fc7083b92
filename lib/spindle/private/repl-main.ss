;;; `spindle repl`: spindle's bindings at the top level, then the loop of
;;; (spindle repl) until end of input.
(import (spindle) (spindle repl))
(printf "spindle ~a on ~a: threads run while the prompt waits; Ctrl-C breaks an evaluation, Ctrl-D exits.\n"
        "0.1.0" (scheme-version))
(waiter-prompt-string ">")
;; (exit 3) at the prompt returns 3: the process's status
(call-with-values read-eval-print-loop exit)
