# lock-count-report.sh -- sourced by lock-count.sh and spindle-lock-count.sh:
# report_counts WIDTH TITLE prints TITLE, then for each of $ops the
# S_mutex_acquire counts per call (over 10,000 calls) minus the `none`
# baseline, with the name padded to WIDTH.  The caller defines count OP,
# which prints lock-count.py's RESULT line for OP.
report_counts() {
  local width=$1 base op r
  echo "# $2, per call over 10,000 calls, minus the 'none' baseline"
  base=$(count none)
  echo "# baseline: $base"
  for op in $ops; do
    r=$(count "$op")
    awk -v op="$op" -v r="$r" -v b="$base" -v w="$width" 'BEGIN {
      split(r, a, " "); split(b, c, " ");
      for (i = 1; i <= 4; i++) { split(a[i], x, "="); split(c[i], y, "="); v[i] = (x[2] - y[2]) / 10000 }
      sub(/^callers=/, "", a[5]);
      printf "%-*s tc_mutex %6.3f  alloc_mutex %6.3f  other %6.3f  tryacquire %6.3f   (raw callers: %s)\n", w, op, v[1], v[2], v[3], v[4], a[5] }'
  done
}
