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
. ./lock-count-report.sh
report_counts 16 "${SCHEME:-scheme}"
