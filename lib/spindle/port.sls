#!chezscheme
;;; Port events with Racket's names.  Every port is itself an evt (ready
;;; when a read or write would not block; result: the port).  These evts
;;; do the read or write when chosen; on spindle's socket and pipe ports
;;; they are ready only when that read would not block, so
;;; (sync/timeout 5 (read-line-evt in)) is a read with a timeout.  Other
;;; ports (string ports, files) are always ready.
;;;
;;; With several threads reading one port, a read chosen as ready may find
;;; the bytes taken by another reader and wait for more: give each port one
;;; reader, or lock around the sync.  The same holds for writers and the
;;; write evts.
;;;
;;; Output readiness is asked of the kernel each time (poll(2), and the
;;; free space of the descriptor's buffer for write-bytes-evt), never taken
;;; from the last epoll edge, so a full pipe or a peer that stopped reading
;;; is not ready, and a write evt that is not chosen has written nothing.
;;;
;;; make-pipe makes an OS pipe whose two ends are parking ports.
(library (spindle port)
  (export read-bytes-evt read-bytes-avail!-evt read-line-evt read-bytes-line-evt
          write-bytes-evt write-bytes-avail-evt eof-evt port-ready-evt make-pipe)
  (import (chezscheme) (spindle private io fd-port) (spindle private io poller)
          (only (spindle private os descriptors) sys-close make-nonblocking-pipe set-pipe-capacity!)
          (only (spindle private core sync) always-evt never-evt wrap-evt guard-evt replace-evt)
          (only (spindle private core sim-hooks) sim-here?)
          (only (spindle private io memory-pipe) make-memory-pipe))

  (define (check-input who p)
    (unless (and (input-port? p) (binary-port? p))
      (assertion-violation who "expected a binary input port" p)))

  (define (check-output who p)
    (unless (and (output-port? p) (binary-port? p))
      (assertion-violation who "expected a binary output port" p)))

  ;; Ready when (enough? p) holds of p's buffered bytes, or no more bytes
  ;; can come without a wait being pointless (end of file, full buffer,
  ;; closed port); then (finish p) gives the result.
  (define (buffered-evt p enough? finish)
    (if (not (fd-port? p))
        (wrap-evt always-evt (lambda (_) (finish p)))
        (guard-evt
          (lambda ()
            (let loop ()
              (if (and (not (port-closed? p)) (enough? p))
                  (wrap-evt always-evt (lambda (_) (finish p)))
                  (case (port-fill! p)
                    [(data) (loop)]
                    [(again)
                     (replace-evt (fd-ready-evt (handle-rec (fd-port-handle p)) 'read #t)
                                  (lambda (_) (buffered-evt p enough? finish)))]
                    [else (wrap-evt always-evt (lambda (_) (finish p)))])))))))

  (define (buffered-count p) (if (fd-port? p) (port-buffered-count p) 0))
  (define (buffered-has? p byte) (port-buffered-has? p byte))

  ;; Result: up to k bytes (fewer only at end of file), or eof.
  (define (read-bytes-evt k p)
    (unless (and (fixnum? k) (fx>= k 0)) (assertion-violation 'read-bytes-evt "expected a non-negative count" k))
    (check-input 'read-bytes-evt p)
    (buffered-evt p (lambda (p) (fx>= (buffered-count p) k))
                  (lambda (p) (if (fx= k 0) (bytevector) (get-bytevector-n p k)))))

  ;; Reads what is there (at least one byte) into bv[start, end); result:
  ;; the count, or eof.
  (define read-bytes-avail!-evt
    (case-lambda
      [(bv p) (read-bytes-avail!-evt bv p 0 (if (bytevector? bv) (bytevector-length bv) 0))]
      [(bv p start end)
       (unless (bytevector? bv) (assertion-violation 'read-bytes-avail!-evt "expected a bytevector" bv))
       (unless (and (fixnum? start) (fixnum? end) (fx<= 0 start end (bytevector-length bv)))
         (assertion-violation 'read-bytes-avail!-evt "bad range" start end))
       (check-input 'read-bytes-avail!-evt p)
       (buffered-evt p (lambda (p) (fx> (buffered-count p) 0))
                     (lambda (p) (if (fx= start end) 0 (get-bytevector-some! p bv start (fx- end start)))))]))

  ;; mode: 'linefeed (the default), 'return-linefeed or 'any: the line
  ;; ends at \n, at \r\n (dropped), or at either.  Result: bytes, or eof.
  (define (read-line-bytes p mode)
    (let-values ([(out get) (open-bytevector-output-port)])
      (let loop ([any? #f])
        (let ([b (get-u8 p)])
          (cond
            [(eof-object? b) (if any? (get) b)]
            [(fx= b 10) (let ([line (get)])
                          (if (and (eq? mode 'return-linefeed) (fx> (bytevector-length line) 0)
                                   (fx= 13 (bytevector-u8-ref line (fx- (bytevector-length line) 1))))
                              (let ([r (make-bytevector (fx- (bytevector-length line) 1))])
                                (bytevector-copy! line 0 r 0 (bytevector-length r))
                                r)
                              line))]
            [(and (fx= b 13) (eq? mode 'any))
             (let ([n (lookahead-u8 p)]) (when (eqv? n 10) (get-u8 p)))
             (get)]
            [else (put-u8 out b) (loop #t)])))))

  (define (line-evt who p mode convert)
    (unless (memq mode '(linefeed return-linefeed any))
      (assertion-violation who "expected linefeed, return-linefeed or any" mode))
    (check-input who p)
    (buffered-evt p (lambda (p) (or (buffered-has? p 10) (and (eq? mode 'any) (buffered-has? p 13))))
                  (lambda (p) (let ([l (read-line-bytes p mode)]) (if (eof-object? l) l (convert l))))))

  (define read-line-evt
    (case-lambda
      [(p) (read-line-evt p 'linefeed)]
      [(p mode) (line-evt 'read-line-evt p mode utf8->string)]))

  (define read-bytes-line-evt
    (case-lambda
      [(p) (read-bytes-line-evt p 'linefeed)]
      [(p mode) (line-evt 'read-bytes-line-evt p mode values)]))

  ;; Ready when end of file is the next thing to read; result eof.  While
  ;; bytes come first it is not ready.
  (define (eof-evt p)
    (check-input 'eof-evt p)
    (replace-evt (buffered-evt p (lambda (p) (fx> (buffered-count p) 0)) values)
                 (lambda (p)
                   (if (and (not (and (fd-port? p) (fx> (buffered-count p) 0))) (port-eof? p))
                       (wrap-evt always-evt (lambda (_) (eof-object)))
                       never-evt))))

  (define (check-range who bv start end)
    (unless (bytevector? bv) (assertion-violation who "expected a bytevector" bv))
    (unless (and (fixnum? start) (fixnum? end) (fx<= 0 start end (bytevector-length bv)))
      (assertion-violation who "bad range" start end)))

  ;; All or nothing: ready when the kernel would take all of bv[start, end)
  ;; now (its buffer's free space, estimated low, holds them; or the buffer
  ;; is empty), and only then writes them, so choosing it never waits for
  ;; the peer; if it is not chosen, nothing is written.  A bytevector larger
  ;; than the buffer is ready once the buffer is empty, and its write may
  ;; then wait for the peer to read the rest.  Result: the count.
  (define write-bytes-evt
    (case-lambda
      [(bv p) (write-bytes-evt bv p 0 (if (bytevector? bv) (bytevector-length bv) 0))]
      [(bv p start end)
       (check-range 'write-bytes-evt bv start end)
       (check-output 'write-bytes-evt p)
       (let ([n (fx- end start)])
         (wrap-evt (if (fd-port? p) (fd-port-output-ready-evt p #t (fxmax n 1)) always-evt)
                   (lambda (_) (put-bytevector p bv start n) (flush-output-port p) n)))]))

  ;; Ready when the kernel would take some bytes now; writes as many of
  ;; bv[start, end) as it takes at once (at least one; with another thread
  ;; writing to the port meanwhile, it may wait for room).  Result: the
  ;; count (0 for an empty range, ready at once).  Other ports take all.
  (define write-bytes-avail-evt
    (case-lambda
      [(bv p) (write-bytes-avail-evt bv p 0 (if (bytevector? bv) (bytevector-length bv) 0))]
      [(bv p start end)
       (check-range 'write-bytes-avail-evt bv start end)
       (check-output 'write-bytes-avail-evt p)
       (let ([n (fx- end start)])
         (cond
           [(fx= n 0) (wrap-evt always-evt (lambda (_) 0))]
           [(fd-port? p)
            (wrap-evt (fd-port-output-ready-evt p #t 1)
                      (lambda (_) (fd-port-write-some! 'write-bytes-avail-evt p bv start n)))]
           [else (wrap-evt always-evt (lambda (_) (put-bytevector p bv start n) (flush-output-port p) n))]))]))

  ;; (make-pipe [limit #f] [input-name 'pipe] [output-name 'pipe]) ->
  ;; (values in out): an OS pipe, non-blocking and close-on-exec, whose ends
  ;; are parking ports.  limit: #f for the kernel's default capacity (64
  ;; KiB on Linux), or a positive count: the pipe then holds at least that
  ;; many bytes (the kernel rounds up to a power of two pages, at most
  ;; /proc/sys/fs/pipe-max-size unless privileged) before a write waits.
  (define make-pipe
    (case-lambda
      [() (make-pipe #f 'pipe 'pipe)]
      [(limit) (make-pipe limit 'pipe 'pipe)]
      [(limit in-name) (make-pipe limit in-name 'pipe)]
      [(limit in-name out-name)
       (unless (or (not limit) (and (fixnum? limit) (fx> limit 0)))
         (assertion-violation 'make-pipe "expected #f or a positive count" limit))
       (if (sim-here?)
           ;; in a simulation, a pipe in memory: its wake-ups follow the seed
           (make-memory-pipe (or limit 65536) (port-name-string in-name) (port-name-string out-name))
           (make-os-pipe limit in-name out-name))]))

  (define (make-os-pipe limit in-name out-name)
       (let-values ([(r w) (make-nonblocking-pipe)])
         (when (fx< r 0) (raise-os-error 'make-pipe r "cannot make a pipe"))
         (when limit
           (let ([e (set-pipe-capacity! w limit)])
             (when (fx< e 0)
               (sys-close r) (sys-close w)
               (raise-os-error 'make-pipe e "cannot set the pipe's capacity" limit))))
         (let*-values ([(in _) (guard (c [#t (sys-close w) (raise c)])
                                 (make-fd-ports r (port-name-string in-name) 'pipe #t #f))]
                       [(_ out) (make-fd-ports w (port-name-string out-name) 'pipe #f #t)])
           (values in out))))

  (define (port-name-string x)
    (cond [(string? x) x] [(symbol? x) (symbol->string x)] [else (format "~a" x)]))

  ;; The port as an evt (ready when a read or write would not block: for an
  ;; output port, when the kernel would take a byte now).
  (define (port-ready-evt p)
    (unless (port? p) (assertion-violation 'port-ready-evt "expected a port" p))
    (wrap-evt p values)))
