#!chezscheme
;;; The template process of places (see lib/spindle/private/impl/place.sls).
;;;
;;; Single-threaded, so fork is safe.  Descriptor 3 is the control socket
;;; to the creating process (blocking).  Requests, as fasl frames:
;;;   #(spawn id module start cwd libdirs exts optimize-level) + 1 descriptor
;;;   #(signal id signo)
;;; Reports: #(spawned id pid), #(exited id code), #(reaped id) (after exited).
;;; A place writes its completion value (one byte) on a pipe of its own as
;;; soon as it has one, and may live on while its queued messages drain:
;;; `exited` goes out at the first of that byte and the process's end.
(import (chezscheme) (only (spindle private os descriptors) close-fd make-pipe read-octet) (only (spindle private os memory) free malloc memcpy-from-bytevector! memcpy-to-bytevector!) (only (spindle private os polling) poll-readable) (only (spindle private os processes) die-with-parent! fork-process own-pid parent-pid pidfd-open pidfd-signal wait-exit-code) (only (spindle private os signals) block-place-signals!) (only (spindle private os sockets) recv-chunk send-frame-chunk) (spindle private places frame)
        (only (spindle private impl place) place-child-main))

(define ctl 3)
(define zygote-pid (own-pid))
(define children '())                   ; list of child records

;; A place forked here: its id (the creating process's), process id and
;; pidfd, the read end of its report pipe (#f once that ended), and whether
;; its exit was reported.
(define-record-type child
  (fields id pid pidfd (mutable report-fd) (mutable reported?))
  (protocol (lambda (new) (lambda (id pid pidfd report-fd) (new id pid pidfd report-fd #f)))))

;; place-break's signals stay blocked here and in every fork, so one sent
;; before a new place reads them is pending, not lost; Ctrl-C at a terminal
;; reaches the whole process group, and the creating process decides what
;; happens to places.
(block-place-signals!)

(define (read-exactly! buf n)
  ;; -> list of descriptors received, or #f at end of stream
  (let loop ([got 0] [fds '()])
    (if (fx= got n)
        fds
        (let-values ([(r more) (recv-chunk ctl (+ buf got) (fx- n got))])
          (cond
            [(or (eq? r 'closed) (eqv? r 0)) #f]
            [(eq? r 'again) (loop got (append fds more))]
            [else (loop (fx+ got r) (append fds more))])))))

;; -> (message . fds), or #f at end of stream
(define (read-request)
  (let* ([h (malloc frame-header-size)] [fds (read-exactly! h frame-header-size)])
    (and fds
         (let* ([n (frame-length h)] [p (malloc (fxmax n 1))] [more (read-exactly! p n)])
           (free h)
           (and more
                (let ([bv (make-bytevector n)])
                  (memcpy-to-bytevector! bv p n)
                  (free p)
                  (cons (fasl-read (open-bytevector-input-port bv)) (append fds more))))))))

(define (report! msg)
  (let-values ([(port get) (open-bytevector-output-port)])
    (fasl-write msg port)
    (let* ([bv (get)] [n (bytevector-length bv)] [size (fx+ frame-header-size n)] [buf (malloc size)])
      (frame-header-set! buf n 0 kind-fasl)
      (memcpy-from-bytevector! (+ buf frame-header-size) bv n)
      (let loop ([sent 0])
        (when (fx< sent size)
          (let ([r (send-frame-chunk ctl (+ buf sent) (fx- size sent) '())])
            (cond
              [(fixnum? r) (loop (fx+ sent r))]
              [(eq? r 'again) (loop sent)]
              [else (shut-down!)]))))
      (free buf))))

(define (shut-down!)
  (for-each (lambda (c) (pidfd-signal (child-pidfd c) 9)) children)
  (for-each (lambda (c) (wait-exit-code (child-pid c))) children)
  (exit 0))

;; Compiles (not invokes) the place's library here, once for all forks,
;; then moves the whole heap into the static generation: otherwise every
;; fork's first collections would copy the compiled libraries again
;; (about 10 ms of a new place's time).
(define preloaded (make-hashtable equal-hash equal?))
(define collected-static? #f)            ; spindle itself, before the first fork

;; A place whose module is a file is loaded in the fork, but its young
;; generation still starts small only if spindle is static (place.sls).
(define (preload! module)
  (let ([lib (cond [(vector? module) (vector-ref module 1)] [(pair? module) module] [else #f])])
    (when (or (not collected-static?) (and lib (not (hashtable-contains? preloaded lib))))
      (when lib
        (hashtable-set! preloaded lib #t)
        (guard (e [#t #f]) (environment lib)))
      (collect (collect-maximum-generation) 'static)
      (set! collected-static? #t))))

(define (spawn! id module start cwd libdirs exts opt fd)
  (library-directories libdirs)
  (library-extensions exts)
  (optimize-level opt)
  (preload! module)
  (let-values ([(report-in report-out) (make-pipe 'spawn)])
    (let ([pid (fork-process)])
      (cond
        [(fx= pid 0)
         (close-fd ctl)
         (close-fd report-in)
         (for-each (lambda (c)
                     (close-fd (child-pidfd c))
                     (when (child-report-fd c) (close-fd (child-report-fd c))))
                   children)
         (die-with-parent!)
         (unless (fx= (parent-pid) zygote-pid) (exit 1))
         (place-child-main fd report-out module start cwd)]
        [(fx< pid 0)
         (close-fd fd) (close-fd report-in) (close-fd report-out)
         (report! (vector 'exited id 1))
         (report! (vector 'reaped id))]
        [else
         (close-fd fd) (close-fd report-out)
         (set! children (cons (make-child id pid (pidfd-open pid) report-in) children))
         (report! (vector 'spawned id pid))]))))

(define (report-exit! c code)
  (unless (child-reported? c)
    (child-reported?-set! c #t)
    (report! (vector 'exited (child-id c) code))))

;; The place's completion byte, or the end of its pipe.
(define (read-report! c)
  (let ([b (read-octet (child-report-fd c))])
    (if b
        (report-exit! c b)
        (begin (close-fd (child-report-fd c)) (child-report-fd-set! c #f)))))

(define (reap! c)
  (let ([code (wait-exit-code (child-pid c))])
    (close-fd (child-pidfd c))
    (when (child-report-fd c) (close-fd (child-report-fd c)))
    (set! children (remq c children))
    (report-exit! c code)
    (report! (vector 'reaped (child-id c)))))

(let loop ()
  (let ([ready (poll-readable
                 (cons ctl (fold-left (lambda (acc c)
                                        (let ([acc (cons (child-pidfd c) acc)])
                                          (if (child-report-fd c) (cons (child-report-fd c) acc) acc)))
                                      '() children)))])
    (for-each
      (lambda (fd)
        (if (fx= fd ctl)
            (let ([req (read-request)])
              (unless req (shut-down!))
              (let ([msg (car req)])
                (case (vector-ref msg 0)
                  [(spawn)
                   (apply spawn! (append (cdr (vector->list msg)) (list (car (cdr req)))))]
                  [(signal)
                   (let ([c (find (lambda (c) (eqv? (child-id c) (vector-ref msg 1))) children)])
                     (when c (pidfd-signal (child-pidfd c) (vector-ref msg 2))))])))
            (cond
              [(find (lambda (c) (eqv? (child-report-fd c) fd)) children) => read-report!]
              [(find (lambda (c) (eqv? (child-pidfd c) fd)) children) => reap!])))
      ready))
  (loop))
