#!chezscheme
;;; What each object of the build was compiled from, and the up-to-date
;;; rule (doc/reference.md, "(spindle build)").  Beside FILE.so the build
;;; keeps FILE.dep, written after the object, holding:
;;; - the compile settings;
;;; - the SHA-1 of the source and of each file it includes (an `include`
;;;   form in its text), read when the compile starts: an edit made while
;;;   it compiles leaves a record that no longer matches;
;;; - for each library of the build it imports, the instance it was
;;;   compiled against (the name of that library's own compile);
;;; - its own instance: a name unique to this compile;
;;; - the object's modification time and size, as the compile left it: an
;;;   object another build (or anything else) wrote since does not match.
;;; An object is up to date only if its record matches all of these now.
(library (spindle private tools build-stamp)
  (export compile-inputs new-instance write-stamp! read-stamp stamp-instance stamp-current?)
  (import (chezscheme)
          (only (spindle private tools build-graph) open-source-port)
          (spindle private tools sha1))

  (define version 1)

  ;; X.so -> X.dep
  (define (stamp-file object)
    (string-append (substring object 0 (fx- (string-length object) 3)) ".dep"))

  ;; What the compile of src starts from: (values source-sha1 includes),
  ;; includes a list of (file . sha1-or-#f), every file an include form
  ;; of src (or of a file it includes) names, found as Chez finds it:
  ;; through dirs (the compile's source-directories), else beside the
  ;; including file.
  (define (compile-inputs src dirs)
    (let ([seen (make-hashtable string-hash string=?)])
      (define (includes-of file acc)
        (fold-left
          (lambda (acc name)
            (let ([f (resolve name (cons (path-parent file) dirs))])
              (if (hashtable-ref seen f #f)
                  acc
                  (begin
                    (hashtable-set! seen f #t)
                    (includes-of f (cons (cons f (file-sha1-hex f)) acc))))))
          acc (include-names file)))
      (values (file-sha1-hex src) (reverse (includes-of src '())))))

  (define (resolve name dirs)
    (if (path-absolute? name)
        name
        (or (find file-exists? (map (lambda (d) (string-append d "/" name)) dirs))
            (string-append (car dirs) "/" name))))

  ;; The strings of the (include "file") forms anywhere in file's data;
  ;; none if it cannot be read (its compile reports that).
  (define (include-names file)
    (guard (c [#t '()])
      (call-with-port (open-source-port file)
        (lambda (in)
          (let loop ([acc '()])
            (let ([d (read in)])
              (if (eof-object? d) (reverse acc) (loop (find-includes d acc)))))))))

  (define (find-includes d acc)
    (cond
      [(and (pair? d) (eq? (car d) 'include) (pair? (cdr d)) (string? (cadr d)) (null? (cddr d)))
       (cons (cadr d) acc)]
      [(pair? d)
       (let loop ([x d] [acc acc])
         (if (pair? x) (loop (cdr x) (find-includes (car x) acc)) (find-includes x acc)))]
      [(vector? d) (fold-left (lambda (acc x) (find-includes x acc)) acc (vector->list d))]
      [else acc]))

  (define (new-instance) (gensym->unique-string (gensym)))

  (define (object-state object)
    (let ([t (file-modification-time object)])
      (list (time-second t) (time-nanosecond t)
            (call-with-port (open-file-input-port object) port-length))))

  ;; After object was written: its record, written under a temporary
  ;; name and renamed.  imports: ((library-name . instance) ...).
  (define (write-stamp! object settings source includes imports instance)
    (let* ([stamp (stamp-file object)]
           [tmp (format "~a.~a.tmp" stamp (new-instance))])
      (call-with-output-file tmp
        (lambda (out)
          (write (list 'spindle-build-stamp version settings source includes imports instance
                       (object-state object))
                 out)
          (newline out)))
      (rename-file tmp stamp)))

  ;; object's record, or #f (none, unreadable, another version).
  (define (read-stamp object)
    (let ([s (guard (c [#t #f]) (call-with-input-file (stamp-file object) read))])
      (and (list? s) (fx= (length s) 8) (eq? (car s) 'spindle-build-stamp) (eqv? (cadr s) version)
           s)))

  (define (stamp-settings s) (list-ref s 2))
  (define (stamp-source s) (list-ref s 3))
  (define (stamp-includes s) (list-ref s 4))
  (define (stamp-imports s) (list-ref s 5))
  (define (stamp-instance s) (list-ref s 6))
  (define (stamp-object s) (list-ref s 7))

  ;; The up-to-date rule for the object of src, given its record s, the
  ;; build's settings, and (library-name . instance) of each library of
  ;; the build it imports (all up to date).  The object must also be no
  ;; older than its source: Chez loads the source instead otherwise.
  (define (stamp-current? s settings src object imports)
    (and s
         (file-exists? object)
         (guard (c [(i/o-error? c) #f])
           (and (time>=? (file-modification-time object) (file-modification-time src))
                (equal? (object-state object) (stamp-object s))))
         (equal? (stamp-settings s) settings)
         (equal? (stamp-source s) (file-sha1-hex src))
         (for-all (lambda (i) (equal? (cdr i) (file-sha1-hex (car i)))) (stamp-includes s))
         (for-all (lambda (i) (equal? (assoc (car i) (stamp-imports s)) i)) imports))))
