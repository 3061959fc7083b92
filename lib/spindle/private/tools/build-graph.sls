#!chezscheme
;;; The parallel build's graph: the files of a tree (libraries and
;;; programs, read from their first datum), their imports among each other
;;; in dependency order (a cycle raises, naming its files), which must be
;;; compiled (by a rule the caller gives: see (spindle private tools
;;; build-stamp)), and which first (the longest chain of work first).  The
;;; controller is in (spindle build).
(library (spindle private tools build-graph)
  (export absolute source-files scan-file open-source-port condition-text library-root fail
          order-units mark-stale! set-priorities! insert-ready unit? unit-file
          unit-object unit-kind unit-name unit-imports unit-deps unit-deps-set!
          unit-dependents unit-dependents-set! unit-stale? unit-waiting unit-waiting-set!
          unit-instance unit-instance-set!)
  (import (chezscheme))

  ;; One file of the build.  kind: 'library or 'program; name: the library
  ;; name (#f for a program); imports: the library names it imports; deps and
  ;; dependents: units of the scanned set; waiting: deps not compiled yet;
  ;; priority: its size plus the largest priority among its dependents (the
  ;; longest chain of work it holds up), so long chains start first;
  ;; instance: the name of the compile its object came from (#f: none).
  (define-record-type unit
    (fields file object kind name imports
            (mutable deps) (mutable dependents) (mutable stale?)
            (mutable waiting) (mutable priority) (mutable instance))
    (protocol (lambda (new)
                (lambda (file object kind name imports)
                  (new file object kind name imports '() '() #f 0 0 #f)))))

  (define source-extensions '(".sls" ".ss" ".sps"))

  (define (string-suffix? s suffix)
    (let ([n (string-length s)] [k (string-length suffix)])
      (and (>= n k) (string=? (substring s (- n k) n) suffix))))

  (define (strip-extension file)
    (let loop ([exts source-extensions])
      (cond
        [(null? exts) file]
        [(string-suffix? file (car exts))
         (substring file 0 (- (string-length file) (string-length (car exts))))]
        [else (loop (cdr exts))])))

  (define (absolute dir)
    (let ([d (if (and (> (string-length dir) 0) (char=? (string-ref dir 0) #\/))
                 dir
                 (string-append (current-directory) "/" dir))])
      (let trim ([d d])
        (if (and (> (string-length d) 1) (string-suffix? d "/"))
            (trim (substring d 0 (- (string-length d) 1)))
            d))))

  ;; Every source file under dir, sorted; hidden entries and symbolic links
  ;; to directories are skipped.
  (define (source-files dir)
    (let walk ([dir dir])
      (fold-left
        (lambda (acc name)
          (let ([path (string-append dir "/" name)])
            (cond
              [(char=? (string-ref name 0) #\.) acc]
              [(file-directory? path)
               (if (file-symbolic-link? path) acc (append acc (walk path)))]
              [(exists (lambda (e) (string-suffix? name e)) source-extensions)
               (append acc (list path))]
              [else acc])))
        '()
        (list-sort string<? (directory-list dir)))))

  ;; A textual input port on file, past a script line ("#! " or "#!/").
  (define (open-source-port file)
    (let ([in (open-input-file file)])
      (when (and (eqv? (lookahead-char in) #\#)
                 (let ([line (get-line in)])
                   (not (and (>= (string-length line) 3)
                             (char=? (string-ref line 1) #\!)
                             (memv (string-ref line 2) '(#\space #\/))))))
        (set-port-position! in 0))
      in))

  (define (first-datum file) (call-with-port (open-source-port file) read))

  (define (library-reference? x)
    (and (pair? x) (list? x) (symbol? (car x))))

  ;; The library named by an import set (R6RS 7.1 and Chez's forms).
  (define (import-set-library s)
    (cond
      [(not (library-reference? s)) #f]
      [(and (eq? (car s) 'library) (= (length s) 2)) (strip-version (cadr s))]
      [(and (memq (car s) '(only except prefix rename for)) (pair? (cdr s)) (pair? (cadr s)))
       (import-set-library (cadr s))]
      [else (strip-version s)]))

  (define (strip-version ref)
    (and (library-reference? ref)
         (let ([r (reverse ref)])
           (if (list? (car r)) (reverse (cdr r)) ref))))

  ;; -> a unit, #f for a file that is neither a library nor a program
  ;; (a file of definitions, say), or a string: the read error.
  (define (scan-file file)
    (let* ([failure (list 'failure)]
           [d (guard (c [#t (set-car! failure (condition-text c)) failure]) (first-datum file))])
      (cond
        [(eq? d failure) (car failure)]
        [(and (pair? d) (eq? (car d) 'library) (list? d) (>= (length d) 4)
              (library-reference? (cadr d))
              (pair? (cadddr d)) (eq? (car (cadddr d)) 'import))
         (make-unit file (string-append (strip-extension file) ".so") 'library
                    (strip-version (cadr d)) (import-names (cdr (cadddr d))))]
        [(and (pair? d) (eq? (car d) 'import) (list? d))
         (make-unit file (string-append (strip-extension file) ".so") 'program
                    #f (import-names (cdr d)))]
        [else #f])))

  (define (import-names sets)
    (fold-right (lambda (s acc) (let ([n (import-set-library s)]) (if n (cons n acc) acc)))
                '() sets))

  ;; A condition as display-condition writes it, less its "Exception: ".
  (define (condition-text c)
    (let ([s (call-with-string-output-port
               (lambda (p) (if (condition? c) (display-condition c p) (write c p))))])
      (cond
        [(string-prefix? "Exception: " s) (substring s 11 (string-length s))]
        [(string-prefix? "Exception " s) (substring s 10 (string-length s))]
        [else s])))

  (define (string-prefix? prefix s)
    (let ([k (string-length prefix)])
      (and (>= (string-length s) k) (string=? (substring s 0 k) prefix))))

  ;; The directory that holds a library as Chez's search finds it
  ;; (ROOT/a/b/c.sls for (a b c)), or #f when its file is elsewhere.
  (define (library-root u)
    (let ([tail (apply string-append (map (lambda (part) (format "/~a" part)) (unit-name u)))]
          [base (strip-extension (unit-file u))])
      (and (string-suffix? base tail)
           (substring base 0 (- (string-length base) (string-length tail))))))

  (define (fail who fmt . args)
    (raise (condition (make-error) (make-who-condition who)
                      (make-message-condition (apply format fmt args)))))

  ;; Units in dependency order; a cycle raises, naming its files.
  (define (order-units units)
    (for-each (lambda (u) (unit-waiting-set! u (length (unit-deps u)))) units)
    (let loop ([ready (filter (lambda (u) (zero? (unit-waiting u))) units)] [done '()])
      (if (null? ready)
          (let ([left (filter (lambda (u) (positive? (unit-waiting u))) units)])
            (unless (null? left) (report-cycle left))
            (reverse done))
          (let ([u (car ready)])
            (loop (fold-left
                    (lambda (acc d)
                      (unit-waiting-set! d (- (unit-waiting d) 1))
                      (if (zero? (unit-waiting d)) (cons d acc) acc))
                    (cdr ready) (unit-dependents u))
                  (cons u done))))))

  ;; Every unit of left waits for one of left: follow deps until one repeats.
  (define (report-cycle left)
    (let walk ([u (car left)] [path '()])
      (if (memq u path)
          ;; path holds the walk newest first: the cycle is path up to u
          (let ([cycle (let take ([p path]) (if (eq? (car p) u) (list u) (cons (car p) (take (cdr p)))))])
            (fail 'parallel-build "import cycle: ~{~a~^ imports ~}"
                  (map unit-file (append (reverse cycle) (list u)))))
          (walk (find (lambda (d) (positive? (unit-waiting d))) (unit-deps u)) (cons u path)))))

  ;; Marks what must be compiled, in dependency order: a unit that
  ;; imports one compiled this time, or whose object (current? u) says is
  ;; not up to date (called once u's dependencies are known up to date).
  (define (mark-stale! ordered current?)
    (for-each
      (lambda (u) (unit-stale?-set! u (or (exists unit-stale? (unit-deps u)) (not (current? u)))))
      ordered))

  (define (set-priorities! ordered)
    (for-each
      (lambda (u)
        (unit-priority-set! u (+ (file-length* (unit-file u))
                                 (fold-left (lambda (m d) (if (unit-stale? d) (max m (unit-priority d)) m))
                                            0 (unit-dependents u)))))
      (reverse ordered)))

  (define (file-length* f)
    (guard (c [#t 0]) (call-with-port (open-file-input-port f) port-length)))

  (define (insert-ready u ready)
    (cond
      [(null? ready) (list u)]
      [(> (unit-priority u) (unit-priority (car ready))) (cons u ready)]
      [else (cons (car ready) (insert-ready u (cdr ready)))]))
)
