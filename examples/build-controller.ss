#!chezscheme
;;; bin/spindle run examples/build-controller.ss
;;; The library beside this file, examples/build-controller-lib.sls, holds the
;;; places (the place form needs a library ending with lift-places).
(import (chezscheme) (build-controller-lib))
(main)
