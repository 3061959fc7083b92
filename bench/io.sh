#!/usr/bin/env bash
# The io suite: `bin/spindle bench io [--quick] [--no-peers]`.
# Prints one line per figure, `io.NAME VALUE UNIT`.  Every server listens on
# 127.0.0.1 only, every load run is bounded in time, and every process this
# script starts is killed when it ends.  Peers: Go, Python (asyncio and
# threads), Racket, Ruby (see bench/peers/ and bench/IO.md).
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0; peers=1
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    --no-peers) peers=0 ;;
    *) echo "usage: spindle bench io [--quick] [--no-peers]" >&2; exit 2 ;;
  esac
done
secs=10; rounds=10000; workers_list="1 2 5 10 20"; slow_list="1 2 5 10 20"
if [ $quick = 1 ]; then secs=3; rounds=1000; workers_list="20"; slow_list=""; fi

ulimit -n "$(ulimit -Hn)" 2>/dev/null
work=$(mktemp -d)
pids=()
cleanup() { stop_all; rm -rf "$work"; }
trap cleanup EXIT

spindle=$root/bin/spindle
have() { command -v "$1" >/dev/null 2>&1; }

# Go programs are built once into the cache (no network needed: stdlib only).
gobin="${XDG_CACHE_HOME:-$HOME/.cache}/spindle/go"
build_go() {
  have go || return 1
  mkdir -p "$gobin"
  local src="$root/bench/peers/$1.go" bin="$gobin/$1"
  if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    GOCACHE="$gobin/cache" GO111MODULE=off go build -o "$bin" "$src" 2>"$work/go-build.log" || { cat "$work/go-build.log" >&2; return 1; }
  fi
  echo "$bin"
}
go_http=$(build_go go-http) || go_http=
go_echo=$(build_go go-echo) || go_echo=
go_fetch=$(build_go go-fetch) || go_fetch=

# start NAME CMD...: runs a server in its own process group, waits for
# "listening on PORT" and sets port (empty if it never came).  Not to be
# called in $(...): pids must be this shell's.
start() {
  local name=$1; shift
  port=
  setsid "$@" >"$work/$name.out" 2>"$work/$name.err" &
  pids+=($!)
  local i
  for i in $(seq 1 200); do
    if grep -q '^listening on' "$work/$name.out" 2>/dev/null; then
      port=$(awk '/^listening on/ {print $3; exit}' "$work/$name.out"); return 0
    fi
    sleep 0.1
  done
  return 1
}
# Kills each server's whole process group (bin/spindle runs scheme as a child).
stop_all() { for p in "${pids[@]}"; do kill -- -"$p" 2>/dev/null; kill "$p" 2>/dev/null; done; wait 2>/dev/null; pids=(); }

# ms from a wrk latency figure (12.5us, 3.2ms, 1.1s)
to_ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n = n; else if (v ~ /s$/) n *= 1000; printf "%.2f", n }'; }

# http NAME CMD...: wrk -t1 -c$conns (100 unless set) against the server;
# sets rps and p99.
conns=100
http() {
  local name=$1; shift
  rps=; p99=
  start "$name" "$@" || { echo "io.http-rps-$name unavailable"; stop_all; return; }
  wrk -t1 -c$conns -d1s "http://127.0.0.1:$port/" >/dev/null 2>&1      # warm-up
  wrk -t1 -c$conns -d${secs}s --latency "http://127.0.0.1:$port/" >"$work/wrk.out" 2>&1
  rps=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' "$work/wrk.out")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$work/wrk.out")")
  stop_all
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }

# ---------------------------------------------------------------- HTTP
if have wrk; then
  http main "$spindle" run "$root/examples/http-server.ss" --port 0
  echo "io.http-rps $rps req/s"; echo "io.http-p99-ms $p99 ms"; s_rps=$rps
  http pool2 "$spindle" run "$root/examples/http-server.ss" --port 0 --pool 2
  echo "io.http-rps-pool2 $rps req/s"; echo "io.http-p99-ms-pool2 $p99 ms"
  if [ $peers = 1 ]; then
    go_rps=; racket_rps=
    if [ -n "$go_http" ]; then http go "$go_http"; go_rps=$rps; echo "io.http-rps-go $rps req/s"; echo "io.http-p99-ms-go $p99 ms"; fi
    http python-asyncio python3 "$root/bench/peers/python-io.py" http
    echo "io.http-rps-python-asyncio $rps req/s"; echo "io.http-p99-ms-python-asyncio $p99 ms"
    if have racket; then http racket racket "$root/bench/peers/racket-io.rkt" http; racket_rps=$rps
      echo "io.http-rps-racket $rps req/s"; echo "io.http-p99-ms-racket $p99 ms"; fi
    if have guile; then http guile guile --no-auto-compile "$root/bench/peers/guile-http.scm"
      echo "io.http-rps-guile $rps req/s"; echo "io.http-p99-ms-guile $p99 ms"; fi
    echo "io.http-rps-vs-go $(ratio "$s_rps" "$go_rps") x"
    echo "io.http-rps-vs-racket $(ratio "$s_rps" "$racket_rps") x"
  fi
  # 1,000 connections: the tail latency
  conns=1000
  http main-c1000 "$spindle" run "$root/examples/http-server.ss" --port 0
  echo "io.http-rps-c1000 $rps req/s"; echo "io.http-p99-ms-c1000 $p99 ms"
  if [ $peers = 1 ] && [ -n "$go_http" ]; then http go-c1000 "$go_http"
    echo "io.http-rps-c1000-go $rps req/s"; echo "io.http-p99-ms-c1000-go $p99 ms"; fi
  conns=100
