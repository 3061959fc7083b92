#!/usr/bin/env bash
# Runs the test files, each in its own process under a time bound, and
# prints "N passed, N failed" for all of them together last; exits 1 on any
# failure.
#
#   tests/run.sh                 every tests/test-*.ss
#   tests/run.sh NAME...         the named files only; NAME is threads,
#                                test-threads, test-threads.ss or
#                                tests/test-threads.ss (an unknown name is an
#                                error that lists the names)
#   tests/run.sh --safe-only     only the SAFE_TESTS run below
#
# SAFE_TESTS (space-separated files): run once more with SPINDLE_SAFE=1
# (libraries compiled safe, with assert-atomic checks), after the others.
# SPINDLE_TEST_LIMIT: seconds a file may run (default 240; a file that needs
# longer says so in its first lines: ";;; time limit: N s").
# SCHEME: the Chez Scheme to run (below).
#
# Test files are tests/test-*.ss; what they use (the harness and other
# libraries, child programs, place libraries, MPI scripts) is in
# tests/support/, which is on the library path with bench/.
cd "$(dirname "$0")/.."
safe_only=; [ "${1:-}" = --safe-only ] && { safe_only=1; shift; }
# test_file NAME: the file NAME names (threads, test-threads,
# test-threads.ss, tests/test-threads.ss; any other path to a .ss file as
# it is), or an error listing the names
test_file() {
  case $1 in */*.ss) [ -f "$1" ] && { echo "$1"; return; } ;; esac
  local n=${1#tests/}
  n=${n%.ss}; n=${n#test-}
  if [ -n "$n" ] && [ -f "tests/test-$n.ss" ]; then echo "tests/test-$n.ss"; return; fi
  echo "tests/run.sh: no test named '$1'; the names are:" >&2
  local f
  for f in tests/test-*.ss; do f=${f#tests/test-}; echo "${f%.ss}"; done | fmt -w 76 | sed 's/^/  /' >&2
  return 1
}
files=()
for a in "$@"; do f=$(test_file "$a") || exit 2; files+=("$f"); done
[ ${#files[@]} -gt 0 ] || files=(tests/test-*.ss)
# SCHEME picks the Chez Scheme (a command or a path; default `scheme`).  Its
# directory goes first on PATH, so that a test starting `scheme` itself
# starts the same one.
SCHEME=$(command -v "${SCHEME:-scheme}") || { echo "tests/run.sh: Chez Scheme not found: ${SCHEME:-scheme}" >&2; exit 1; }
export SCHEME
[ "$(basename "$SCHEME")" = scheme ] && export PATH="$(dirname "$SCHEME"):$PATH"
echo "Chez Scheme $("$SCHEME" --version 2>&1) ($SCHEME)"
limit=${SPINDLE_TEST_LIMIT:-240}
passed=0; failed=0

# run_files LABEL FILE...: lib/ with its compiled objects (built once per
# change of lib/ and of SPINDLE_SAFE; see bin/spindle)
run_files() {
  local label=$1; shift
  local libdirs f out start rc p x
  libdirs=$(bin/spindle libdirs)
  for f in "$@"; do
    out=$(mktemp); start=$SECONDS
    local own flimit=$limit
    own=$(head -20 "$f" | sed -n 's/^;;; time limit: \([0-9]*\) s$/\1/p' | head -1)
    [ -n "$own" ] && [ "$own" -gt "$limit" ] && flimit=$own
    timeout -k 5 "$flimit" "$SCHEME" --libdirs "$libdirs:tests/support:bench" --program "$f" >"$out" 2>&1
    rc=$?
    # the harness's own count (its last line), else the ok and FAIL lines
    # (a file that died before the harness could count)
    sum=$(grep -a '^harness: [0-9]* passed, [0-9]* failed$' "$out" | tail -1)
    if [ -n "$sum" ]; then
      p=$(echo "$sum" | cut -d' ' -f2); x=$(echo "$sum" | cut -d' ' -f4)
    else
      p=$(grep -c '^ok ' "$out"); x=$(grep -c '^FAIL ' "$out")
    fi
    passed=$((passed + p)); failed=$((failed + x))
    if [ $rc -ne 0 ] && [ "$x" -eq 0 ]; then
      failed=$((failed + 1))
      if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "FAIL $label$f: timed out after ${flimit}s"; else echo "FAIL $label$f: exited with $rc"; fi
      tail -20 "$out"
    else
      grep -B40 -A12 '^FAIL ' "$out"
    fi
    echo "$label$f: $p passed, $x failed ($((SECONDS - start)) s)"
    rm -f "$out"
  done
}

[ -n "$safe_only" ] || run_files "" "${files[@]}"
if [ -n "${SAFE_TESTS:-}" ]; then
  # shellcheck disable=SC2086
  SPINDLE_SAFE=1 run_files "safe: " $SAFE_TESTS
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
