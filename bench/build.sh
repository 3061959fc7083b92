#!/usr/bin/env bash
# spindle bench build [--runs K] [--n N]: `spindle build -j 1` against
# `-j 2` on a generated tree of N libraries (bench/build-tree.ss, default
# 200) and on a copy of spindle's own lib/ (its libraries renamed
# (spindlex ...), since the build's worker places run on spindle's own),
# K alternated pairs (default 4), every object deleted before each run.
# For lib/ it also times what bin/spindle's compiled-object cache does: one
# scheme process compiling every library (--compile-imported-libraries).
# Prints `build.TREE.jN SECONDS s` per run (with the load average and the
# worker places' CPU seconds), a control of the parallelism the host gives
# per round, then the medians and the best runs.
set -e
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
runs=4 n=200
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    *) echo "usage: spindle bench build [--runs K] [--n N]" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
scheme --program "$root/bench/build-tree.ss" "$tmp/gen" "$n"
mkdir "$tmp/lib"
cp -r "$root/lib/." "$tmp/lib/"
find "$tmp/lib" \( -name '*.so' -o -name '*.ss' -o -name '*.html' \) -delete
mv "$tmp/lib/spindle" "$tmp/lib/spindlex"; mv "$tmp/lib/spindle.sls" "$tmp/lib/spindlex.sls"
find "$tmp/lib" -name '*.sls' -exec sed -i 's/(spindle\([ )]\)/(spindlex\1/g' {} +
(cd "$tmp/lib" && find . -name '*.sls' | LC_ALL=C sort | sed -e 's|^\./||' -e 's|\.sls$||' -e 's|/| |g' -e 's|.*|(only (&))|') |
  { echo '(import'; cat; echo ')'; } > "$tmp/all-lib.ss"
"$root/bin/spindle" libdirs > /dev/null     # the build's own objects, before timing
now() { date +%s.%N; }
results=$tmp/results; : > "$results"
run() {   # run NAME COMMAND...: wall time, the 1-minute load, the worker places' CPU (-v)
  local t0 t1 out=$tmp/out cpu
  find "$tmp/gen" "$tmp/lib" -name '*.so' -delete
  t0=$(now); "${@:2}" > "$out"; t1=$(now)
  cpu=$(awk '/^worker /{for(i=1;i<=NF;i++) if($i=="CPU") {printf "%s%s", sep, $(i+1); sep="+"}}' "$out")
  echo "$1 $(echo "$t1 - $t0" | bc)" >> "$results"
  printf "build.%s %.2f s   (load %s%s)\n" "$1" "$(echo "$t1 - $t0" | bc)" "$(cut -d' ' -f1 /proc/loadavg)" \
    "${cpu:+; worker CPU $cpu s}"
}
# The control: one CPU-bound scheme against two at once.  Two free cores
# give 2.0; a host whose scheduler caps this session's share (autogroup,
# under load) gives about 1.0, and then no -j 2 can be faster than -j 1.
echo '(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2))))) (fib 37)' > "$tmp/fib.ss"
control() {
  local t0 t1 t2
  t0=$(now); scheme -q --script "$tmp/fib.ss"; t1=$(now)
  scheme -q --script "$tmp/fib.ss" & scheme -q --script "$tmp/fib.ss"; wait; t2=$(now)
  echo "control $(echo "2 * ($t1 - $t0) / ($t2 - $t1)" | bc -l)" >> "$results"
  printf "build.control.parallelism %.2f   (one fib 37 %.2f s, two at once %.2f s)\n" \
    "$(echo "2 * ($t1 - $t0) / ($t2 - $t1)" | bc -l)" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)"
}
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for k in $(seq "$runs"); do
  control
  run gen$n.j1 "$root/bin/spindle" build -v -j 1 "$tmp/gen"
  run gen$n.j2 "$root/bin/spindle" build -v -j 2 "$tmp/gen"
  run lib.j1 "$root/bin/spindle" build -v -j 1 "$tmp/lib"
  run lib.j2 "$root/bin/spindle" build -v -j 2 "$tmp/lib"
  run lib.one-process scheme --libdirs "$tmp/lib" --compile-imported-libraries --program "$tmp/all-lib.ss"
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# medians:"
for name in control gen$n.j1 gen$n.j2 lib.j1 lib.j2 lib.one-process; do
  grep "^$name " "$results" | cut -d' ' -f2 | sort -n | awk -v n="$name" '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; u=(n=="control")?"":" s"; printf "build.%s.median %.2f%s   range %.2f-%.2f%s\n", n, m, u, a[1], a[NR], u}'
done
