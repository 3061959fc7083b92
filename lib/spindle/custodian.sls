#!chezscheme
;;; Custodians, as in Racket.  The manual: doc/reference.md,
;;; "(spindle custodian)".  A facade over (spindle private impl custodian), which the
;;; other implementations under private/impl/ import.
(library (spindle custodian)
  (export make-custodian custodian? current-custodian custodian-shutdown-all
          custodian-shut-down? custodian-managed-list make-custodian-kind custodian-register!
          custodian-unregister! custodian-try-register! all-managed-objects all-managed-owners)
  (import (spindle private impl custodian)))
