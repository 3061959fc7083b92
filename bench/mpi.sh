#!/usr/bin/env bash
# The mpi suite: `bin/spindle bench mpi [--quick]` (bench/MPI.md).
# Two ranks on this machine, over shared memory (btl self,vader) and over
# TCP on loopback (btl tcp,self): spindle's rmpi-send/rmpi-recv, and its
# in-place rmpi-send-bytes/rmpi-recv-bytes!, beside a plain C program
# built here with mpicc (bench/mpi/pingpong.c), and
# spindle's place channels beside both.  Prints `mpi.NAME VALUE UNIT`.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
iters=10000; big=100; runs=3
for a in "$@"; do
  case $a in
    --quick) iters=2000; big=20; runs=1 ;;
    *) echo "usage: spindle bench mpi [--quick]" >&2; exit 2 ;;
  esac
done
command -v mpicc >/dev/null 2>&1 || { echo "spindle bench mpi: mpicc not found (apt-get install libopenmpi-dev)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/pingpong" "$root/bench/mpi/pingpong.c" || exit 1

# figure FILE NAME: the value of NAME in FILE; best FILE NAME min|max: the
# best over the runs FILE.1 .. FILE.$runs (the machine may be shared: the
# best run is the one least disturbed, for C and spindle alike)
figure() { awk -v n="$2" '$1 == n { print $2 }' "$1"; }
best() { local i; for i in $(seq 1 "$runs"); do figure "$1.$i" "$2"; done |
  awk -v m="$3" 'NR == 1 || (m == "min" ? $1 < b : $1 > b) { b = $1 } END { print b }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "nan" }'; }

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), iters $iters, 1 MiB x $big, best of $runs runs"
# the software cost of a message: one rank sending to itself, CPU time
for i in $(seq 1 "$runs"); do
  mpirun --allow-run-as-root -np 1 "$work/pingpong" "$iters" 0 >"$work/c.self.$i" 2>&1 \
    || { echo "mpi.self: the C program failed:"; cat "$work/c.self.$i"; exit 1; }
  "$root/bin/spindle" mpirun -np 1 "$root/bench/mpi/pingpong.ss" mpi "$iters" 0 >"$work/s.self.$i" 2>&1 \
    || { echo "mpi.self: spindle's program failed:"; cat "$work/s.self.$i"; exit 1; }
done
c_self=$(best "$work/c.self" self-8b-cpu-us min); s_self=$(best "$work/s.self" self-8b-cpu-us min)
s_iself=$(best "$work/s.self" self-8b-inplace-cpu-us min)
echo "mpi.self.send-recv-8b-cpu-us $s_self us (C $c_self us; one rank to itself)"
echo "mpi.self.send-recv-8b-vs-c $(ratio "$s_self" "$c_self") x"
echo "mpi.self.send-recv-8b-inplace-cpu-us $s_iself us (rmpi-send-bytes, rmpi-recv-bytes!)"
echo "mpi.self.send-recv-8b-inplace-vs-c $(ratio "$s_iself" "$c_self") x"
for btl in self,vader tcp,self; do
  name=${btl%%,self}; name=${name#self,}; [ "$name" = vader ] && name=shm
  ok=1
  for i in $(seq 1 "$runs"); do
    # the settings spindle mpirun makes, for the C program too
    OMPI_MCA_btl=$btl OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo \
      OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-cma} \
      mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$work/pingpong" "$iters" "$big" >"$work/c.$name.$i" 2>&1 \
      || { echo "mpi.$name: the C ping-pong failed:"; cat "$work/c.$name.$i"; ok=; break; }
    OMPI_MCA_btl=$btl "$root/bin/spindle" mpirun -np 2 "$root/bench/mpi/pingpong.ss" mpi "$iters" "$big" >"$work/s.$name.$i" 2>&1 \
      || { echo "mpi.$name: spindle's ping-pong failed:"; cat "$work/s.$name.$i"; ok=; break; }
  done
  [ -n "$ok" ] || continue
  c_rtt=$(best "$work/c.$name" pingpong-8b-us min); s_rtt=$(best "$work/s.$name" pingpong-8b-us min)
  c_bw=$(best "$work/c.$name" bandwidth-1mb-mbs max); s_bw=$(best "$work/s.$name" bandwidth-1mb-mbs max)
  echo "mpi.$name.pingpong-8b-us $s_rtt us median (C $c_rtt us)"
  echo "mpi.$name.pingpong-8b-mean-us $(best "$work/s.$name" pingpong-8b-mean-us min) us (C $(best "$work/c.$name" pingpong-8b-mean-us min) us)"
  echo "mpi.$name.pingpong-8b-vs-c $(ratio "$s_rtt" "$c_rtt") x (any value, encoded, received as a new one; C sends bytes in place: see -inplace)"
  echo "mpi.$name.bandwidth-1mb $s_bw MB/s (C $c_bw MB/s)"
  echo "mpi.$name.bandwidth-1mb-vs-c $(ratio "$c_bw" "$s_bw") x slower (a mutable bytevector, copied; see -immutable and -inplace)"
  s_ibw=$(best "$work/s.$name" bandwidth-1mb-immutable-mbs max)
  echo "mpi.$name.bandwidth-1mb-immutable $s_ibw MB/s (an immutable bytevector: sent without a copy)"
  echo "mpi.$name.bandwidth-1mb-immutable-vs-c $(ratio "$c_bw" "$s_ibw") x slower"
  # in place: rmpi-send-bytes, rmpi-recv-bytes! into one buffer, as C does
  p_rtt=$(best "$work/s.$name" pingpong-8b-inplace-us min)
  p_bw=$(best "$work/s.$name" bandwidth-1mb-inplace-mbs max); p_sbw=$(best "$work/s.$name" bandwidth-1mb-inplace-shared-mbs max)
  echo "mpi.$name.pingpong-8b-inplace-us $p_rtt us median (C $c_rtt us)"
  echo "mpi.$name.pingpong-8b-inplace-mean-us $(best "$work/s.$name" pingpong-8b-inplace-mean-us min) us"
  echo "mpi.$name.pingpong-8b-inplace-vs-c $(ratio "$p_rtt" "$c_rtt") x (target 1.3)"
  echo "mpi.$name.bandwidth-1mb-inplace $p_bw MB/s (bytevector to bytevector; C $c_bw MB/s)"
  echo "mpi.$name.bandwidth-1mb-inplace-vs-c $(ratio "$c_bw" "$p_bw") x slower (target 1.1)"
  echo "mpi.$name.bandwidth-1mb-inplace-shared $p_sbw MB/s (shared bytes to shared bytes)"
  echo "mpi.$name.bandwidth-1mb-inplace-shared-vs-c $(ratio "$c_bw" "$p_sbw") x slower"
done
for i in $(seq 1 "$runs"); do
  "$root/bin/spindle" run "$root/bench/mpi/pingpong.ss" places "$iters" "$big" >"$work/places.$i" 2>&1 \
    || { echo "mpi.places: the place-channel ping-pong failed:"; cat "$work/places.$i"; exit 1; }
done
echo "mpi.places.pingpong-8b-us $(best "$work/places" pingpong-8b-us min) us median (place channels, one machine)"
echo "mpi.places.pingpong-8b-mean-us $(best "$work/places" pingpong-8b-mean-us min) us"
echo "mpi.places.bandwidth-1mb $(best "$work/places" bandwidth-1mb-mbs max) MB/s"
