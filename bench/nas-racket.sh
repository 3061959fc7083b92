#!/usr/bin/env bash
# Serial NAS beside Racket's places port of NAS (racketNAS, the Places
# paper's port; not vendored: give the path of a checkout), in the same
# conditions: for each benchmark, K rounds of racketNAS SERIAL then
# `bin/spindle bench nas --mode serial`, and the CPU seconds of each timed
# part, best of K.  CPU, not wall: the host is shared, and a loaded host
# stretches wall time by whatever else runs.
#
#   bench/nas-racket.sh RACKETNAS_DIR [--bench cg,mg,...] [--runs K]
#
# Kernels run at class A, SP, BT and LU at class W (the issue's classes).
# racketNAS's timer reads wall-clock milliseconds; the script runs a copy
# of the port (in a temporary directory) whose timer reads the process's
# CPU milliseconds instead, nothing else changed.  racketNAS's CG stops its
# timer twice from the same start (at the end of its body and after the
# spawn returns), so the time it prints is twice its timed part: the script
# halves it.  spindle's figure is the "CPU ... s" of the run's notes
# (member 0's thread).
# Output: one line per figure, `nas-racket.BENCH.CLASS.racket-cpu S s`,
# `...spindle-cpu S s`, `...ratio X x` (spindle / Racket), then a table.
set -e
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
usage() { echo "usage: bench/nas-racket.sh RACKETNAS_DIR [--bench is,ft,cg,mg,sp,bt,lu] [--runs K]" >&2; exit 2; }
[ $# -ge 1 ] || usage
src=$1; shift
[ -f "$src/cg.rkt" ] && [ -f "$src/timer.rkt" ] || { echo "nas-racket: no racketNAS (cg.rkt, timer.rkt) in $src" >&2; exit 2; }
benches=is,ft,cg,mg,sp,bt,lu; runs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) benches=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) usage ;;
  esac
done
command -v racket >/dev/null || { echo "nas-racket: racket is not installed" >&2; exit 2; }

work=$(mktemp -d /tmp/nas-racket.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$src"/. "$work"/
sed -i 's/(current-inexact-milliseconds)/(current-process-milliseconds)/g' "$work/timer.rkt"
grep -q current-process-milliseconds "$work/timer.rkt" || { echo "nas-racket: timer.rkt not as expected" >&2; exit 2; }

# min of two decimals ("" = none yet)
best() { if [ -z "$1" ]; then echo "$2"; else awk -v a="$1" -v b="$2" 'BEGIN { print (b < a) ? b : a }'; fi; }

rows=()
for b in ${benches//,/ }; do
  case $b in is|ft|cg|mg) class=A ;; sp|bt|lu) class=W ;; *) echo "nas-racket: no benchmark $b" >&2; exit 2 ;; esac
  (cd "$work" && raco make "$b.rkt")
  r_best=; s_best=
  for ((i = 1; i <= runs; i++)); do
    out=$(cd "$work" && racket -tm "$b.rkt" CLASS=$class SERIAL 2>&1)
    echo "$out" | grep -q "Verification *= *Successful" || { echo "nas-racket: racketNAS $b.$class did not verify" >&2; echo "$out" >&2; exit 1; }
    r=$(echo "$out" | sed -n 's/.*Time in seconds *= *\([0-9.]*\).*/\1/p' | head -1)
    [ "$b" = cg ] && r=$(awk -v t="$r" 'BEGIN { print t / 2 }')
    out=$("$root/bin/spindle" bench nas --class $class --bench $b --mode serial --quiet-wait 0 2>&1) ||
      { echo "nas-racket: spindle $b.$class failed" >&2; echo "$out" >&2; exit 1; }
    s=$(echo "$out" | sed -n 's/.*CPU \([0-9.]*\) s.*/\1/p' | head -1)
    echo "# $b.$class round $i: racket $r s, spindle $s s CPU (load $(cut -d' ' -f1 /proc/loadavg))"
    r_best=$(best "$r_best" "$r"); s_best=$(best "$s_best" "$s")
  done
  ratio=$(awk -v s="$s_best" -v r="$r_best" 'BEGIN { printf "%.2f", s / r }')
  echo "nas-racket.$b.$class.racket-cpu $r_best s"
  echo "nas-racket.$b.$class.spindle-cpu $s_best s"
  echo "nas-racket.$b.$class.ratio $ratio x"
  rows+=("| $b.$class | $r_best | $s_best | $ratio |")
done
echo "#"
echo "# | benchmark | Racket 8.7 CPU s | spindle CPU s | spindle / Racket |"
echo "# |---|---|---|---|"
for row in "${rows[@]}"; do echo "# $row"; done
