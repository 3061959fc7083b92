#!/usr/bin/env bash
# The mpi suite: `bin/spindle bench mpi [--quick]` (bench/MPI.md).
# Two ranks on this machine, over shared memory (btl self,vader) and over
# TCP on loopback (btl tcp,self): spindle's rmpi-send/rmpi-recv beside a
# plain C program built here with mpicc (bench/mpi/pingpong.c), and
# spindle's place channels beside both.  Prints `mpi.NAME VALUE UNIT`.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
iters=20000; big=200
for a in "$@"; do
  case $a in
    --quick) iters=2000; big=20 ;;
    *) echo "usage: spindle bench mpi [--quick]" >&2; exit 2 ;;
  esac
done
command -v mpicc >/dev/null 2>&1 || { echo "spindle bench mpi: mpicc not found (apt-get install libopenmpi-dev)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/pingpong" "$root/bench/mpi/pingpong.c" || exit 1

# figure FILE NAME: the value of NAME in FILE
figure() { awk -v n="$2" '$1 == n { print $2 }' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "nan" }'; }

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), iters $iters, 1 MiB x $big"
for btl in self,vader tcp,self; do
  name=${btl%%,self}; name=${name#self,}; [ "$name" = vader ] && name=shm
  # the settings spindle mpirun makes, for the C program too
  OMPI_MCA_btl=$btl OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo \
    OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-cma} \
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$work/pingpong" "$iters" "$big" >"$work/c.$name" 2>&1 \
    || { echo "mpi.$name: the C ping-pong failed:"; cat "$work/c.$name"; continue; }
  OMPI_MCA_btl=$btl "$root/bin/spindle" mpirun -np 2 "$root/bench/mpi/pingpong.ss" mpi "$iters" "$big" >"$work/s.$name" 2>&1 \
    || { echo "mpi.$name: spindle's ping-pong failed:"; cat "$work/s.$name"; continue; }
  c_rtt=$(figure "$work/c.$name" pingpong-8b-us); s_rtt=$(figure "$work/s.$name" pingpong-8b-us)
  c_bw=$(figure "$work/c.$name" bandwidth-1mb-mbs); s_bw=$(figure "$work/s.$name" bandwidth-1mb-mbs)
  echo "mpi.$name.pingpong-8b-us $s_rtt us median (C $c_rtt us)"
  echo "mpi.$name.pingpong-8b-mean-us $(figure "$work/s.$name" pingpong-8b-mean-us) us (C $(figure "$work/c.$name" pingpong-8b-mean-us) us)"
  echo "mpi.$name.pingpong-8b-vs-c $(ratio "$s_rtt" "$c_rtt") x (target 1.3)"
  echo "mpi.$name.bandwidth-1mb $s_bw MB/s (C $c_bw MB/s)"
  echo "mpi.$name.bandwidth-1mb-vs-c $(ratio "$c_bw" "$s_bw") x slower (target 1.1)"
done
"$root/bin/spindle" run "$root/bench/mpi/pingpong.ss" places "$iters" "$big" >"$work/places" 2>&1 \
  || { echo "mpi.places: the place-channel ping-pong failed:"; cat "$work/places"; exit 1; }
echo "mpi.places.pingpong-8b-us $(figure "$work/places" pingpong-8b-us) us median (place channels, one machine)"
echo "mpi.places.pingpong-8b-mean-us $(figure "$work/places" pingpong-8b-mean-us) us"
echo "mpi.places.bandwidth-1mb $(figure "$work/places" bandwidth-1mb-mbs) MB/s"
