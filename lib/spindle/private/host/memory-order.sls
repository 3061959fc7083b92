#!chezscheme
;;; memory-order-acquire and memory-order-release: Chez 10's own where it
;;; has them (so a program importing (chezscheme) and (spindle) sees one
;;; binding, not two), else full fences through a compare-and-set (on
;;; x86-64 a locked instruction, which orders both ways).
(library (spindle private host memory-order)
  (export memory-order-acquire memory-order-release)
  (import (chezscheme))

  (meta-cond
    [(memq 'memory-order-acquire (library-exports '(chezscheme))) (begin)]
    [else
     (define fence-box (box 0))
     (define (memory-order-acquire) (box-cas! fence-box 0 0) (void))
     (define (memory-order-release) (box-cas! fence-box 0 0) (void))]))
