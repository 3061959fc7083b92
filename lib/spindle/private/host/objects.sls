#!chezscheme
;;; Chez's object internals that spindle uses: making a string, bytevector
;;; or vector immutable in place (a message received from a place), the
;;; address of a bytevector's data (for a foreign call made with
;;; interrupts disabled), a procedure's code name, an OS thread's
;;; interrupt depth, and the gensym session key a forked place resets.
;;; The same on 9.5.8 and 10.x.
(library (spindle private host objects)
  (export string-set-immutable! bytevector-set-immutable! vector-set-immutable! immutable-box-fill!
          bytevector-data-address procedure-code-name interrupt-depth
          reset-gensym-session!)
  (import (chezscheme))

  (define-syntax string-set-immutable!
    (syntax-rules () [(_ s) (#%$string-set-immutable! s)]))
  (define-syntax bytevector-set-immutable!
    (syntax-rules () [(_ bv) (#%$bytevector-set-immutable! bv)]))
  (define-syntax vector-set-immutable!
    (syntax-rules () [(_ v) (#%$vector-set-immutable! v)]))

  ;; Stores v in immutable box b (made by box-immutable, not yet seen by
  ;; anyone): an immutable box differs from a mutable one only in the check
  ;; set-box! makes, which the optimize-level-3 store skips (compiled code
  ;; only, on 9.5.8 and 10.x).
  (define-syntax immutable-box-fill!
    (syntax-rules () [(_ b v) (#3%set-box! b v)]))

  ;; The address of byte i of bytevector bv: valid only until the next
  ;; interrupt check (a collection may move bv).  Its data starts 9 bytes
  ;; past its tagged pointer on 64-bit machines.
  (define-syntax bytevector-data-address
    (syntax-rules () [(_ bv i) (#%$object-address bv (fx+ 9 i))]))

  ;; The name of procedure p's code (a string, or #f).
  (define (procedure-code-name p) (#%$code-name (#%$closure-code p)))

  ;; This OS thread's interrupt-disable depth, read without changing it.
  (define-syntax interrupt-depth
    (syntax-rules () [(_) (#%$tc-field 'disable-count (#%$tc))]))

  ;; A forked process shares its parent's gensym session key (gensyms made
  ;; in both would be eq? once sent between them): it makes its own.
  (define (reset-gensym-session!) (#%$set-top-level-value! '$session-key #f)))
