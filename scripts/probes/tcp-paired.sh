#!/usr/bin/env bash
# The host target's tcp round trip against raw TCP, measured in pairs
# close in time (issue 4): gin-perf's ping-pong over GIN_BACKEND=proxy
# GIN_TRANSPORT=tcp with --launches L, each launch after rank 0's raw
# polling TCP ping-pong of the same size. RUNS runs of each variant in
# turn. Usage (repository root):
# OUT=dir [RUNS=n] [L=21] [VARIANTS="name=VAR=v,..."] bash scripts/probes/tcp-paired.sh
set -u
OUT=${OUT:-$PWD/tcp-paired}
RUNS=${RUNS:-3}
L=${L:-21}
VARIANTS=${VARIANTS:-"idle=GIN_PROXY_BUSY_POLL=0"}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
B=build-tcpprof
cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGIN_CUDA=OFF >"$OUT/build.log" 2>&1 &&
  cmake --build $B -j "$(nproc)" --target ginrun gin_perf_host >>"$OUT/build.log" 2>&1 ||
  { echo "BUILD FAILED"; tail -20 "$OUT/build.log"; exit 1; }
export GIN_BACKEND=proxy GIN_TRANSPORT=tcp
for k in $(seq "$RUNS"); do
  for v in $VARIANTS; do
    IFS=, read -r -a envs <<<"${v#*=}"
    name=${v%%=*}_$k
    env "${envs[@]}" timeout 300 $B/ginrun -n 2 --timeout 290 $B/gin_perf_host pingpong \
      -b 8 -e 64 -f 8 -n 10000 -w 1000 --launches "$L" --csv "$OUT/$name.csv" >"$OUT/$name.log" 2>&1
    rc=$?
    # Per-launch ratios of the 8-byte pairs: min, median, max.
    r=$(grep '# launch .*, 8 B:' "$OUT/$name.log" | sed 's/.*(\([-0-9.]*\) x)/\1/' | sort -n |
      awk '{a[NR] = $1} END {if (NR) printf "%d pairs: min %.3f median %.3f max %.3f", NR, a[1], a[int((NR + 1) / 2)], a[NR]}')
    echo "== $name: rc=$rc rows: $(grep -E '^\[0\] pingpong ' "$OUT/$name.log" | awk '{print $4 " B " $5 " us " $9 " x"}' | tr '\n' ' ') 8 B $r" |
      tee -a "$OUT/summary.txt"
  done
done
