#!chezscheme
;;; Chez 10's collector sweeps in parallel: at a collection that other
;;; threads wait for, it starts helper OS threads (up to 16), which stay
;;; for the life of the process and never run Scheme code.  spindle counts
;;; the OS threads it knows (the deadlock watch's "is every OS thread
;;; ours?"), so it counts these too: a collection runs with every other
;;; Scheme thread stopped, and the OS threads that appear during one are
;;; the collector's.  Chez 9.5.8 collects in the requesting thread alone.
(library (spindle private host collector)
  (export collect-generation collector-helper-threads)
  (import (chezscheme) (spindle private host version))

  (define helpers 0)
  (define helpers-max 16)

  (define (os-thread-count)
    (guard (c [#t #f]) (length (directory-list "/proc/self/task"))))

  ;; (collect g), counting the collector's new helper threads.  Chez
  ;; starts at most one for each other Scheme thread that waits at a
  ;; collection, so the OS threads are counted (twice a directory listing,
  ;; ~12 us) only while fewer helpers are known than other Scheme threads.
  (define (collect-generation g)
    (if (and chez-10? (fx< helpers (fxmin helpers-max (fx- (length (#%$thread-list)) 1))))
        (let ([before (os-thread-count)])
          (collect g)
          (let ([after (os-thread-count)])
            (when (and before after (fx> after before))
              (set! helpers (fxmin helpers-max (fx+ helpers (fx- after before)))))))
        (collect g)))

  ;; The collector's helper OS threads started so far.
  (define (collector-helper-threads) helpers))
