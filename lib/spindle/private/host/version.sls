#!chezscheme
;;; Which Chez Scheme runs spindle, checked once when the host layer loads.
;;;
;;; spindle reaches into Chez's internals (winders, exception states,
;;; thread contexts, port records) only through the libraries of this
;;; folder, and each of them answers for the versions listed here.  Any
;;; other Chez, or a build without threads, is refused at load with one
;;; message naming the version and what is missing, never a crash later.
;;; To add a version: check each library of this folder against it (see
;;; doc/internals.md, "The host layer"), then add it below.
(library (spindle private host version)
  (export chez-version chez-10? chez-version-string supported-chez-version?)
  (import (chezscheme))

  ;; (major minor patch) of the running Chez.
  (define chez-version (call-with-values scheme-version-number list))

  (define (chez-version-string)
    (format "~{~a~^.~}" chez-version))

  ;; 9.5.8: Debian 12 and Ubuntu 24.04.  10.0-10.4: Chez after its merge
  ;; with Racket's fork (Debian 13, Fedora, Homebrew, Alpine); one layout
  ;; for every 10.x release through 10.4.
  (define (supported-chez-version? v)
    (or (equal? v '(9 5 8))
        (and (eqv? (car v) 10) (<= (cadr v) 4))))

  (define chez-10? (>= (car chez-version) 10))

  (unless (threaded?)
    (errorf 'spindle "this Chez Scheme ~a was built without threads (~a); spindle needs a threaded build (machine type t...)"
            (chez-version-string) (machine-type)))
  (unless (supported-chez-version? chez-version)
    (errorf 'spindle "Chez Scheme ~a is not supported: spindle runs on Chez Scheme 9.5.8 and 10.0 to 10.4, and reads internals (winders, exception states, thread contexts, port records) whose layout it has not checked on ~a"
            (chez-version-string) (chez-version-string))))
