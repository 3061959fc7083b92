#!chezscheme
;;; bin/spindle run examples/mandelbrot.ss
;;; The fork-join group lives in examples/mandelbrot-lib.sls (fork-join, like
;;; place, needs a library ending with lift-places).
(import (chezscheme) (mandelbrot-lib))
(main)
