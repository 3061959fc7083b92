#!chezscheme
;;; The parallel build controller of the Places paper (Tew et al., DLS 2011):
;;; worker places ask for jobs over their channels, and the controller answers
;;; whichever asks first, by syncing on all of them at once.
(library (build-controller-lib)
  (export main)
  (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle))

  ;; The "modules" to build, with a made-up cost (the work is counting primes).
  (define jobs
    '((reader . 3000000) (expander . 9000000) (compiler . 12000000) (assembler . 4000000)
      (linker . 5000000) (runtime . 8000000) (gc . 7000000) (ffi . 2000000) (threads . 6000000)
      (places . 9000000) (events . 3000000) (ports . 4000000) (numbers . 10000000) (strings . 2000000)))

  (define (count-primes n)
    (let ([sieve (make-bytevector n 1)])
      (let loop ([i 2] [count 0])
        (cond
          [(>= i n) count]
          [(fx= (bytevector-u8-ref sieve i) 1)
           (do ([j (* i i) (+ j i)]) ((>= j n)) (bytevector-u8-set! sieve j 0))
           (loop (+ i 1) (+ count 1))]
          [else (loop (+ i 1) count)]))))

  ;; A worker: say it is ready, then build each job it is sent and report,
  ;; until it is told to stop.  Its first message is its number.
  (define (worker ch)
    (let ([me (place-channel-get ch)])
      (let loop ([report (list 'ready me)])
        (let ([job (place-channel-put/get ch report)])
          (unless (eq? job 'stop)
            (let* ([t0 (real-time)] [primes (count-primes (cdr job))])
              (loop (list 'built me (car job) primes (- (real-time) t0)))))))))

  (define (show report)
    (when (eq? (car report) 'built)
      (apply printf "worker ~a built ~a: ~a primes in ~a ms\n" (cdr report))))

  (define (main)
    (let* ([n (max 2 (min 4 (processor-count)))]
           [workers (map (lambda (i) (place ch (worker ch))) (iota n))]
           [t0 (real-time)])
      (for-each place-channel-put workers (iota n))
      ;; Hand the next job to whichever worker reports first.  handle-evt runs
      ;; its procedure in tail position of sync, so this loop runs in constant space.
      (let loop ([jobs jobs])
        (unless (null? jobs)
          (apply sync
                 (map (lambda (w)
                        (handle-evt w (lambda (report)
                                        (show report)
                                        (place-channel-put w (car jobs))
                                        (loop (cdr jobs)))))
                      workers))))
      ;; Every worker still owes the report of its last job: take it, then stop it.
      (for-each (lambda (w)
                  (show (place-channel-get w))
                  (place-channel-put w 'stop)
                  (place-wait w))
                workers)
      (printf "~a jobs built by ~a workers in ~a ms\n" (length jobs) n (- (real-time) t0))))

  (lift-places (build-controller-lib)))
