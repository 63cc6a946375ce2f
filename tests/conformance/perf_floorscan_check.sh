#!/bin/sh
# gin-perf floorscan, checked from its output (ctest
# gin_perf_smoke_host_floorscan): OUT holds gin-perf's printed lines, CSV
# its rows. Two passes: 32 flag lines each, one floor on the signal word,
# one 8-byte ping-pong whose floor is that signal floor and whose ratio is
# its median over it; each pass's summary line gives the same put time and
# signal floor (the CSV has 4 significant digits, the line 3 decimals:
# compared within rounding).
out=$1 csv=$2
awk -F, '
  FNR == NR {
    if ($0 ~ /# floorscan pass /) {
      n = split($0, w, " ")
      for (i = 1; i <= n; i++) {
        if (w[i] == "line" && w[i - 1] == "signal" && w[i - 2] == "the") sigline[++ns] = w[i + 1]
        if (w[i] == "B") putline[++np] = w[i + 1]
      }
    }
    next
  }
  FNR > 1 && $3 == "floor_scan" && $4 ~ /^line[12]$/ { lines[$4]++ }
  FNR > 1 && $3 == "floor_scan" && $4 ~ /^signal[12]$/ { sig[++nsig] = $6 }
  FNR > 1 && $3 == "pingpong" {
    np2++
    if ($10 != "raw_flag_on_signal") { print "pingpong row " np2 ": floor " $10; bad = 1 }
    if ($11 != sig[np2]) { print "pingpong row " np2 ": floor value " $11 ", signal floor " sig[np2]; bad = 1 }
    r = $6 / $11
    if ($12 - r > 0.002 * r || r - $12 > 0.002 * r) { print "pingpong row " np2 ": ratio " $12 ", median/floor " r; bad = 1 }
    if (putline[np2] - $6 > 0.001 * $6 + 0.0006 || $6 - putline[np2] > 0.001 * $6 + 0.0006) { print "pingpong row " np2 ": summary says " putline[np2] ", row " $6; bad = 1 }
    if (sigline[np2] - $11 > 0.001 * $11 + 0.0006 || $11 - sigline[np2] > 0.001 * $11 + 0.0006) { print "pingpong row " np2 ": summary signal floor " sigline[np2] ", row " $11; bad = 1 }
  }
  END {
    if (lines["line1"] != 32 || lines["line2"] != 32) { print "line rows " lines["line1"] + 0 ", " lines["line2"] + 0 ", want 32 each"; bad = 1 }
    if (nsig != 2 || np2 != 2 || ns != 2 || np != 2) { print "signal rows " nsig + 0 ", pingpong rows " np2 + 0 ", summaries " ns + 0 "/" np + 0 ", want 2 each"; bad = 1 }
    exit bad
  }' "$out" "$csv"
