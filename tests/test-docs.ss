#!chezscheme
;;; doc/reference.md documents every exported name of every public library.
;;;
;;; The libraries are found at run time: every .sls file under lib/ outside
;;; a private/ directory, named after its path (lib/srfi/:18.sls is
;;; (srfi :18)); their exports come from Chez's library-exports.  So a new
;;; library or a new export fails this test until it has an entry.
;;;
;;; The format (also described at the top of doc/reference.md):
;;;   # Library `(name ...)`        starts a library's section (to the next "# ")
;;;   ### `name`                     an entry; `a`, `b` for a family sharing one
;;;   `(name arg ...)` -> ...        the entry's first line: its signature
;;; A name that a part library exports and the library one level up
;;; re-exports ((spindle thread) -> (spindle), (util concurrent future) ->
;;; (util concurrent)) is documented once, under the library one level up.
(import (chezscheme) (harness) (text-files))

;; ---------------------------------------------------------------- files
(define lib-dir
  (let loop ([dirs (map car (library-directories))])
    (cond
      [(null? dirs) (error 'test-docs "no library directory holds spindle.sls")]
      [(file-exists? (string-append (car dirs) "/spindle.sls")) (car dirs)]
      [else (loop (cdr dirs))])))

(define reference (string-append lib-dir "/../doc/reference.md"))

(define (string-prefix? prefix s)
  (let ([k (string-length prefix)])
    (and (>= (string-length s) k) (string=? (substring s 0 k) prefix))))

(define (string-suffix? suffix s)
  (let ([k (string-length suffix)] [n (string-length s)])
    (and (>= n k) (string=? (substring s (- n k) n) suffix))))

;; Library names of the .sls files under dir (relative path components in rel).
(define (public-libraries dir rel)
  (fold-left
    (lambda (acc name)
      (let ([path (string-append dir "/" name)])
        (cond
          [(file-directory? path)
           (if (string=? name "private") acc (append acc (public-libraries path (append rel (list name)))))]
          [(string-suffix? ".sls" name)
           (append acc (list (map string->symbol
                                  (append rel (list (substring name 0 (- (string-length name) 4)))))))]
          [else acc])))
    '()
    (list-sort string<? (directory-list dir))))

(define libraries (public-libraries lib-dir '()))

;; ---------------------------------------------------------------- the manual
;; Backquoted spans of a line, in order.
(define (quoted-spans s)
  (let loop ([i 0] [acc '()])
    (let ([open (let find ([j i]) (cond [(>= j (string-length s)) #f] [(char=? (string-ref s j) #\`) j] [else (find (+ j 1))]))])
      (if (not open)
          (reverse acc)
          (let ([close (let find ([j (+ open 1)]) (cond [(>= j (string-length s)) #f] [(char=? (string-ref s j) #\`) j] [else (find (+ j 1))]))])
            (if close
                (loop (+ close 1) (cons (substring s (+ open 1) close) acc))
                (reverse acc)))))))

;; What is left of s once its backquoted spans are removed.
(define (outside-quotes s)
  (let loop ([cs (string->list s)] [in? #f] [acc '()])
    (cond
      [(null? cs) (list->string (reverse acc))]
      [(char=? (car cs) #\`) (loop (cdr cs) (not in?) acc)]
      [in? (loop (cdr cs) in? acc)]
      [else (loop (cdr cs) in? (cons (car cs) acc))])))

(define (blank? s) (for-all char-whitespace? (string->list s)))

;; Parses the manual: -> (values sections problems), sections an alist
;; library-name -> list of entries #(names first-body-line line-number).
(define (parse lines)
  (let loop ([lines lines] [n 1] [fence? #f] [lib #f] [entry #f] [sections '()] [problems '()])
    (define (close-entry sections)
      (if (and lib entry)
          (let ([s (assoc lib sections)])
            (cons (cons lib (append (if s (cdr s) '()) (list entry)))
                  (remp (lambda (x) (equal? (car x) lib)) sections)))
          sections))
    (if (null? lines)
        (values (close-entry sections) (reverse problems))
        (let ([l (car lines)] [next (lambda (fence? lib entry sections problems)
                                      (loop (cdr lines) (+ n 1) fence? lib entry sections problems))])
          (cond
            [(string-prefix? "```" l) (next (not fence?) lib entry sections problems)]
            [fence? (next fence? lib (and entry (fill-body entry l)) sections problems)]
            [(string-prefix? "# " l)
             (let ([sections (close-entry sections)])
               (if (string-prefix? "# Library `(" l)
                   (let ([name (guard (c [#t #f])
                                 (read (open-string-input-port (car (quoted-spans l)))))])
                     (if (and (list? name) (pair? name))
                         (next #f name #f (if (assoc name sections) sections (cons (list name) sections)) problems)
                         (next #f #f #f sections (cons (format "line ~a: bad library heading" n) problems))))
                   (next #f #f #f sections problems)))]
            [(string-prefix? "#" l)
             (let ([sections (close-entry sections)])
               (if (and lib (string-prefix? "### " l))
                   (let ([names (quoted-spans l)])
                     (if (and (pair? names)
                              (for-all (lambda (c) (memv c '(#\, #\space)))
                                       (string->list (outside-quotes (substring l 4 (string-length l))))))
                         (next #f lib (vector names #f n) sections problems)
                         (next #f lib #f sections
                               (cons (format "line ~a: an entry heading is ### `name` or ### `a`, `b`: ~a" n l) problems))))
                   (next #f lib #f sections problems)))]
            [else (next #f lib (and entry (fill-body entry l)) sections problems)])))))

;; Records the entry's first non-blank body line.
(define (fill-body entry l)
  (if (or (vector-ref entry 1) (blank? l))
      entry
      (vector (vector-ref entry 0) l (vector-ref entry 2))))

(define-values (sections format-problems)
  (if (file-exists? reference)
      (parse (read-lines reference))
      (values '() (list (format "~a is missing" reference)))))

(define (documented lib)
  (let ([s (assoc lib sections)])
    (if s (apply append (map (lambda (e) (vector-ref e 0)) (cdr s))) '())))

(define (exports lib)
  (guard (c [#t #f])
    (environment lib)
    (map symbol->string (library-exports lib))))

;; The library one level up, when it is public: its section documents the
;; names it re-exports.
(define (umbrella lib)
  (and (pair? (cdr lib))
       (let ([up (reverse (cdr (reverse lib)))])
         (and (member up libraries) up))))

;; ---------------------------------------------------------------- tests
(test "the public libraries are found under lib/"
  (for-each (lambda (lib) (check (list 'found lib) (member lib libraries)))
            '((spindle) (spindle thread) (util concurrent) (util concurrent future) (srfi :18))))

(test "doc/reference.md keeps the entry format"
  (check (list 'format-problems format-problems) (null? format-problems))
  (for-each
    (lambda (s)
      (for-each
        (lambda (e)
          (let ([first (vector-ref e 1)])
            (check (list 'line (vector-ref e 2) (vector-ref e 0) "the first line of an entry is its signature, in backquotes")
                   (and first (string-prefix? "`" first)))))
        (cdr s))
      (let loop ([names (documented (car s))] [seen '()])
        (unless (null? names)
          (check (list (car s) "documented twice" (car names)) (not (member (car names) seen)))
          (loop (cdr names) (cons (car names) seen)))))
    sections))

(test "every section names a public library"
  (for-each (lambda (s) (check (list 'no-such-library (car s)) (member (car s) libraries))) sections))

(for-each
  (lambda (lib)
    (test (format "every export of ~s has an entry in doc/reference.md" lib)
      (let ([names (exports lib)])
        (check (list 'library-loads lib) names)
        (check (list 'section lib (format "# Library `~s`" lib)) (assoc lib sections))
        (let* ([up (umbrella lib)]
               [up-names (if up (or (exports up) '()) '())]
               [mine (documented lib)]
               [theirs (if up (documented up) '())]
               [missing (filter (lambda (n)
                                  (not (or (member n mine)
                                           (and (member n up-names) (member n theirs)))))
                                names)]
               [stale (filter (lambda (n) (not (member n names))) mine)])
          (check (list 'undocumented lib (list-sort string<? missing)) (null? missing))
          (check (list 'documented-but-not-exported lib stale) (null? stale))))))
  libraries)

(done)
