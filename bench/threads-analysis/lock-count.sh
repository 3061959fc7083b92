#!/usr/bin/env bash
# lock-count.sh -- how many times does each operation acquire a Chez runtime
# mutex (S_mutex_acquire; in 9.5.8 nearly always the global S_tc_mutex)?
# Attaches gdb to lock-count.ss, counts breakpoint hits over 10,000 calls and
# prints the count minus the `none` baseline, per call.  Needs gdb.
cd "$(dirname "$0")"
ops=${*:-number->string number->string-radix number->string-flonum number->string-bignum format string->number string-port-write open-output-string hashtable-set! parameter}
count() {
  scheme --script lock-count.ss "$1" & local pid=$!
  sleep 0.7
  gdb -p $pid -batch -ex 'break S_mutex_acquire' -ex 'ignore 1 100000000' -ex continue \
      -ex 'info breakpoints' 2>/dev/null | sed -n 's/.*already hit \([0-9]*\) time.*/\1/p'
  wait $pid 2>/dev/null
}
base=$(count none)
for op in $ops; do
  n=$(count "$op")
  awk -v op="$op" -v n="$n" -v b="$base" 'BEGIN { printf "%-24s %6d acquisitions / 10000 calls = %.3f per call\n", op, n - b, (n - b) / 10000 }'
done
