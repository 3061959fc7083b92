#!chezscheme
;;; The timed part of a benchmark member: wall-clock seconds as
;;; nas-seconds measures them, and the bytes the process allocated
;;; meanwhile (sstats-bytes: cumulative, unlike bytes-allocated).  In
;;; threads mode the process holds every member; in places mode only its
;;; own member.
(library (nas timed)
  (export timed allocation-note)
  (import (chezscheme) (only (nas common) nas-seconds))

  ;; Calls thunk; returns its value, the seconds and the bytes allocated.
  (define (timed thunk)
    (let ([b0 (sstats-bytes (statistics))])
      (let-values ([(v seconds) (nas-seconds thunk)])
        (values v seconds (- (sstats-bytes (statistics)) b0)))))

  ;; The result note for the bytes member 0's process allocated.
  (define (allocation-note bytes mode)
    (format "allocated ~,1f MB in the timed part (~a)" (/ bytes 1e6)
            (if (eq? mode 'places) "member 0's place only" "the whole process"))))
