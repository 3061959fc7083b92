#!/usr/bin/env bash
# Runs every tests/test-*.ss (or the files given) in its own process under a
# time bound, and prints "N passed, N failed" last.  Exits 1 on any failure.
cd "$(dirname "$0")/.."
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(tests/test-*.ss)
limit=${SPINDLE_TEST_LIMIT:-240}
# lib/ with its compiled objects (built once per change of lib/; see bin/spindle)
libdirs=$(bin/spindle libdirs)
passed=0; failed=0
for f in "${files[@]}"; do
  out=$(mktemp); start=$SECONDS
  timeout -k 5 "$limit" scheme --libdirs "$libdirs:tests" --program "$f" >"$out" 2>&1
  rc=$?
  p=$(grep -c '^ok ' "$out"); x=$(grep -c '^FAIL ' "$out")
  passed=$((passed + p)); failed=$((failed + x))
  if [ $rc -ne 0 ] && [ "$x" -eq 0 ]; then
    failed=$((failed + 1))
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "FAIL $f: timed out after ${limit}s"; else echo "FAIL $f: exited with $rc"; fi
    tail -20 "$out"
  else
    grep -A12 '^FAIL ' "$out"
  fi
  echo "$f: $p passed, $x failed ($((SECONDS - start)) s)"
  rm -f "$out"
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
