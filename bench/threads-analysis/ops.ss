;; ops.ss -- which Chez operations scale across 2 parallel OS threads?
;; Plain Chez (no spindle).  Each operation is called N times (default
;; 200,000) per work unit; "1 thread" runs two units in one fork-thread, "2
;; threads" one unit in each of two fork-threads (harness.ss prints ranges
;; over --runs alternated measurements, default 5).
;;   scheme --script bench/threads-analysis/ops.ss [--runs K] [--n N]
;;          [--trip BYTES] [--radix R] [--quiet-wait S] [--control OP] ['OP' ...]
;; (no OP: all of them; quote names that contain '>').  The operations are
;; measured interleaved, round by round, and each speedup is also given
;; relative to the control operation's speedup in the same round (default
;; fixnum->decimal: no lock, little allocation) -- see scale-many in
;; harness.ss.
;;   /root/.cache/spindle/chez-10.0.0/bin/scheme --script bench/threads-analysis/ops.ss ...
;; The OP names are those of ops-table.ss.
(define (here f) (let ([d (path-parent (car (command-line)))]) (if (string=? d "") f (string-append d "/" f))))
(load (here "harness.ss"))
(define N (let ([a (member "--n" (command-line-arguments))]) (if a (string->number (cadr a)) 200000)))
(load (here "ops-table.ss"))

(banner (format "ops.ss N=~a" N))
(let* ([names (let strip ([as (command-line-arguments)])
                (cond [(null? as) '()]
                      [(member (car as) '("--runs" "--n" "--trip" "--radix" "--quiet-wait" "--control")) (strip (cddr as))]
                      [else (cons (string->symbol (car as)) (strip (cdr as)))]))]
       [names (if (null? names) (map car ops) names)]
       [control (let ([a (member "--control" (command-line-arguments))])
                  (if a (string->symbol (cadr a)) 'fixnum->decimal))]
       [names (if (memq control names) names (cons control names))])
  (scale-many (map (lambda (name)
                     (let ([e (assq name ops)])
                       (unless e (error 'ops.ss "unknown operation" name))
                       e))
                   names)
              control))
(summary)
