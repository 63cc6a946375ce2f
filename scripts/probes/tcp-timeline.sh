#!/usr/bin/env bash
# Where the host tcp round trip's time goes, step by step (issue 4): a
# copy of this tree with docs/perf/2026-12-04f/timeline.patch (TSC stamps
# at each step of an 8-byte put+signal through proxy+tcp; not landed),
# gin-perf ping-pongs taken apart by tl_analyze.py, with the raw polling
# TCP ping-pong (tcp_parts) after each. CONFIGS compares changes step by
# step: space-separated name:patch[+patch...][:VAR=v[,VAR=v...]] (patches
# applied after timeline.patch; "base:" is the tree as it is), run in turn
# ROUNDS times.
# Usage (repository root):
# OUT=dir [CONFIGS="base: x:file.patch:VAR=1"] [ROUNDS=3] [N=20000] [KEEP_TL=1] bash scripts/probes/tcp-timeline.sh
# (KEEP_TL=1 keeps the stamps, tl.0 and tl.1, beside each run's steps)
set -u
OUT=${OUT:-$PWD/tcp-timeline}
CONFIGS=${CONFIGS:-"base:"}
ROUNDS=${ROUNDS:-3}
N=${N:-20000}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
SRC=$PWD
A=$SRC/docs/perf/2026-12-04f/tl_analyze.py
# Builds the tree with timeline.patch and the patches in $1 ('+'-separated)
# once per invocation, in /tmp; prints its directory.
rm -rf /tmp/gin-tl-*
tree() {
  local key=${1:-none} t
  t=/tmp/gin-tl-${key//[^A-Za-z0-9]/_}
  if [ ! -x "$t/b/gin_perf_host" ]; then
    # shellcheck disable=SC2086 # the '+'-separated patches, one word each
    (cd "$SRC" && scripts/copy-tree.sh "$t" docs/perf/2026-12-04f/timeline.patch ${1//+/ }) ||
      { echo "PATCH FAILED ($1)" >&2; return 1; }
    (cd "$t" && cmake -S . -B b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGIN_CUDA=OFF &&
      cmake --build b -j "$(nproc)" --target ginrun gin_perf_host &&
      cc -O2 -Wall -pthread -o b/tcp_parts scripts/probes/tcp_parts.c) >>"$OUT/build.log" 2>&1 ||
      { echo "BUILD FAILED ($1)" >&2; return 1; }
  fi
  echo "$t"
}
for k in $(seq "$ROUNDS"); do
  for c in $CONFIGS; do
    IFS=: read -r name patches envs <<<"$c"
    t=$(tree "$patches") || exit 1
    IFS=, read -r -a ev <<<"${envs:-GIN_TL_X=0}"
    d=$OUT/${name}_$k
    mkdir -p "$d"
    (cd "$t" && env "${ev[@]}" GIN_TL_DIR="$d" GIN_BACKEND=proxy GIN_TRANSPORT=tcp timeout 120 \
      b/ginrun -n 2 --timeout 110 b/gin_perf_host pingpong -b 8 -e 8 -n "$N" -w 2000 >"$d/gin.log" 2>&1)
    echo "== $name round $k: rc=$? $(grep -E '^\[0\] pingpong ' "$d/gin.log" | awk '{print "gin", $5, "us"}')"
    python3 "$A" "$d" 2000 | tee "$d/steps.txt"
    [ "${KEEP_TL:-0}" = 1 ] || rm -f "$d"/tl.[01] # ~1 MB a rank
    echo "raw polling TCP: $(timeout 60 "$t/b/tcp_parts" 10000 1 poll | awk '/poll/ {print $4, "us, send", $6, "ns, recv with data", $11, "ns"}')"
  done
done 2>&1 | tee "$OUT/summary.txt"
