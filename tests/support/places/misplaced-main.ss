#!chezscheme
;;; Run by tests/test-places.ss: a library with a misplaced lift-places must
;;; not disturb a correct library expanded after it.  Prints one line per check.
(import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle)
        (places misplaced) (places after-misplaced))
(let ([p (after-place)])
  (printf "after: ~s\n"
    (guard (c [#t (list 'raised (condition-message c))])
      (place-channel-put p 'hello)
      (sync/timeout 10 p)))
  (printf "after-code: ~s\n" (place-wait p)))
(printf "misplaced: ~s\n"
  (guard (c [(assertion-violation? c) (list 'assertion (condition-who c))]
            [#t (list 'other (condition-message c))])
    (misplaced-place)
    'no-error))
