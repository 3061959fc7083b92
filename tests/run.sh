#!/usr/bin/env bash
# Runs every tests/test-*.ss (or the files given) in its own process under a
# time bound, then the files named in SAFE_TESTS (space-separated) once more
# with SPINDLE_SAFE=1 (libraries compiled safe, with assert-atomic checks),
# and prints "N passed, N failed" for both together last.  Exits 1 on any
# failure.  --safe-only: only the SAFE_TESTS run.  SPINDLE_TEST_LIMIT: seconds a file may run (default 240;
# a file that needs longer says so in its first lines: ";;; time limit: N s").
cd "$(dirname "$0")/.."
# SCHEME picks the Chez Scheme (a command or a path; default `scheme`).  Its
# directory goes first on PATH, so that a test starting `scheme` itself
# starts the same one.
SCHEME=$(command -v "${SCHEME:-scheme}") || { echo "tests/run.sh: Chez Scheme not found: ${SCHEME:-scheme}" >&2; exit 1; }
export SCHEME
[ "$(basename "$SCHEME")" = scheme ] && export PATH="$(dirname "$SCHEME"):$PATH"
echo "Chez Scheme $("$SCHEME" --version 2>&1) ($SCHEME)"
safe_only=; [ "${1:-}" = --safe-only ] && { safe_only=1; shift; }
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(tests/test-*.ss)
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
    timeout -k 5 "$flimit" "$SCHEME" --libdirs "$libdirs:tests:bench" --program "$f" >"$out" 2>&1
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
