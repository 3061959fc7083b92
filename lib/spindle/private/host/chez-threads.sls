#!chezscheme
;;; What Chez Scheme's own thread records say about the other OS threads of
;;; the process, for the watchdog: whether a collection is waiting, which
;;; threads are active (not at a safe point: a collection waits for every
;;; active thread), their interrupt depth, and the named procedures on the
;;; stack of a thread that sits outside Scheme.
;;;
;;; Chez keeps these in each thread's context (tc), a C structure; its
;;; pointer fields are read with $tc-field, the others (the active flag,
;;; the saved frame pointer and the stack segment) at offsets measured on
;;; ta6le for each version the host layer knows (9.5.8; 10.x, whose tc
;;; gained fields before these and whose return points may carry a compact
;;; header) and checked against this process's own context at load:
;;; elsewhere `probe-frames?` is #f and a report says less.
;;;
;;; A collection cannot start while the calling thread is active, so
;;; nothing moves while it reads; a thread that is read is either stopped
;;; outside Scheme (its saved frame pointer and the frames under it stay
;;; put until it returns) or running, and then the answer may be stale.
;;; Every address is checked to lie in the Scheme heap before it is read,
;;; and a return address yields a code object only when that object's
;;; header says "code" and its length covers the address.
(library (spindle private host chez-threads)
  (export collect-request-pending? os-thread-ids os-thread-active? os-thread-interrupt-depth
          probe-frames? os-thread-callers current-thread-context poke-thread-context!)
  (import (chezscheme) (spindle private host version))

  ;; The running OS thread's thread context, for poke-thread-context!.
  (define (current-thread-context) (#%$tc))

  ;; Makes the OS thread whose context is tc run its
  ;; keyboard-interrupt-handler at its next event check, as Chez's own
  ;; SIGINT path does (the two fields are what that path sets; the owner
  ;; clears them as it takes the event).  tc must stay alive meanwhile:
  ;; its OS thread must not exit during the call.
  (define (poke-thread-context! tc)
    (#%$tc-field 'keyboard-interrupt-pending tc #t)
    (#%$tc-field 'something-pending tc #t))

  ;; #t while a collection has been requested and has not run yet.
  (define (collect-request-pending?) (and (#%$top-level-value '$collect-request-pending) #t))

  (define (tc-of thread) (#%$thread-tc thread))
  (define (tc-address tc) (fx* tc 8))      ; $thread-tc gives the address as a fixnum ptr

  ;; The live OS threads' Chez records: those whose context is still there
  ;; (an ending thread's is 0).
  (define (live-threads)
    (filter (lambda (t) (let ([tc (tc-of t)]) (and (fixnum? tc) (not (eqv? tc 0))))) (#%$thread-list)))

  (define (thread-id thread) (#%$tc-field 'threadno (tc-of thread)))

  ;; Their numbers (get-thread-id's), this one's included.
  (define (os-thread-ids) (map thread-id (live-threads)))

  (define (find-thread id)
    (find (lambda (t) (eqv? (thread-id t) id)) (live-threads)))

  ;; Interrupt depth of OS thread id (0: interrupts enabled), or #f if gone.
  (define (os-thread-interrupt-depth id)
    (let ([t (find-thread id)])
      (and t (let ([d (#%$tc-field 'disable-count (tc-of t))]) (and (fixnum? d) d)))))

  ;; ---------------------------------------------------------------- raw layout
  (define layout-known? (eq? (machine-type) 'ta6le))
  (define tc-sfp 56)                                  ; void* sfp: the frame pointer saved at a C call
  (define tc-active (if chez-10? 316 308))            ; I32 active
  (define tc-scheme-stack (if chez-10? 320 312))      ; void* scheme-stack: the current stack segment
  (define tc-scheme-stack-size (if chez-10? 344 336)) ; iptr: its size in bytes
  (define tc-threadno (if chez-10? 472 440))          ; ptr threadno, for the check below
  ;; before a return address: its frame's size (10.x: a compact header
  ;; when its low bit is 1, the size in words in bits 2-6) and the
  ;; distance back to the start of its code object
  (define ra-frame-size (if chez-10? -8 -16))
  (define ra-toplink (if chez-10? -16 -24))
  (define (frame-size-at ra)
    (let ([w (foreign-ref 'uptr ra ra-frame-size)])
      (if (and chez-10? (odd? w))
          (* 8 (bitwise-and (bitwise-arithmetic-shift-right w 2) 31))
          w)))
  (define toplink-base (if chez-10? 16 24)) ; code pointer = ra - toplink - toplink-base
  (define code-type-offset 1)        ; the header word of a code object, from its pointer
  (define code-length-offset 9)
  (define code-data-offset 65)       ; first instruction, from the pointer (after 8 header words)

  (define (code-address c) (#%$object-address c 0))
  (define code-type-byte
    (and layout-known? (foreign-ref 'unsigned-8 (code-address (#%$closure-code tc-of)) code-type-offset)))

  ;; The offsets hold if this thread's context says what $tc-field says.
  (define probe-frames?
    (and layout-known?
         (let ([tc (#%$tc)])
           (and (eqv? (foreign-ref 'uptr (tc-address tc) tc-threadno) (fx* 8 (#%$tc-field 'threadno tc)))
                (eqv? (foreign-ref 'int (tc-address tc) tc-active) 1)))))

  ;; #t if OS thread id is active: running Scheme code, or in a foreign call
  ;; not declared __collect_safe.  Without the layout: 'unknown.
  (define (os-thread-active? id)
    (if probe-frames?
        (let ([t (find-thread id)])
          (and t (eqv? (foreign-ref 'int (tc-address (tc-of t)) tc-active) 1)))
        'unknown))

  ;; Words read from another thread's memory may be anything: generic
  ;; arithmetic on them, never fx operations.
  (define (in-heap? a) (and (> a 4096) (#%$address-in-heap? a)))

  ;; The code object containing return address ra, or #f.
  (define cell (and layout-known? (foreign-alloc 8)))
  (define (code-at ra)
    (and (in-heap? ra)
         (let* ([toplink (foreign-ref 'uptr ra ra-toplink)] [c (- ra toplink toplink-base)])
           (and (< 0 toplink 16777216)
                (in-heap? c)
                (= (foreign-ref 'unsigned-8 c code-type-offset) code-type-byte)
                (let ([len (foreign-ref 'uptr c code-length-offset)])
                  (and (<= (+ c code-data-offset) ra) (< ra (+ c code-data-offset len))))
                (begin (foreign-set! 'uptr cell 0 c) (#%$object-ref 'scheme-object 0 cell))))))

  ;; The procedures on the stack of OS thread id, innermost first, as
  ;; strings (name and source where known), at most k; '() when the
  ;; layout is unknown or nothing could be read.  Meaningful for a thread
  ;; stopped outside Scheme.
  (define (os-thread-callers id k)
    (let ([t (and probe-frames? (find-thread id))])
      (if (not t)
          '()
          (let* ([tc (tc-address (tc-of t))]
                 [base (foreign-ref 'uptr tc tc-scheme-stack)]
                 [top (+ base (foreign-ref 'iptr tc tc-scheme-stack-size))])
            (let loop ([fp (foreign-ref 'uptr tc tc-sfp)] [k k] [acc '()])
              (if (or (fx= k 0) (not (<= base fp)) (not (< fp top)) (not (in-heap? fp)))
                  (reverse acc)
                  (let* ([ra (foreign-ref 'uptr fp 0)] [c (code-at ra)])
                    (if (not c)
                        (reverse acc)
                        (let ([size (frame-size-at ra)]
                              [acc (if (equal? (#%$code-name c) "winder-dummy") acc (cons (describe-code c) acc))])
                          (if (and (> size 0) (= 0 (bitwise-and size 7)) (<= size (- fp base)) (> fp base))
                              (loop (- fp size) (fx- k 1) acc)
                              (reverse acc)))))))))))

  ;; "name (file line N)", or "a procedure at file line N" without a name.
  (define (describe-code c)
    (let ([name (#%$code-name c)]
          [where (guard (e [#t #f])
                   (call-with-values (lambda () ((inspect/object c) 'source-path))
                     (case-lambda
                       [(path line char) (format "~a line ~a" path line)]
                       [(path char) (format "~a char ~a" path char)]
                       [_ #f])))])
      (cond
        [(and name where) (format "~a (~a)" name where)]
        [name (format "~a" name)]
        [where (format "a procedure at ~a" where)]
        [else "a procedure without a name"]))))
