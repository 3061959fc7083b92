#!chezscheme
;;; BT's problem sizes and its storage.  Every array is a shared flvector
;;; (so places map the same pages), read and written in the inner loops
;;; through its raw address with the optimize-level-3 foreign-ref and
;;; foreign-set!: measured as fast as bytevector-ieee-double-native-ref
;;; (the checked shared-flvector-ref is a procedure call that boxes its
;;; result).  The vector itself must stay reachable while its address is
;;; used: its mapping is released when the record is collected.
;;;
;;; Layout (cubic grid of n points per side): a 5-component field, point
;;; (i, j, k), component m is element m + 5 (i + n (j + n k)); a scalar
;;; field's element is i + n (j + n k).
(library (nas bt-grid)
  (export bt-classes bt-class-size bt-class-steps bt-class-dt
          field-address fref fset! fref+ block-range
          make-bt-fields bt-fields-u bt-fields-forcing bt-fields->list list->bt-fields bt-fields-address
          keep-mapped
          addrs-u addrs-rhs addrs-forcing addrs-rho-i addrs-us addrs-vs addrs-ws
          addrs-qs addrs-square)
  (import (chezscheme)
          (only (spindle) make-shared-flvector shared-flvector?)
          (only (spindle unsafe) unsafe-shared-vector-address))

  (define bt-classes '(S W A))

  ;; (grid points per side, time steps, dt) of the NPB 3.4 classes.
  (define (class-entry class)
    (case class
      [(S) '(12 60 0.01)]
      [(W) '(24 200 0.0008)]
      [(A) '(64 200 0.0008)]
      [else (assertion-violation 'bt-class-size "unknown class" class)]))
  (define (bt-class-size class) (car (class-entry class)))
  (define (bt-class-steps class) (cadr (class-entry class)))
  (define (bt-class-dt class) (caddr (class-entry class)))

  (define (make-field n) (make-shared-flvector n 0.0))

  ;; The address of shared flvector v's memory, valid while v is reachable
  ;; (keep-mapped holds the fields while their addresses are in use).
  (define (field-address v)
    (unless (shared-flvector? v)
      (assertion-violation 'field-address "expected a shared flvector" v))
    (unsafe-shared-vector-address v))

  ;; Element i of the array at address a (no checks: the callers' index
  ;; arithmetic is what keeps them in bounds).
  (define-syntax fref
    (syntax-rules ()
      [(_ a i) (#3%foreign-ref 'double-float a (#3%fxsll i 3))]))
  (define-syntax fset!
    (syntax-rules ()
      [(_ a i x) (#3%foreign-set! 'double-float a (#3%fxsll i 3) x)]))
  ;; a[i] <- a[i] + x
  (define-syntax fref+
    (syntax-rules ()
      [(_ a i x) (let ([o (#3%fxsll i 3)])
                   (#3%foreign-set! 'double-float a o
                     (#3%fl+ (#3%foreign-ref 'double-float a o) x)))]))

  ;; The arrays of one run: u, rhs and forcing have 5 components per
  ;; point; rho-i (1/density), us vs ws (velocities), qs (kinetic energy
  ;; over density) and square (kinetic energy) one.
  (define-record-type bt-fields
    (fields u rhs forcing rho-i us vs ws qs square)
    (protocol
      (lambda (new)
        (lambda (n)
          (let ([n3 (fx* n (fx* n n))])
            (new (make-field (fx* 5 n3)) (make-field (fx* 5 n3)) (make-field (fx* 5 n3))
                 (make-field n3) (make-field n3) (make-field n3) (make-field n3)
                 (make-field n3) (make-field n3))))))
    (sealed #t))

  ;; The same, as a list of the nine vectors (place messages) and back.
  (define (bt-fields->list f)
    (list (bt-fields-u f) (bt-fields-rhs f) (bt-fields-forcing f) (bt-fields-rho-i f)
          (bt-fields-us f) (bt-fields-vs f) (bt-fields-ws f) (bt-fields-qs f)
          (bt-fields-square f)))
  (define list->bt-fields
    (let ([rtd (record-type-descriptor bt-fields)])
      (lambda (l) (apply (record-constructor (make-record-constructor-descriptor rtd #f #f)) l))))

  ;; The fields' addresses, in the same order.
  (define-record-type addrs
    (fields u rhs forcing rho-i us vs ws qs square)
    (sealed #t))
  (define (bt-fields-address f)
    (apply make-addrs (map field-address (bt-fields->list f))))

  ;; Called after the last use of f's addresses: f, hence its mappings,
  ;; stays reachable until then (field-address may raise, so the call is
  ;; never optimized away).
  (define (keep-mapped f) (for-each field-address (bt-fields->list f)))

  ;; The block of [start, end) that member id of np runs: with q = k div np
  ;; and r = k mod np, members below r run q+1 items, the others q, in id
  ;; order (CGfor's split).  Returns (values lo hi), hi exclusive.
  (define (block-range start end id np)
    (let* ([k (fx- end start)] [q (fxquotient k np)] [r (fxremainder k np)]
           [lo (fx+ start (fx* id q) (fxmin id r))])
      (values lo (fx+ lo q (if (fx< id r) 1 0))))))
