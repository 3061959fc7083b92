#!chezscheme
;;; The unchecked (optimize-level 3) flonum and fixnum arithmetic of BT's
;;; inner loops, whatever level the program is compiled at.  Their
;;; operands are flonums read from the fields or computed from them, and
;;; fixnum indices bounded by the grid: the checks could never fail.
(library (nas bt-unsafe)
  (export fl+ fl- fl* fl/ fx+ fx- fx*)
  (import (only (chezscheme) define-syntax syntax-rules $primitive))
  (define-syntax fl+ (syntax-rules () [(_ a ...) (#3%fl+ a ...)]))
  (define-syntax fl- (syntax-rules () [(_ a ...) (#3%fl- a ...)]))
  (define-syntax fl* (syntax-rules () [(_ a ...) (#3%fl* a ...)]))
  (define-syntax fl/ (syntax-rules () [(_ a ...) (#3%fl/ a ...)]))
  (define-syntax fx+ (syntax-rules () [(_ a ...) (#3%fx+ a ...)]))
  (define-syntax fx- (syntax-rules () [(_ a ...) (#3%fx- a ...)]))
  (define-syntax fx* (syntax-rules () [(_ a ...) (#3%fx* a ...)])))
