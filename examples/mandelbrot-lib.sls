#!chezscheme
;;; Mandelbrot set with fork-join: the members split the rows with CGfor and
;;; write their pixels into one shared byte string; member 0 draws it.
(library (mandelbrot-lib)
  (export main)
  (import (except (chezscheme) thread? sleep make-parameter parameterize)
          (spindle) (spindle fork-join))

  (define width 64)
  (define height 24)
  (define max-iterations 5000)      ; high, so that the work is worth the places

  ;; Iterations before the orbit of c = x + yi escapes (max-iterations: never).
  (define (escape-time x y)
    (let loop ([zr 0.0] [zi 0.0] [k 0])
      (cond
        [(fx= k max-iterations) k]
        [(fl> (fl+ (fl* zr zr) (fl* zi zi)) 4.0) k]
        [else (loop (fl+ (fl- (fl* zr zr) (fl* zi zi)) x) (fl+ (fl* 2.0 (fl* zr zi)) y) (fx+ k 1))])))

  ;; a character per escape time: the slower the escape, the darker
  (define (shade k)
    (cond
      [(fx= k max-iterations) #\@]
      [(fx< k 3) #\space] [(fx< k 5) #\.] [(fx< k 7) #\:] [(fx< k 10) #\-] [(fx< k 15) #\=]
      [(fx< k 25) #\+] [(fx< k 50) #\*] [(fx< k 150) #\#] [else #\%]))

  (define (draw image)
    (do ([row 0 (fx+ row 1)]) ((fx= row height))
      (do ([col 0 (fx+ col 1)]) ((fx= col width))
        (write-char (integer->char (shared-bytes-ref image (fx+ (fx* row width) col)))))
      (newline)))

  (define (main)
    (let ([image (make-shared-bytes (* width height) (char->integer #\?))]
          [np (max 2 (min 4 (processor-count)))]
          [t0 (real-time)])
      ;; args go to every member as messages; a shared byte string by reference
      (let ([rows (fork-join np cg ([image image])
                    ;; block partition: member m gets a run of consecutive rows
                    (let ([mine 0])
                      (CGfor cg ([row 0 height])
                        (set! mine (fx+ mine 1))
                        (do ([col 0 (fx+ col 1)]) ((fx= col width))
                          (let ([x (fl+ -2.2 (fl* 3.0 (fl/ (fixnum->flonum col) (fixnum->flonum width))))]
                                [y (fl+ -1.2 (fl* 2.4 (fl/ (fixnum->flonum row) (fixnum->flonum height))))])
                            (shared-bytes-set! image (fx+ (fx* row width) col)
                                               (char->integer (shade (escape-time x y)))))))
                      ;; after a barrier every row is written; member 0 draws
                      (CG-n0-only cg (draw image))
                      mine))])
        (printf "~a members drew rows ~s in ~a ms\n" np rows (- (real-time) t0)))))

  (lift-places (mandelbrot-lib)))
