#!chezscheme
;;; The timed part of a benchmark member: wall-clock seconds as
;;; nas-seconds measures them, and the bytes the process allocated and
;;; the CPU seconds it used meanwhile (sstats-bytes: cumulative, unlike
;;; bytes-allocated; the CPU time tells a loaded machine from a slow
;;; run).  The CPU time is the calling thread's (member 0's); the bytes
;;; are the process's: every member in threads mode, member 0 alone in
;;; places mode.
(library (nas timed)
  (export timed allocation-note)
  (import (chezscheme) (only (nas common) nas-seconds))

  ;; Calls thunk; returns its value, the seconds, and a pair of the bytes
  ;; allocated and the CPU seconds used.
  (define (timed thunk)
    (let ([s0 (statistics)])
      (let-values ([(v seconds) (nas-seconds thunk)])
        (let* ([s1 (statistics)] [cpu (time-difference (sstats-cpu s1) (sstats-cpu s0))])
          (values v seconds
                  (cons (- (sstats-bytes s1) (sstats-bytes s0))
                        (+ (time-second cpu) (/ (time-nanosecond cpu) 1e9))))))))

  ;; The result note for timed's pair from member 0.
  (define (allocation-note usage mode)
    (format "timed part: allocated ~,1f MB (~a), CPU ~,3f s (member 0)" (/ (car usage) 1e6)
            (if (eq? mode 'places) "member 0's place" "the whole process") (cdr usage))))
