#!/usr/bin/env bash
# The ofi transport's table of docs/PERFORMANCE.md: gin over libfabric on
# the host target against libfabric alone (gin-perf's floors: RMA writes
# with remote CQ data between the same two ranks, on the same provider,
# in the same run), for the two providers that run without RDMA hardware,
# each as it is by default and with every put from GIN_OFI_RMA_MIN bytes
# as RMA writes (GIN_OFI_RMA=1). From the repository root of a machine
# with libfabric (Debian, Ubuntu: libfabric-dev):
#
#   OUT=DIR scripts/ofi-perf.sh            (default DIR: ./ofi-perf-out)
#
# Builds build-ofi-host (the host target with -DGIN_OFI=ON; CMAKE_FLAGS
# adds to its configure line, e.g. -DCMAKE_PREFIX_PATH=/opt/libfabric),
# then for each provider and mode: pingpong 8 B-64 KiB with each of three
# launches right after its floor, and bw 64 KiB-4 MiB against the write
# stream floor of the same run. Output in $OUT: results/ofi_PROV_MODE.csv
# (both tests; MODE is default or rma), meta.txt, summary.txt (one line
# per step, then OK or FAILED), logs.tgz. Settings (environment):
# NO_BUILD=1, JOBS (nproc), LIMIT (seconds a step, 180), BUDGET (seconds
# in all, 1500). Exit status 0 when every step passed.
set -u
LIMIT=${LIMIT:-180}
BUDGET=${BUDGET:-1500}
# shellcheck source=gpu-lib.sh
. "$(dirname "$0")/gpu-lib.sh"
gpu_begin ofi-perf-out
RES=$OUT/results
mkdir -p "$RES"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "command: OUT=$OUT scripts/ofi-perf.sh"
  echo "cpus: $(nproc), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
  echo "commit: ${GIN_COMMIT:-$(git describe --always --dirty 2>/dev/null || echo unknown)}"
  echo "tree digest: $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
} | tee "$OUT/meta.txt"

B=build-ofi-host
if [ "${NO_BUILD:-0}" != 1 ]; then
  t0=$SECONDS
  # shellcheck disable=SC2086 # CMAKE_FLAGS is a list of flags
  { cmake -S . -B $B -DGIN_CUDA=OFF -DGIN_OFI=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_FLAGS:-} &&
    cmake --build $B -j "$JOBS" --target ginrun gin_perf_host; } \
    >"$LOGS/build.log" 2>&1
  rc=$?
  say "build: $B rc=$rc ($((SECONDS - t0)) s)"
  builds_ok $rc
fi
R=("$B/ginrun" -n 2 --timeout $((LIMIT - 10)))
P=$B/gin_perf_host
export GIN_TIMEOUT_MS=60000 GIN_BACKEND=proxy GIN_TRANSPORT=ofi
for prov in tcp shm; do
  for mode in default rma; do
    rma=-1
    [ $mode = rma ] && rma=1
    name=ofi_${prov}_$mode
    step ${name}_pp env GIN_OFI_PROVIDER=$prov GIN_OFI_RMA=$rma "${R[@]}" \
      $P pingpong -b 8 -e 65536 -f 8 -n 1000 -w 100 --launches 3 \
      --csv "$RES/${name}_pp.csv"
    step ${name}_bw env GIN_OFI_PROVIDER=$prov GIN_OFI_RMA=$rma "${R[@]}" \
      $P bw --floors -b 65536 -e 4194304 -f 4 --reps 5 \
      --csv "$RES/${name}_bw.csv"
  done
done
# The rows with their floors and ratios, one table per provider and mode.
for f in "$RES"/ofi_*.csv; do
  [ -s "$f" ] || continue
  echo "== $(basename "$f" .csv)"
  awk -F, 'NR > 1 && $12 != "" {printf "%-10s %8s B  %10s us  %8s GB/s  ratio %s to %s (%s)\n",
    $3, $5, $6, $8, $12, $10, $11}' "$f"
done | tee -a "$SUMMARY"
finish
