#!chezscheme
;;; The text of dump-threads: one line per live thread (name, kind, pool,
;;; state, since when, what it waits on, its custodian), the count of dead ones not yet
;;; collected, then a line per object of a registered dump kind (places).
;;; Everything is read racily, without locks: a thread that changes state
;;; during the dump gets a line saying so, never a crash.  The caller
;;; ((spindle thread)) finds the threads and writes the text.
(library (spindle private diagnostics thread-dump)
  (export dump-text dump-object-text)
  (import (chezscheme) (spindle private core atomic) (spindle private core scheduler)
          (only (spindle private core wait-targets) thread-wait-list))

  ;; Objects a dump names get a number, the same in every dump of the
  ;; process, so that two threads on one channel show it.
  (define labels (make-weak-eq-hashtable))
  (define label-lock (make-mutex))
  (define label-counter 0)
  (define (label x)
    (with-os-mutex label-lock
      (or (hashtable-ref labels x #f)
          (begin (set! label-counter (+ label-counter 1))
                 (hashtable-set! labels x label-counter)
                 label-counter))))

  (define (show x port)
    (cond
      [(or (gthread? x) (not (record? x))) (write x port)]
      [else (write x port) (fprintf port "@~a" (label x))]))

  ;; How the dump names x (records with their number: #<channel>@3).
  (define (dump-object-text x) (with-output-to-string (lambda () (show x (current-output-port)))))

  (define (pool-text p)
    (if (eq? p main-pool) "main pool" (with-output-to-string (lambda () (show p (current-output-port))))))

  (define (show-wait w port)
    (display (car w) port)
    (for-each (lambda (x) (put-char port #\space) (show x port)) (cdr w)))

  (define (custodian-text c)
    (if (eq? c 'root) "root custodian" (with-output-to-string (lambda () (show c (current-output-port))))))

  (define (thread-line t adopted owners port)
    (let* ([state (gthread-state t)] [p (gthread-pool t)]
           [waits (if (eq? state 'parked) (thread-wait-list t) '())]
           [c (hashtable-ref owners t #f)])
      (fprintf port "  thread ~s (~a, ~a): ~a"
               (gthread-name t)
               (cond [(eq? t (main-gthread)) "main"] [(memq t adopted) "adopted OS thread"]
                     [(eq? p main-pool) "coroutine"] [else "parallel"])
               (pool-text p) state)
      (when (memq state '(parked suspended))
        (fprintf port " for ~a ms" (max 0 (- (real-time) (gthread-parked-at t)))))
      (when c (fprintf port " [~a]" (custodian-text c)))
      (cond
        [(null? waits) (newline port)]
        [(null? (cdr waits)) (display ", on " port) (show-wait (car waits) port) (newline port)]
        [else
         (fprintf port ", on a choice of ~a:~%" (length waits))
         (for-each (lambda (w) (display "      " port) (show-wait w port) (newline port)) waits)])))

  ;; adopted: the adopted OS threads; objects: what the custodians hold
  ;; (threads among them); owners: object -> its custodian (see
  ;; all-managed-owners); kinds: the registered (pred . describe) pairs.
  (define (dump-text adopted objects owners kinds)
    (let* ([seen (make-eq-hashtable)]
           [threads (filter (lambda (x)
                              (and (gthread? x) (not (hashtable-ref seen x #f))
                                   (begin (hashtable-set! seen x #t) #t)))
                            (append (reverse adopted) objects))])
      (with-output-to-string
        (lambda ()
          (let ([o (current-output-port)]
                [live (filter (lambda (t) (not (gthread-dead? t))) threads)])
            (fprintf o "spindle threads (~a live):~%" (length live))
            (for-each (lambda (t)
                        (guard (c [#t (fprintf o "  thread ~s: changed during the dump~%" (gthread-name t))])
                          (thread-line t adopted owners o)))
                      live)
            (let ([dead (fx- (length threads) (length live))])
              (when (fx> dead 0) (fprintf o "  and ~a dead threads not yet collected~%" dead)))
            (for-each
              (lambda (k)
                (for-each (lambda (x)
                            (when ((car k) x)
                              (guard (c [#t (void)]) (fprintf o "  ~a~%" ((cdr k) x)))))
                          objects))
              kinds)))))))
