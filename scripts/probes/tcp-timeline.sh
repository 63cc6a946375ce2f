#!/usr/bin/env bash
# Where the host tcp round trip's time goes, step by step (issue 4): a
# copy of this tree with docs/perf/2026-12-04f/timeline.patch (TSC stamps
# at each step of an 8-byte put+signal through proxy+tcp; not landed),
# RUNS gin-perf ping-pongs, each taken apart by tl_analyze.py, with the
# raw polling TCP ping-pong (tcp_parts) after each.
# Usage (repository root): OUT=dir [RUNS=3] [N=20000] bash scripts/probes/tcp-timeline.sh
set -u
OUT=${OUT:-$PWD/tcp-timeline}
RUNS=${RUNS:-3}
N=${N:-20000}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
P=$PWD/docs/perf/2026-12-04f/timeline.patch
A=$PWD/docs/perf/2026-12-04f/tl_analyze.py
T=/tmp/gin-tcp-timeline
rm -rf $T && mkdir -p $T && tar cf - --exclude='./build*' . | tar xf - -C $T &&
  (cd $T && patch -p1 <"$P" >"$OUT/patch.log" 2>&1) ||
  { echo "PATCH FAILED"; cat "$OUT/patch.log"; exit 1; }
cd $T || exit 1
cmake -S . -B b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGIN_CUDA=OFF >"$OUT/build.log" 2>&1 &&
  cmake --build b -j "$(nproc)" --target ginrun gin_perf_host >>"$OUT/build.log" 2>&1 &&
  cc -O2 -Wall -pthread -o b/tcp_parts scripts/probes/tcp_parts.c 2>>"$OUT/build.log" ||
  { echo "BUILD FAILED"; tail -20 "$OUT/build.log"; exit 1; }
for k in $(seq "$RUNS"); do
  mkdir -p "$OUT/run$k"
  GIN_TL_DIR=$OUT/run$k GIN_BACKEND=proxy GIN_TRANSPORT=tcp timeout 120 b/ginrun -n 2 --timeout 110 \
    b/gin_perf_host pingpong -b 8 -e 8 -n "$N" -w 2000 >"$OUT/run$k/gin.log" 2>&1
  echo "== run $k: rc=$? $(grep -E '^\[0\] pingpong ' "$OUT/run$k/gin.log" | awk '{print "gin", $5, "us"}')"
  python3 "$A" "$OUT/run$k" 2000 | tee "$OUT/run$k/steps.txt"
  echo "raw polling TCP: $(timeout 60 b/tcp_parts 10000 1 poll | awk '/poll/ {print $4, "us, send", $6, "ns, recv with data", $11, "ns"}')"
done 2>&1 | tee "$OUT/summary.txt"
