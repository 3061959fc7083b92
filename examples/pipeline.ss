#!chezscheme
;;; bin/spindle run examples/pipeline.ss
;;; The fork-join group lives in examples/pipeline-lib.sls (fork-join, like
;;; place, needs a library ending with lift-places).
(import (chezscheme) (pipeline-lib))
(main)
