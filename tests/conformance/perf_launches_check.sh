#!/bin/sh
# gin-perf --launches, checked from its output (ctest
# gin_perf_smoke_host_launches): OUT holds gin-perf's printed lines, CSV
# its rows. Every pingpong row's floor_value must be the median of the
# floors its `# launch` lines printed for that size, and its median the
# median of their gin times (3 launches a size), both within rounding,
# and every launch's floor and gin time positive.
# The floor is the raw flag's ("floor X us") or, through proxy+tcp or ofi,
# the raw TCP or libfabric ping-pong's ("raw tcp X us", "raw ofi X us").
out=$1 csv=$2 want=${3:-3}
awk -v want="$want" '
  function med3(a, b, c) { return a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b)) }
  FNR == NR {
    if ($0 ~ /# launch /) {
      fl = ""; g = ""
      for (i = 1; i <= NF; i++) {
        if ($i == "B:") size = $(i - 1)
        if ($i == "floor" || (($i == "tcp" || $i == "ofi") && $(i - 1) == "raw")) fl = $(i + 1)
        if ($i == "gin") g = $(i + 1)
      }
      if (fl + 0 <= 0 || g + 0 <= 0) { print "launch line without a positive floor and gin time: " $0; bad = 1 }
      n[size]++; f[size, n[size]] = fl; gt[size, n[size]] = g
    }
    next
  }
  FNR > 1 {
    split($0, c, ",")
    if (c[3] != "pingpong") next
    rows++
    s = c[5]
    if (n[s] != want) { print "size " s ": " n[s] + 0 " launch lines, want " want; bad = 1; next }
    fm = med3(f[s, 1], f[s, 2], f[s, 3]); gm = med3(gt[s, 1], gt[s, 2], gt[s, 3])
    if (c[11] - fm > 0.002 * fm + 0.001 || fm - c[11] > 0.002 * fm + 0.001) { print "size " s ": floor " c[11] ", launches median " fm; bad = 1 }
    if (c[6] - gm > 0.002 * gm + 0.001 || gm - c[6] > 0.002 * gm + 0.001) { print "size " s ": median " c[6] ", launches median " gm; bad = 1 }
  }
  END {
    if (!rows) { print "no pingpong rows"; bad = 1 }
    exit bad
  }' "$out" "$csv"
