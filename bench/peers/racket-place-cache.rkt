#lang racket/base
;; racket-place-cache.rkt -- what the Racket peers that start places share:
;; a place loads its module's compiled code, so before any place starts, the
;; peer compiles its own module (and this one) to .zo files under a cache root
;; in the temp directory, never beside the source, and creates its places
;; with a compiled-file-roots list that finds them.  Without it every place
;; would compile the peer from source, and place creation would time Racket's
;; expander.
;;
;; compiler/cm is deliberately not used: it would also recompile installed
;; collections whose .zo stamps it distrusts into the cache root.
(require racket/file)
(provide compiled-roots-for-places)

;; Compiles src (a module path, as variable-reference->module-source gives)
;; and this module to .zo files under TEMP/spindle-CACHE-NAME-zo unless they
;; are there and fresh; returns the compiled-file-roots for places, or #f
;; (with a note on stderr) on failure.
(define (compiled-roots-for-places src cache-name)
  (define self (variable-reference->module-source (#%variable-reference)))
  (with-handlers ([exn:fail? (lambda (e)
                               (eprintf "~a: no .zo cache (~a); places load from source\n"
                                        cache-name (exn-message e))
                               #f)])
    (define root (build-path (find-system-path 'temp-dir)
                             (string-append "spindle-" cache-name "-zo")))
    (compile-to-root! self root)
    (compile-to-root! src root)
    ;; Appended last: installed collections keep using their usual roots
    ;; (Debian, e.g., uses (same "/usr/lib/racket/compiled")).
    (append (current-compiled-file-roots) (list root))))

(define (compile-to-root! src root)
  (define-values (dir name _) (split-path (simplify-path (path->complete-path src))))
  (define zo-dir (build-path (reroot-path dir root) "compiled"))
  (define zo (build-path zo-dir (path-add-extension name #".zo")))
  (unless (and (file-exists? zo)
               (>= (file-or-directory-modify-seconds zo)
                   (file-or-directory-modify-seconds src)))
    (define code
      (parameterize ([current-namespace (make-base-namespace)]
                     [read-accept-reader #t]
                     [read-accept-lang #t]
                     [current-load-relative-directory dir])
        (call-with-input-file src
          (lambda (in)
            (port-count-lines! in)
            (compile (namespace-syntax-introduce (read-syntax src in)))))))
    (make-directory* zo-dir)
    (define tmp (make-temporary-file "rkt~a.zo" #f zo-dir))
    (call-with-output-file tmp #:exists 'truncate
      (lambda (out) (write code out)))
    (rename-file-or-directory tmp zo #t)))