else
  echo "io.http-rps unavailable (no wrk: make bench-deps)"
fi

# ---------------------------------------------------------------- echo
# One client program (Go) for every server: 100 connections x N 16-byte round trips.
echo_run() {
  local name=$1; shift
  start "echo-$name" "$@" || { echo "io.echo-rps-$name unavailable"; stop_all; return; }
  erps=$(timeout 120 "$go_echo" client "$port" 100 "$rounds" | awk '{print $2}')
  stop_all
}
if [ -n "$go_echo" ]; then
  echo_run spindle "$spindle" run "$root/examples/echo-server.ss" --port 0; s_erps=$erps
  echo "io.echo-rps $erps round-trips/s"
  if [ $peers = 1 ]; then
    echo_run go "$go_echo" server; echo "io.echo-rps-go $erps round-trips/s"; go_erps=$erps
    echo_run python-asyncio python3 "$root/bench/peers/python-io.py" echo; echo "io.echo-rps-python-asyncio $erps round-trips/s"
    if have racket; then echo_run racket racket "$root/bench/peers/racket-io.rkt" echo; echo "io.echo-rps-racket $erps round-trips/s"; fi
    echo "io.echo-vs-go $(ratio "$s_erps" "$go_erps") x"
  fi
else
  echo "io.echo-rps unavailable (no go: make bench-deps)"
fi

# ---------------------------------------------------------------- overlap
# The threads article's table: R GETs of a server that answers after D ms,
# shared by W workers; ideal = R x D / W.
elapsed() { awk '/^elapsed/ {print $2}' | tail -1; }
overlap() {   # overlap DELAY-MS REQUESTS WORKER-LIST
  local delay=$1 requests=$2 list=$3
  # the slow server: Go's (its timers are the most precise), else Python's
  if [ -n "$go_http" ]; then start "delay$delay" "$go_http" "$delay"
  else start "delay$delay" python3 "$root/bench/peers/python-io.py" delay "$delay"; fi
  [ -n "$port" ] || { echo "io.overlap unavailable"; stop_all; return; }
  local url="http://127.0.0.1:$port/" w
  for w in $list; do
    local ideal; ideal=$(awk -v r="$requests" -v d="$delay" -v w="$w" 'BEGIN { printf "%.3f", r * d / 1000 / w }')
    echo "io.overlap-${delay}ms-w$w-ideal $ideal s"
    local t; t=$(timeout 300 "$root/bin/spindle" run "$root/examples/fetch.ss" --workers "$w" --requests "$requests" "$url" | elapsed)
    echo "io.overlap-${delay}ms-w$w $t s"
    if [ "$delay" = 30 ] && [ "$w" = 20 ]; then echo "io.overlap-20-efficiency $(ratio "$ideal" "$t") x"; fi
    if [ $peers = 1 ]; then
      have ruby && echo "io.overlap-${delay}ms-w$w-ruby $(timeout 300 ruby "$root/bench/peers/ruby-fetch.rb" "$w" "$requests" "$url" | elapsed) s"
      have racket && echo "io.overlap-${delay}ms-w$w-racket $(timeout 300 racket "$root/bench/peers/racket-io.rkt" fetch "$w" "$requests" "$url" | elapsed) s"
      echo "io.overlap-${delay}ms-w$w-python $(timeout 300 python3 "$root/bench/peers/python-io.py" fetch "$w" "$requests" "$url" | elapsed) s"
      [ -n "$go_fetch" ] && echo "io.overlap-${delay}ms-w$w-go $(timeout 300 "$go_fetch" get "$w" "$requests" "$url" | elapsed) s"
    fi
  done
  stop_all
}
overlap 30 400 "$workers_list"
[ -n "$slow_list" ] && overlap 300 100 "$slow_list"

# ---------------------------------------------------------------- subprocesses
echo "io.subprocess-overlap $("$spindle" run "$root/bench/io-subprocess.ss" --threads 20 --command 'sleep 0.1' | elapsed) s"
if [ $peers = 1 ]; then
  [ -n "$go_fetch" ] && echo "io.subprocess-overlap-go $("$go_fetch" sub 20 | elapsed) s"
  echo "io.subprocess-overlap-python $(python3 "$root/bench/peers/python-io.py" sub 20 | elapsed) s"
fi

# ---------------------------------------------------------------- idle connections
# 10,000 connections held open by a client (Go) while the spindle echo
# server idles: its resident memory, and its CPU use over 5 s.
if [ -n "$go_echo" ]; then
  start idle-server "$spindle" run "$root/examples/echo-server.ss" --port 0
  server=$(pgrep -f -n "program $root/examples/echo-server.ss")
  "$go_echo" idle "$port" 10000 30 >"$work/idle.out" 2>&1 &
  pids+=($!)
  for i in $(seq 1 300); do grep -q holding "$work/idle.out" && break; sleep 0.1; done
  sleep 2
  rss=$(awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$server/status")
  t1=$(awk '{print $14 + $15}' "/proc/$server/stat"); sleep 5; t2=$(awk '{print $14 + $15}' "/proc/$server/stat")
  conns=$(ls "/proc/$server/fd" | wc -l)
  echo "io.idle-10k-rss-mb $rss MB"
  echo "io.idle-10k-cpu $(awk -v a="$t1" -v b="$t2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", 100 * (b - a) / hz / 5 }') %"
  echo "io.idle-10k-descriptors $conns fds"
  stop_all
fi
