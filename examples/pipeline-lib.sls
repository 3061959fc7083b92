#!chezscheme
;;; A five-column pipeline with fork-join and CGpipeline: member m gets each
;;; row from member m-1, adds column m, and passes the row on to member m+1.
;;; Rows flow through the members one after another, so the five stages work
;;; on different rows at the same time.
(library (pipeline-lib)
  (export main)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join))

  (define (factors n)
    (let loop ([n n] [d 2] [acc '()])
      (cond
        [(= n 1) (reverse acc)]
        [(> (* d d) n) (reverse (cons n acc))]
        [(zero? (remainder n d)) (loop (quotient n d) d (cons d acc))]
        [else (loop n (+ d 1) acc)])))

  ;; column m of a row, from the columns before it
  (define (column m row)
    (case m
      [(1) (let ([n (car row)]) (* n n))]              ; n^2
      [(2) (+ (cadr row) 1)]                           ; n^2 + 1
      [(3) (factors (caddr row))]                      ; its prime factors
      [(4) (= (length (cadddr row)) 1)]))              ; is n^2 + 1 prime?

  (define (main)
    (let ([rows (fork-join 5 cg ([count 12])
                  (let loop ([n 1] [mine '()])
                    (if (> n count)
                        (reverse mine)
                        ;; member 0 starts the row (n); the others extend their predecessor's
                        (let ([row (CGpipeline cg row n
                                     (if (= (CG-id cg) 0) (list row) (append row (list (column (CG-id cg) row)))))])
                          (loop (+ n 1) (cons row mine))))))])
      (printf "~5a ~7a ~9a ~16a ~a\n" "n" "n^2" "n^2+1" "factors" "prime?")
      (for-each (lambda (row) (apply printf "~5a ~7a ~9a ~16a ~a\n" row))
                (vector-ref rows 4))
      ;; fork-join's vector: what each member made of the last row
      (printf "\nlast row at each member:\n~s\n" (vector-map (lambda (mine) (car (last-pair mine))) rows))))

  (lift-places (pipeline-lib)))
