#!chezscheme
;;; How the I/O layer hands its resources (descriptor ports, listeners) to
;;; custodians without importing them: (spindle custodian) installs its
;;; registration and its current-custodian here when it is loaded, and
;;; the I/O libraries call them.  Until then nothing is registered: no
;;; custodian but the root exists before (spindle custodian) is loaded,
;;; and every library that can make one (thread, place, subprocess, the
;;; umbrella) loads it.
;;;
;;; A kind is what (spindle custodian) calls a custodian kind: a pair
;;; (shutdown . closed?) of procedures of the object, shared by every
;;; object of the kind.
(library (spindle private io custodian-hooks)
  (export make-custody-kind custody-register! current-custody set-custody-hooks!)
  (import (chezscheme))

  (define (make-custody-kind shutdown closed?) (cons shutdown closed?))

  ;; (register obj kind who owner): raises if owner refuses obj (a
  ;; shut-down custodian); (current): the owner of what is made now.
  (define register (lambda (obj kind who owner) (void)))
  (define current (lambda () #f))

  (define (set-custody-hooks! register! current-owner)
    (set! register register!)
    (set! current current-owner))

  ;; owner: (current-custody) when made by the thread that will own obj.
  (define (custody-register! obj kind who owner) (register obj kind who owner))
  (define (current-custody) (current)))
