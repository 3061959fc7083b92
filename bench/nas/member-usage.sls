#!chezscheme
;;; What one member of a benchmark used in its timed part: the calling OS
;;; thread's CPU seconds, the collector's share of them, its collections
;;; and the bytes its process allocated.  Every member measures itself, so
;;; the result notes show each member's CPU time beside the wall-clock
;;; time: a member whose CPU time is well under the wall time waited for
;;; the others (load imbalance, or a loaded machine), and GC time per
;;; member shows whether one member collects more than its share.  In
;;; threads mode the bytes are the whole process's (one heap).
(library (nas member-usage)
  (export member-timed usage-since member-usage-notes)
  (import (chezscheme) (only (nas common) nas-seconds))

  (define (seconds t) (+ (time-second t) (/ (time-nanosecond t) 1e9)))

  ;; Calls thunk; returns its value, the wall-clock seconds and the usage
  ;; (a vector: CPU s, GC CPU s, collections, bytes allocated).
  (define (member-timed thunk)
    (let ([s0 (statistics)])
      (let-values ([(v wall) (nas-seconds thunk)])
        (values v wall (usage-since s0)))))

  ;; The usage since s0, a (statistics) of the same thread.
  (define (usage-since s0)
    (let ([d (sstats-difference (statistics) s0)])
      (vector (seconds (sstats-cpu d)) (seconds (sstats-gc-cpu d)) (sstats-gc-count d)
              (sstats-bytes d))))

  ;; One note per member from the usages in member order.
  (define (member-usage-notes usages)
    (let loop ([id 0] [us usages] [acc '()])
      (if (null? us)
          (reverse acc)
          (let ([u (car us)])
            (loop (+ id 1) (cdr us)
                  (cons (format "member ~a: CPU ~,2f s, GC ~,2f s in ~a collections, allocated ~,1f MB"
                                id (vector-ref u 0) (vector-ref u 1) (vector-ref u 2)
                                (/ (vector-ref u 3) 1e6))
                        acc)))))))
