#!/usr/bin/env bash
# The mutation check of (spindle simulation): puts back, one at a time,
# races fixed earlier in spindle's history (and one the simulation found),
# and records how many seeds simulate-many needed to find each and how
# many runs a plain stress loop of real threads needed.  Run from a clean
# tree (it restores lib/ with git checkout after each mutant):
#   tests/support/sim-mutants/run.sh [SEEDS [STRESS-RUNS [STRESS-SECONDS]]]
set -u
cd "$(dirname "$0")/../../.."
seeds=${1:-1000}; runs=${2:-1000}; secs=${3:-120}
git diff --quiet -- lib || { echo "run.sh: lib/ has uncommitted changes" >&2; exit 1; }

# mutate FILE OLD NEW: replaces the one occurrence of OLD in FILE
mutate() {
  python3 - "$@" <<'PY'
import sys
f, old, new = sys.argv[1:4]
s = open(f).read()
assert s.count(old) == 1, (f, old)
open(f, 'w').write(s.replace(old, new))
PY
}

check() {  # NAME SCENARIO
  local libdirs; libdirs=$(bin/spindle libdirs)
  for mode in sim stress; do
    if [ $mode = sim ]; then a="$seeds"; else a="$runs $secs"; fi
    timeout $((secs + 600)) "${SCHEME:-scheme}" --libdirs "$libdirs" --program tests/support/sim-mutants/scenarios.ss "$2" $mode $a 2>/dev/null \
      | grep -a "^$2 $mode" | sed "s/^/$1: /"
  done
  git checkout -q -- lib
}

mutate lib/spindle/private/core/thread-requests.sls "(if (and preempted? (raised-before? t cs))" "(if #f"
check "f74085b cleanup cancelled again" cleanup-recancelled

mutate lib/spindle/private/impl/semaphore.sls "    (before-take! (not try-fail))" "    (void)"
check "9a988c7 take, then cancelled" take-then-cancelled

mutate lib/spindle/private/core/thread-requests.sls "(or (not preempted?) (fx>= (fx- (coarse-ms) (gthread-parked-at t)) cancel-run-ms))" "#t"
check "8fa44d4 value dropped" value-dropped

mutate lib/spindle/private/core/sync.sls "[(_ t) (when (gthread-cancel t) (check-cancel! t))]" "[(_ t) (void)]"
check "4a18807 no checkpoint" loop-uncancelled

mutate lib/spindle/private/impl/synchronized-port.sls "(call-without-breaks (lambda () (inner sp lk who p any-owner? arg ...)))" "(inner sp lk who p any-owner? arg ...)"
check "bfeed0a write twice" write-twice

mutate lib/spindle/private/impl/thread.sls "    (gthread-finisher-set! t finishing)" ""
check "new: kill in exit hooks" kill-in-exit-hooks
