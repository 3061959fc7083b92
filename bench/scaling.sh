#!/usr/bin/env bash
# spindle bench scaling [--np 1,2,4,8,16] [--out DIR] [--parts nas,apps,threads,build,mpi]:
# how places, parallel threads and the parallel build scale with the worker
# count, for a many-core machine.  Parts, in this order (each one's lines
# also go to DIR/scaling-PART.txt when --out is given):
#   nas      NAS kernels IS, CG, MG, FT, EP at class A, serial and places
#   apps     NAS SP, BT, LU at class W, serial and places
#   threads  NAS CG, MG, FT at class A in threads mode (one shared heap)
#   build    spindle build -j N of a generated tree of 400 libraries
#   mpi      NAS kernels IS, CG, MG, FT, EP at class A, serial, places and
#            MPI ranks (spindle mpirun; needs Open MPI): not a default part
# The NAS parts print bench nas's lines (nas.BENCH.CLASS.MODE.npN ...,
# -speedup against serial); build prints build.gen400.jN SECONDS s and
# build.gen400.jN-speedup against -j 1.
set -e
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
nps=1,2,4,8,16 out= parts=nas,apps,threads,build
while [ $# -gt 0 ]; do
  case "$1" in
    --np) nps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    *) echo "usage: spindle bench scaling [--np 1,2,4,8,16] [--out DIR] [--parts nas,apps,threads,build,mpi]" >&2; exit 2 ;;
  esac
done
spindle=$root/bin/spindle
echo "# scaling: $(nproc) processors, np $nps, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
part() {   # part NAME COMMAND...: runs COMMAND, its output also to DIR/scaling-NAME.txt
  case ",$parts," in *",$1,"*) ;; *) return 0 ;; esac
  echo "# part $1"
  if [ -n "$out" ]; then "${@:2}" 2>&1 | tee "$out/scaling-$1.txt"; else "${@:2}" 2>&1; fi
}
build_scaling() {
  local tmp n t0 t1 base=
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  scheme --program "$root/bench/build-tree.ss" "$tmp/gen" 400
  "$spindle" libdirs > /dev/null
  for n in ${nps//,/ }; do
    find "$tmp/gen" -name '*.so' -delete
    t0=$(date +%s.%N); "$spindle" build -j "$n" "$tmp/gen" > /dev/null; t1=$(date +%s.%N)
    t=$(awk "BEGIN{print $t1 - $t0}")
    [ -z "$base" ] && base=$t
    awk "BEGIN{printf \"build.gen400.j$n %.2f s\\nbuild.gen400.j$n-speedup %.2f x\\n\", $t, $base / $t}"
  done
}
part nas "$spindle" bench nas --class A --bench is,cg,mg,ft,ep --mode serial,places --np "$nps" --quiet-wait 0
part apps "$spindle" bench nas --class W --bench sp,bt,lu --mode serial,places --np "$nps" --quiet-wait 0
part threads "$spindle" bench nas --class A --bench cg,mg,ft --mode threads --np "$nps" --quiet-wait 0
part build build_scaling
part mpi "$spindle" bench nas --class A --bench is,cg,mg,ft,ep --mode serial,places,mpi --np "$nps" --quiet-wait 0
