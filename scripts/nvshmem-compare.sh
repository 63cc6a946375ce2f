#!/usr/bin/env bash
# gin against NVSHMEM on one GPU, back to back in one run under one MPS
# daemon, same tests and parameters. From the repository root of
# a GPU machine where NVSHMEM is found (NVSHMEM_HOME, or python3's
# nvidia/nvshmem package as PyTorch installs it):
#
#   scripts/nvshmem-compare.sh [OUT_DIR]        (default ./nvshmem-out)
#
# 1. Builds $BUILD (default build-nvshmem): the cuda target as users get
#    it (device-side argument checks on; CHECKS=OFF compiles them out)
#    with -DGIN_NVSHMEM=ON (no NVSHMEM: CMake says so and this stops);
#    targets ginrun, gin_perf_cuda, nvshmem_perf. NO_BUILD=1 uses $BUILD
#    as it is.
# 2. Starts one MPS daemon (pipe and log directories under /tmp); it is
#    stopped on exit, failed or not.
# 3. For each test, gin_perf_cuda then nvshmem_perf, each under
#    `ginrun -n 2` (two ranks / PEs on the GPU) and `timeout`, with the
#    same arguments: pingpong -g thread, warp, block over $PP_SIZES; bw over
#    $BW_SIZES; rate. gin takes its default path (direct: the peer's window
#    mapped, load/store), as NVSHMEM's P2P transport does.
# 4. scripts/nvshmem-table.py joins the CSVs: the markdown table on stdout
#    and in OUT_DIR/nvshmem-compare.md, OUT_DIR/nvshmem-compare.csv, and
#    with matplotlib nvshmem-latency.png and nvshmem-bandwidth.png.
#
# Settings (environment): BUILD, NO_BUILD, JOBS, CHECKS (ON); COMMON (default
# "-n 1000 -w 100 --reps 5 --launches 3": three kernels per round-trip
# size, medians of theirs, on both sides; gin-perf also launches a raw
# floor kernel before each of its own, nvshmem_perf launches back to
# back), PP_SIZES ("-b 8 -e 1048576 -f 2"),
# BW_SIZES ("-b 4096 -e 67108864 -f 4"), GRID (bw/rate grid, default
# gin-perf's: one block per SM, 128 threads for rate), LIMIT (seconds per
# program, 300), GIN_COMMIT (the commit named in the table; default the
# checkout's HEAD). Exit status 0 when every run and the table succeeded.
set -u
OUT=${1:-nvshmem-out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
ROOT=$(cd "$(dirname "$0")/.." && pwd) || exit 1
cd "$ROOT" || exit 1
BUILD=${BUILD:-build-nvshmem}
JOBS=${JOBS:-$(nproc)}
CHECKS=${CHECKS:-ON}
COMMON=${COMMON:--n 1000 -w 100 --reps 5 --launches 3}
PP_SIZES=${PP_SIZES:--b 8 -e 1048576 -f 2}
BW_SIZES=${BW_SIZES:--b 4096 -e 67108864 -f 4}
GRID=${GRID:-}
LIMIT=${LIMIT:-300}
# The commit measured: GIN_COMMIT where the tree is a copy without its git
# history (the GPU machine's), else the checkout's HEAD. The GPU machine's
# copy may carry stale git metadata (a commit it names may be wrong), so
# the table also names the tree digest (scripts/tree-digest.sh), which
# follows the files.
COMMIT=${GIN_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}
DIGEST=$(scripts/tree-digest.sh 2>/dev/null || echo unknown)
T0=$SECONDS
LOGS=$OUT
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
# shellcheck source=gpu-lib.sh
. "$ROOT/scripts/gpu-lib.sh"

if [ "${NO_BUILD:-0}" != 1 ]; then
  say "build $BUILD (device checks $CHECKS, NVSHMEM on)"
  if ! { cmake -S . -B "$BUILD" -DGIN_CUDA=ON -DGIN_DEVICE_CHECKS="$CHECKS" \
           -DGIN_NVSHMEM=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
         cmake --build "$BUILD" -j "$JOBS" --target ginrun gin_perf_cuda nvshmem_perf
       } >"$OUT/build.log" 2>&1; then
    say "BUILD FAILED (see $OUT/build.log)"
    grep -E "gin:|Error|error" "$OUT/build.log" | tail -20
    exit 1
  fi
fi
for p in ginrun gin_perf_cuda nvshmem_perf; do
  [ -x "$BUILD/$p" ] || { say "no $BUILD/$p: build first (or unset NO_BUILD)"; exit 1; }
done
cache() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
NVH=$(cache NVSHMEM_HOME)
# The binary's run path finds libnvshmem_host.so.3; this also covers the
# bootstrap plugins it loads.
[ -n "$NVH" ] && export LD_LIBRARY_PATH="$NVH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $COMMIT"
  echo "tree digest: $DIGEST"
  echo "gpu: $(nvidia-smi -L 2>/dev/null | head -1)"
  echo "build: $BUILD, GIN_DEVICE_CHECKS=$(cache GIN_DEVICE_CHECKS), $(cache CMAKE_BUILD_TYPE)"
  echo "nvshmem: $NVH"
  echo "args: COMMON='$COMMON' PP_SIZES='$PP_SIZES' BW_SIZES='$BW_SIZES' GRID='$GRID'"
} | tee "$OUT/meta.txt"

if ! mps_start nvshmem; then
  say "cannot start MPS (another daemon running?); stopping"
  exit 1
fi

export GIN_TIMEOUT_MS=${GIN_TIMEOUT_MS:-60000}
unset GIN_BACKEND GIN_TRANSPORT
run() { # name program args...: one program, 2 ranks, bounded
  local name=$1 prog=$2
  shift 2
  step "$name" "$BUILD/ginrun" -n 2 --timeout $((LIMIT - 5)) \
    "$BUILD/$prog" "$@" --csv "$OUT/$name.csv"
}
pair() { # tag args...: gin, then NVSHMEM with the same arguments
  local tag=$1
  shift
  run "gin_$tag" gin_perf_cuda "$@"
  run "nvshmem_$tag" nvshmem_perf "$@"
}
# shellcheck disable=SC2086 # the settings are argument lists
{
  for g in thread warp block; do pair "pp_$g" pingpong -g $g $PP_SIZES $COMMON; done
  pair bw bw $BW_SIZES $COMMON $GRID
  # gin's rate also measures the pattern with no library (--raw): the
  # floor both are read against.
  run gin_rate gin_perf_cuda rate $COMMON $GRID --raw
  run nvshmem_rate nvshmem_perf rate $COMMON $GRID
}
mps_stop

ver=$(sed -n 's/.*# nvshmem_perf, \(NVSHMEM [0-9.]*\).*/\1/p' "$OUT"/nvshmem_*.log 2>/dev/null | head -1)
title="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(date -u +%F), gin $COMMIT (tree $DIGEST) vs ${ver:-NVSHMEM}"
gin_csv=$(ls "$OUT"/gin_*.csv 2>/dev/null)
nv_csv=$(ls "$OUT"/nvshmem_*.csv 2>/dev/null)
if [ -n "$gin_csv" ] && [ -n "$nv_csv" ]; then
  # shellcheck disable=SC2086
  python3 scripts/nvshmem-table.py -o "$OUT" --title "$title" \
    --gin $gin_csv --nvshmem $nv_csv || fails=$((fails + 1))
else
  say "no CSVs from one side: no table"
  fails=$((fails + 1))
fi
say "done: $fails failed"
[ $fails -eq 0 ]
