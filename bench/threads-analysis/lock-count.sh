#!/usr/bin/env bash
# lock-count.sh -- how many times does each operation acquire a Chez runtime
# mutex (S_mutex_acquire), which mutex, and who calls it?  Attaches gdb (with
# lock-count.py) to lock-count.ss, which runs the operation 10,000 times, and
# prints the counts minus the `none` baseline, per call.  Needs gdb with Python.
#   bench/threads-analysis/lock-count.sh ['OP' ...]          # Chez 9.5.8 (scheme); quote names with '>'
#   SCHEME=/root/.cache/spindle/chez-10.0.0/bin/scheme bench/threads-analysis/lock-count.sh [OP ...]
cd "$(dirname "$0")"
SCHEME=${SCHEME:-scheme}
ops=${*:-number->string number->string-radix number->string-flonum number->string-bignum format-d format-a fresh-port reused-port fixnum->decimal string->number parameterize-radix set-thread-param read-thread-param set-global-param list-of-4 make-string-7 equal-hash-fixnum equal-table-set eq-table-set string->symbol-old string->symbol-new}
count() {
  "$SCHEME" --script lock-count.ss "$1" & local pid=$!
  sleep 0.7
  gdb -p $pid -batch -x lock-count.py 2>/dev/null | sed -n 's/^RESULT //p'
  wait $pid 2>/dev/null
}
. ./lock-count-report.sh
report_counts 24 "$("$SCHEME" --version 2>&1)"
