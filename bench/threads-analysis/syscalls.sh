#!/usr/bin/env bash
# syscalls.sh -- what the second thread costs the kernel: for each OP, runs
# one-op.ss (N calls x 2) in 1 thread and in 2 threads, REPEAT times each,
# under /usr/bin/time (real, user, system, voluntary context switches), then
# once under strace -f -c (futex calls and errors).
#   bench/threads-analysis/syscalls.sh [OP ...]        (default: number->string fixnum->decimal)
#   SCHEME=/root/.cache/spindle/chez-10.0.0/bin/scheme N=1000000 REPEAT=3 bench/threads-analysis/syscalls.sh ...
cd "$(dirname "$0")"
SCHEME=${SCHEME:-scheme}; N=${N:-1000000}; REPEAT=${REPEAT:-3}
ops=${*:-number->string fixnum->decimal}
echo "# $("$SCHEME" --version 2>&1)  N=$N  load: $(cut -d' ' -f1-3 /proc/loadavg)"
for op in $ops; do
  for mode in 1 2; do
    for r in $(seq "$REPEAT"); do
      /usr/bin/time -f "   time: %e s real  %U user  %S sys  %w voluntary switches  %c involuntary" \
        "$SCHEME" --script one-op.ss $mode "$op" "$N" 2>&1 | sed 's/^/  /'
    done
    strace -f -c -e trace=futex -o /tmp/syscalls.$$ "$SCHEME" --script one-op.ss $mode "$op" "$N" > /dev/null
    awk -v m=$mode '/futex/ { printf "   strace (%s thread(s)): %s futex calls, %s errors, %s s in futex\n", m, $4, ($5 ~ /^[0-9]+$/ ? $5 : 0), $2 }' /tmp/syscalls.$$
  done
done
rm -f /tmp/syscalls.$$
