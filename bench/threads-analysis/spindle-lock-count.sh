#!/usr/bin/env bash
# spindle-lock-count.sh -- S_mutex_acquire calls per operation on spindle's
# own paths (spindle-lock-count.ss under gdb with lock-count.py), minus the
# `none` baseline.  Needs gdb with Python.
#   bench/threads-analysis/spindle-lock-count.sh [OP ...]
#   SCHEME=/root/.cache/spindle/chez-10.0.0/bin/scheme bench/threads-analysis/spindle-lock-count.sh
cd "$(dirname "$0")"
here=$(pwd)
ops=${*:-yield sync-1 sync-2 sync-3 parameterize param-read}
count() {
  ../../bin/spindle run spindle-lock-count.ss "$1" & local pid=$!
  # bin/spindle execs Chez, so $pid is the program; wait until it reaches its pause
  local k=0
  while [ ! -f /tmp/spindle-lock-count.$pid.ready ] && [ $k -lt 600 ]; do sleep 0.05; k=$((k+1)); done
  rm -f /tmp/spindle-lock-count.$pid.ready
  gdb -p $pid -batch -x "$here/lock-count.py" 2>/dev/null | sed -n 's/^RESULT //p'
  wait $pid 2>/dev/null
}
echo "# ${SCHEME:-scheme}, per call over 10,000 calls, minus the 'none' baseline"
base=$(count none)
echo "# baseline: $base"
for op in $ops; do
  r=$(count "$op")
  awk -v op="$op" -v r="$r" -v b="$base" 'BEGIN {
    split(r, a, " "); split(b, c, " ");
    for (i = 1; i <= 4; i++) { split(a[i], x, "="); split(c[i], y, "="); v[i] = (x[2] - y[2]) / 10000 }
    sub(/^callers=/, "", a[5]);
    printf "%-16s tc_mutex %6.3f  alloc_mutex %6.3f  other %6.3f  tryacquire %6.3f   (raw callers: %s)\n", op, v[1], v[2], v[3], v[4], a[5] }'
done
