#!chezscheme
;;; Files whose open, reads, writes and close run on call-blocking's helper
;;; OS threads, so a thread reading a file on a slow disk or a network file
;;; system parks instead of stopping the other threads of its worker.
;;; (epoll cannot watch a regular file: it is always "ready", and a read
;;; may still wait for the disk.)
;;;
;;; The ports are Chez binary ports with a 64 KB buffer: one helper round
;;; trip (some tens of microseconds) per 64 KB.  Like other buffered Chez
;;; ports they are for one thread at a time.
(library (spindle file)
  (export open-input-file/helper open-output-file/helper file->bytevector/helper)
  (import (chezscheme) (spindle blocking)
          (only (spindle private os libc) sys-strerror errno o-cloexec)
          (only (spindle private os descriptors) blocking-open blocking-read blocking-write blocking-close
                o-rdonly o-wronly o-creat o-excl o-trunc o-append)
          (only (spindle private os memory) free foreign->bytevector! bytevector->foreign! c-string))

  ;; The blocking-* calls run on a helper while the collector may move
  ;; Scheme objects, so they see only C memory.

  (define buffer-size 65536)

  ;; Runs on a helper: (values result errno).
  (define (with-errno thunk)
    (let ([r (thunk)])
      (values r (if (< r 0) (errno) 0))))

  (define (os-error who e what path)
    (raise (condition (make-i/o-filename-error path) (make-who-condition who)
                      (make-message-condition (string-append what ": " (sys-strerror e)))
                      (make-irritants-condition (list path)))))

  ;; flags: open(2)'s; the descriptor is always close-on-exec.
  (define (open-descriptor who path flags)
    (unless (string? path) (assertion-violation who "expected a path string" path))
    (let ([cpath (c-string path)])
      (let-values ([(fd e) (call-blocking with-errno (lambda () (blocking-open cpath (fxior flags o-cloexec) #o666)))])
        (free cpath)
        (when (< fd 0) (os-error who e "cannot open" path))
        fd)))

  ;; A port whose reads run on a helper.
  (define (open-input-file/helper path)
    (let* ([fd (open-descriptor 'open-input-file/helper path o-rdonly)]
           [buf (foreign-alloc buffer-size)])
      (make-custom-binary-input-port path
        (lambda (bv start n)
          (let-values ([(r e) (call-blocking with-errno (lambda () (blocking-read fd buf (fxmin n buffer-size))))])
            (when (< r 0) (os-error 'read e "cannot read" path))
            (foreign->bytevector! buf bv start r)
            r))
        #f #f
        (lambda () (foreign-free buf) (call-blocking blocking-close fd)))))

  ;; exists: 'truncate (the default), 'append or 'error.
  (define open-output-file/helper
    (case-lambda
      [(path) (open-output-file/helper path 'truncate)]
      [(path exists)
       (let* ([mode (case exists
                      [(truncate) o-trunc] [(append) o-append] [(error) o-excl]
                      [else (assertion-violation 'open-output-file/helper "expected truncate, append or error" exists)])]
              [fd (open-descriptor 'open-output-file/helper path (fxior o-wronly o-creat mode))]
              [buf (foreign-alloc buffer-size)])
         (let ([p (make-custom-binary-output-port path
                    (lambda (bv start n)
                      (let ([n (fxmin n buffer-size)])
                        (bytevector->foreign! bv start buf n)
                        (let-values ([(r e) (call-blocking with-errno (lambda () (blocking-write fd buf n)))])
                          (when (< r 0) (os-error 'write e "cannot write" path))
                          r)))
                    #f #f
                    (lambda () (foreign-free buf) (call-blocking blocking-close fd)))])
           (set-binary-port-output-buffer! p (make-bytevector buffer-size))
           p))]))

  ;; The whole file, read on a helper.
  (define (file->bytevector/helper path)
    (let ([p (open-input-file/helper path)])
      (let ([r (get-bytevector-all p)])
        (close-port p)
        (if (eof-object? r) (bytevector) r)))))
