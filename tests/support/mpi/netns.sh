#!/usr/bin/env bash
# Several MPI hosts on one machine: network namespaces joined by a bridge.
#   tests/support/mpi/netns.sh up NAME N    makes hosts NAME-1 .. NAME-N (10.77.0.1 ..
#                                   10.77.0.N on their eth0, and lo) and a
#                                   switch NAME-sw holding the bridge; the
#                                   machine's own namespace gets no interface
#                                   and no address.  Exit 0, or 1 with the
#                                   reason on stderr (a sandbox that refuses
#                                   namespaces, no `ip`); nothing is left then.
#   tests/support/mpi/netns.sh down NAME    removes them (and any left from a failed up)
#   tests/support/mpi/netns.sh run NAME N PROG [ARG ...]   runs `spindle mpirun` in
#                                   NAME-1 over N hosts as given by --hosts
#                                   (PROG's args follow; -np and --hosts are
#                                   taken from SPINDLE_NETNS_NP and
#                                   SPINDLE_NETNS_HOSTS, e.g. 5 and
#                                   10.77.0.1:2,10.77.0.2:2,10.77.0.3:1)
# mpirun starts the other hosts' daemons through tests/support/mpi/netns-rsh
# (Open MPI's plm_rsh_agent) instead of ssh: `ip netns exec NAME-K`.
# Used by tests/test-mpi.ss; reusable for any multi-host run (NAS).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
cmd=${1:-}; name=${2:-}
[ -n "$cmd" ] && [ -n "$name" ] || { echo "usage: $0 up NAME N | down NAME | run NAME N PROG [ARG ...]" >&2; exit 2; }

down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    case $ns in "$name"-*) ip netns del "$ns" 2>/dev/null ;; esac
  done
}

case $cmd in
  up)
    n=${3:?N}
    command -v ip >/dev/null 2>&1 || { echo "netns: no ip command (iproute2)" >&2; exit 1; }
    fail() { echo "netns: $1" >&2; down; exit 1; }
    ip netns add "$name-sw" 2>/dev/null || fail "the sandbox refuses network namespaces (ip netns add failed)"
    ip -n "$name-sw" link add br0 type bridge || fail "cannot make a bridge"
    ip -n "$name-sw" link set br0 up || fail "cannot bring the bridge up"
    for k in $(seq 1 "$n"); do
      ns=$name-$k
      ip netns add "$ns" || fail "cannot add namespace $ns"
      # the veth pair is made inside the switch, one end then moved to the host
      ip -n "$name-sw" link add "p$k" type veth peer name eth0 netns "$ns" || fail "cannot make a veth pair"
      ip -n "$name-sw" link set "p$k" master br0 up || fail "cannot attach p$k to the bridge"
      ip -n "$ns" addr add "10.77.0.$k/24" dev eth0 || fail "cannot address $ns"
      ip -n "$ns" link set eth0 up || fail "cannot bring eth0 up in $ns"
      ip -n "$ns" link set lo up || fail "cannot bring lo up in $ns"
    done
    # the hosts see each other
    for k in $(seq 2 "$n"); do
      ok=
      for try in 1 2 3 4 5 6 7 8 9 10; do
        if ip netns exec "$name-1" ping -c 1 -W 1 "10.77.0.$k" >/dev/null 2>&1; then ok=1; break; fi
        sleep 0.2
      done
      [ -n "$ok" ] || command -v ping >/dev/null 2>&1 || ok=1   # no ping: trust the setup
      [ -n "$ok" ] || fail "$name-1 cannot reach 10.77.0.$k"
    done ;;
  down) down ;;
  run)
    n=${3:?N}; shift 3
    export SPINDLE_NETNS=$name
    export OMPI_MCA_plm_rsh_agent=$here/netns-rsh
    export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}
    export OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0
    # in NAME-1, with a host name and /dev/shm of its own like every host (netns-rsh)
    exec ip netns exec "$name-1" unshare --uts /bin/sh -c \
      'hostname "$SPINDLE_NETNS-1" && mount -t tmpfs -o size=1g tmpfs /dev/shm && exec "$@"' sh \
      "$root/bin/spindle" mpirun -np "${SPINDLE_NETNS_NP:?}" --hosts "${SPINDLE_NETNS_HOSTS:?}" "$@" ;;
  *) echo "usage: $0 up NAME N | down NAME | run NAME N PROG [ARG ...]" >&2; exit 2 ;;
esac
