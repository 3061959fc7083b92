#!chezscheme
;;; Safety nets for blocking code: the watchdog's reports of a collection
;;; that cannot start (an OS thread stuck in a foreign call not declared
;;; __collect_safe) and of long slices (a green thread holding its worker
;;; in a blocking call), and where they go.  See
;;; (spindle private diagnostics watchdog).
(library (spindle watchdog)
  (export collect-stall-report-seconds long-slice-report-ms watchdog-report-handler)
  (import (spindle private diagnostics watchdog)))
