#!chezscheme
;;; The import direction of doc/internals.md, "Layers": a library may import
;;; only libraries of its own layer or of a lower one.  Every library under
;;; lib/ must have a layer here; an edge that points up fails, except the
;;; few listed in known-upward-edges (each one is work still to do: remove
;;; it from the list when it is gone, and never add one).
(import (chezscheme) (harness))

;; Bottom up.  core and diagnostics are one layer in two folders: the
;; scheduler calls trace and watchdog, and thread-dump reads the scheduler.
;; mpi sits on places (messages travel in the place-message encoding);
;; groups (fork-join's parts, cg-ranks over MPI included) on both.
;; impl holds the implementations behind public facades (a public library
;; exports only what users call; spindle's own libraries import the rest
;; from impl), under groups: fork-join's supervisor drives places.
(define layer-order '(host os (core diagnostics) io places mpi impl groups public tools umbrella compat))

;; (spindle private LAYER name): LAYER, one of the folders under
;; lib/spindle/private/; (spindle x): public, except (spindle build), a tool; (spindle): the umbrella;
;; (util ...) and (srfi ...): compat.  #f for a library in no layer.
(define private-layers '(host os core diagnostics io places mpi groups impl tools))

;; Edges that still point up (doc/internals.md lists them).
(define known-upward-edges
  '())

(define (prefix? p l)
  (or (null? p) (and (pair? l) (equal? (car p) (car l)) (prefix? (cdr p) (cdr l)))))

(define (layer-of name)
  (cond
    [(equal? name '(spindle)) 'umbrella]
    [(prefix? '(spindle private) name)
     (and (= (length name) 4) (memq (caddr name) private-layers) (caddr name))]
    [(equal? name '(spindle build)) 'tools]
    [(and (pair? name) (eq? (car name) 'spindle) (= (length name) 2)) 'public]
    [(and (pair? name) (memq (car name) '(util srfi))) 'compat]
    [else #f]))

(define (rank layer)
  (let loop ([order layer-order] [i 0])
    (cond [(null? order) (error 'rank "no such layer" layer)]
          [(or (eq? (car order) layer) (and (pair? (car order)) (memq layer (car order)))) i]
          [else (loop (cdr order) (+ i 1))])))

;; The library name inside an import spec.
(define (spec-library spec)
  (if (and (pair? spec) (memq (car spec) '(only except prefix rename library for)))
      (if (eq? (car spec) 'library) (cadr spec) (spec-library (cadr spec)))
      spec))

(define (strip-version name) (filter symbol? name))

(define (library-form file)
  (call-with-input-file file
    (lambda (p)
      (let loop ()
        (let ([x (read p)])
          (cond [(eof-object? x) #f]
                [(and (pair? x) (eq? (car x) 'library)) x]
                [else (loop)]))))))

(define (imports-of form)
  (let ([imp (assq 'import (cddr form))])
    (map (lambda (s) (strip-version (spec-library s))) (cdr imp))))

(define (sls-files dir)
  (let loop ([dir dir])
    (apply append
      (map (lambda (f)
             (let ([path (string-append dir "/" f)])
               (cond [(file-directory? path) (loop path)]
                     [(and (> (string-length f) 4)
                           (string=? (substring f (- (string-length f) 4) (string-length f)) ".sls"))
                      (list path)]
                     [else '()])))
           (directory-list dir)))))

(define ours? (lambda (name) (and (pair? name) (memq (car name) '(spindle util srfi)))))

(define libraries
  (filter values
    (map (lambda (f) (let ([form (library-form f)]) (and form (cons (cadr form) (imports-of form)))))
         (sls-files "lib"))))

(test "every library under lib/ has a layer"
  (check-equal 'without-layer '() (filter (lambda (name) (not (layer-of name))) (map car libraries))))

(test "the libraries were found" (check-equal 'found #t (> (length libraries) 30)))

(define upward
  (apply append
    (map (lambda (l)
           (let ([from (car l)])
             (filter values
               (map (lambda (to)
                      (and (ours? to)
                           (layer-of to)
                           (> (rank (layer-of to)) (rank (layer-of from)))
                           (not (member (cons from to) known-upward-edges))
                           (format "~s -> ~s" from to)))
                    (cdr l)))))
         libraries)))

(test "no library imports from a higher layer" (check-equal 'upward-edges '() upward))

;; (spindle) loads no MPI library: (spindle mpi) registers fork-join's groups
;; over ranks as it loads (private/groups/cg-backend.sls).
(define (transitive-imports root)
  (let loop ([todo (list root)] [seen '()])
    (cond
      [(null? todo) seen]
      [(member (car todo) seen) (loop (cdr todo) seen)]
      [else (loop (append (cdr (or (assoc (car todo) libraries) '(#f))) (cdr todo))
                  (cons (car todo) seen))])))
(define (mpi-library? name)
  (exists (lambda (part) (let ([s (symbol->string part)])
                           (let find ([i 0]) (and (<= (+ i 3) (string-length s))
                                                  (or (string=? (substring s i (+ i 3)) "mpi") (find (+ i 1)))))))
          name))
(test "(spindle) imports no MPI library, directly or not"
  (let ([all (filter ours? (transitive-imports '(spindle)))])
    (check "(spindle)'s imports were found" (> (length all) 30))
    (check "(spindle mpi) is an MPI library by this test" (mpi-library? '(spindle mpi)))
    (check-equal 'mpi-libraries '() (filter mpi-library? all))))

;; The compatibility libraries (util/, srfi/) sit on the public libraries,
;; like a user's program; the private imports below are allowed (each says
;; why; doc/internals.md, "Layers"), and no other.
(define allowed-compat-private-imports
  '(;; SRFI-18 mutexes and condition variables are built on the core's
    ;; wait queues, wait targets and spin locks, and thread-terminate!
    ;; is the core's kill request
    ((srfi :18) . (spindle private core queue))
    ((srfi :18) . (spindle private core thread-requests))
    ((srfi :18) . (spindle private core atomic))
    ((srfi :18) . (spindle private core wait-targets))
    ((srfi :18) . (spindle private core sync))
    ;; with-os-mutex: a Chez mutex held with interrupts disabled (the
    ;; atomic rule), around state shared with OS threads
    ((util concurrent executor) . (spindle private core atomic))
    ((util concurrent future) . (spindle private core atomic))
    ((util concurrent thread-pool) . (spindle private core atomic))
    ;; SRFI-18 threads are spindle threads made unstarted, with an outcome,
    ;; results, a specific slot and exit hooks only spindle's libraries see;
    ;; an executor's pool threads are made the same way
    ((srfi :18) . (spindle private impl thread))
    ((util concurrent thread-pool) . (spindle private impl thread))))

(test "compatibility libraries import public libraries, and only the allowed private ones"
  (check-equal 'compat-private-imports '()
    (apply append
      (map (lambda (l)
             (if (eq? (layer-of (car l)) 'compat)
                 (map (lambda (to) (format "~s -> ~s" (car l) to))
                      (filter (lambda (to) (and (ours? to)
                                                (not (memq (layer-of to) '(public umbrella compat)))
                                                (not (member (cons (car l) to) allowed-compat-private-imports))))
                              (cdr l)))
                 '()))
           libraries))))

(test "every allowed compat import still exists"
  (check-equal 'gone '()
    (filter (lambda (e) (not (member (cdr e) (cdr (or (assoc (car e) libraries) '(#f))))))
            allowed-compat-private-imports)))

;; Public libraries import public, umbrella-free: no public library imports
;; the umbrella or a tool.
(test "public libraries import no tool and not the umbrella"
  (check-equal 'public-up '()
    (apply append
      (map (lambda (l)
             (if (eq? (layer-of (car l)) 'public)
                 (map (lambda (to) (format "~s -> ~s" (car l) to))
                      (filter (lambda (to) (memq (layer-of to) '(tools umbrella compat))) (cdr l)))
                 '()))
           libraries))))

;; A library file over 450 lines says why on its second line (issue 32):
;; ";;; Over 450 lines: ..." (split it along a real seam instead if it has one).
(define (line-count file)
  (call-with-input-file file
    (lambda (p) (let loop ([n 0]) (if (eof-object? (get-line p)) n (loop (+ n 1)))))))
(define (second-line file)
  (call-with-input-file file (lambda (p) (get-line p) (let ([l (get-line p)]) (if (eof-object? l) "" l)))))
(test "every library file over 450 lines gives its reason on line 2"
  (check-equal 'long-without-reason '()
    (filter (lambda (f)
              (and (> (line-count f) 450)
                   (let ([l (second-line f)] [k ";;; Over 450 lines: "])
                     (not (and (>= (string-length l) (string-length k))
                               (string=? (substring l 0 (string-length k)) k))))))
            (sls-files "lib"))))

;; The host layer imports only Chez.
(test "host libraries import only (chezscheme) and each other"
  (check-equal 'host-imports '()
    (filter (lambda (l) (and (eq? (layer-of (car l)) 'host)
                             (not (for-all (lambda (to) (or (equal? to '(chezscheme)) (eq? (layer-of to) 'host))) (cdr l)))))
            libraries)))

;; Chez's internals (#%name, #%$name) are reached only in the host layer.
(define (mentions-system-names? file)
  (call-with-input-file file
    (lambda (p)
      (let loop ()
        (let ([line (get-line p)])
          (cond [(eof-object? line) #f]
                [(let ([t (let trim ([i 0]) (if (and (< i (string-length line)) (char-whitespace? (string-ref line i))) (trim (+ i 1)) (substring line i (string-length line))))])
                   (and (not (and (> (string-length t) 0) (char=? (string-ref t 0) #\;)))
                        (let find ([i 0]) (and (< (+ i 1) (string-length t))
                                               (or (and (char=? (string-ref t i) #\#) (char=? (string-ref t (+ i 1)) #\%))
                                                   (find (+ i 1)))))))
                 #t]
                [else (loop)]))))))
(test "Chez internals (#%) appear only under lib/spindle/private/host"
  (check-equal 'outside-host '()
    (filter (lambda (f) (and (not (let ([k "lib/spindle/private/host/"]) (and (>= (string-length f) (string-length k)) (string=? (substring f 0 (string-length k)) k))))
                             (mentions-system-names? f)))
            (append (sls-files "lib") (sls-files "bench")))))

;; A listed upward edge that no longer exists must leave the list.
(test "every known upward edge still exists"
  (check-equal 'gone '()
    (filter (lambda (e) (not (member (cdr e) (cdr (or (assoc (car e) libraries) '(#f))))))
            known-upward-edges)))

(test "the host layer knows 9.5.8 and 10.0-10.4, and refuses the others"
  (let ()
    (define supported? (let () (import (spindle private host version)) supported-chez-version?))
    (for-each (lambda (v) (check (list "supported" v) (supported? v))) '((9 5 8) (10 0 0) (10 1 0) (10 4 1)))
    (for-each (lambda (v) (check (list "refused" v) (not (supported? v)))) '((9 5 7) (9 5 9) (10 5 0) (11 0 0)))
    (check "the running Chez is one of them"
      (supported? (call-with-values scheme-version-number list)))))

(done)
