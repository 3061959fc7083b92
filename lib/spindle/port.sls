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
;;; reader, or lock around the sync.
(library (spindle port)
  (export read-bytes-evt read-bytes-avail!-evt read-line-evt read-bytes-line-evt
          write-bytes-evt eof-evt port-ready-evt)
  (import (chezscheme) (spindle private fd-port) (spindle private poller)
          (only (spindle private sync) always-evt never-evt wrap-evt guard-evt replace-evt))

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

  ;; Ready when out can take bytes; writes bv[start, end) and flushes.
  ;; Result: the count.
  (define write-bytes-evt
    (case-lambda
      [(bv p) (write-bytes-evt bv p 0 (if (bytevector? bv) (bytevector-length bv) 0))]
      [(bv p start end)
       (unless (bytevector? bv) (assertion-violation 'write-bytes-evt "expected a bytevector" bv))
       (unless (and (fixnum? start) (fixnum? end) (fx<= 0 start end (bytevector-length bv)))
         (assertion-violation 'write-bytes-evt "bad range" start end))
       (check-output 'write-bytes-evt p)
       (wrap-evt (port-ready-evt p)
                 (lambda (_) (put-bytevector p bv start (fx- end start)) (flush-output-port p) (fx- end start)))]))

  ;; The port as an evt (ready when a read or write would not block).
  (define (port-ready-evt p)
    (unless (port? p) (assertion-violation 'port-ready-evt "expected a port" p))
    (wrap-evt p values)))
