#!/usr/bin/env bash
# spindle bench nas-racket DIR [--class A] [--bench is,cg,mg,ft] [--np N] [--runs K]:
# spindle's NAS benchmarks beside the Racket places port of NAS from the
# Places paper (its racketNAS directory, DIR: not a Debian package, so it is
# given by path), in one run, alternating the two K times (default 3).
# Serial always; with --np N also both places versions at N workers.
# Prints spindle's own lines (bench nas), then
#   peer.racket.nas.BENCH.CLASS.serial SECONDS s     best of the K runs
#   nas.BENCH.CLASS.serial-vs-racket RATIO x         spindle / Racket (< 1: faster)
# and the same with places.npN when --np is given.  Racket's time is the
# one the port reports (its timed section, like spindle's).  EP is not in
# the port.
set -e
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
usage() { echo "usage: spindle bench nas-racket RACKET-NAS-DIR [--class S|W|A] [--bench is,cg,mg,ft,sp,bt,lu] [--np N] [--runs K]" >&2; exit 2; }
[ $# -ge 1 ] || usage
dir=$1; shift
class=A benches=is,cg,mg,ft np= runs=3
while [ $# -gt 0 ]; do
  case "$1" in
    --class) class=$2; shift 2 ;;
    --bench) benches=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) usage ;;
  esac
done
[ -f "$dir/is.rkt" ] || { echo "nas-racket: no racketNAS port in $dir (is.rkt missing)" >&2; exit 2; }
command -v racket > /dev/null || { echo "nas-racket: racket is not installed (apt-get install racket)" >&2; exit 2; }
echo "# NAS class $class, spindle beside Racket's places port ($dir), $(racket --version | head -1), best of $runs alternated runs, $(nproc) processors, load $(cut -d' ' -f1 /proc/loadavg)"
for b in ${benches//,/ }; do raco make "$dir/$b.rkt"; done
best() { sort -g | head -1; }
for b in ${benches//,/ }; do
  configs="serial"; [ -n "$np" ] && configs="serial places"
  for c in $configs; do
    sp=() rk=()
    for k in $(seq "$runs"); do
      if [ "$c" = serial ]; then
        line=$("$root/bin/spindle" bench nas --class "$class" --bench "$b" --mode serial --quiet-wait 0 | grep "^nas\.$b\.$class\.serial\.np1 ")
        rarg=SERIAL; name=serial
      else
        line=$("$root/bin/spindle" bench nas --class "$class" --bench "$b" --mode places --np "$np" --quiet-wait 0 | grep "^nas\.$b\.$class\.places\.np$np ")
        rarg="NP=$np"; name=places.np$np
      fi
      echo "$line"
      sp+=("$(echo "$line" | cut -d' ' -f2)")
      out=$(cd "$dir" && racket -tm "$b.rkt" "CLASS=$class" "$rarg" 2>&1)
      echo "$out" | grep -q "Verification *= *Successful" || { echo "peer.racket.nas.$b.$class.$name-verification FAILED"; continue; }
      t=$(echo "$out" | sed -n 's/.*Time in seconds *= *\([0-9.e+-]*\).*/\1/p' | head -1)
      echo "peer.racket.nas.$b.$class.$name $t s"
      rk+=("$t")
    done
    s=$(printf '%s\n' "${sp[@]}" | best); r=$(printf '%s\n' "${rk[@]}" | best)
    [ -n "$s" ] && [ -n "$r" ] && awk "BEGIN{printf \"nas.$b.$class.$name-vs-racket %.2f x   (spindle %s s, Racket %s s: best of $runs)\\n\", $s / $r, \"$s\", \"$r\"}"
  done
done
