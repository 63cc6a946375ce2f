#!/usr/bin/env bash
# One GPU call (fifteenth session): are the check run's single EP figures
# with VMM windows (8 ranks: combine send 155.9 -> 46.1 us) real, and how
# much do the thread round trips of 8-256 B move between runs against
# NVSHMEM's? From the repository root on the GPU machine:
#   OUT=$OUT/confirm bash docs/perf/2026-12-04/vmm-confirm.sh
# 1. The EP benchmark (device checks on, as check mode builds it) at 2, 4
#    and 8 ranks, GIN_CUDA_VMM=0 and the default alternating, three times.
# 2. gin-perf and nvshmem_perf thread ping-pong 8-256 B (-f 2, as
#    nvshmem-compare), alternating, three times each.
# Logs packed into $OUT/logs.tgz.
set -u
OUT=${OUT:-$PWD/confirm-out}
L=$OUT/logs
mkdir -p "$L"
say() { echo "$*" | tee -a "$L/summary.txt"; }
say "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
{ cmake -S . -B build-dev -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  cmake --build build-dev -j 16 --target ginrun gin_ep_bench_cuda &&
  cmake -S . -B build-nvshmem -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DGIN_DEVICE_CHECKS=OFF -DGIN_NVSHMEM=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  cmake --build build-nvshmem -j 16 --target ginrun gin_perf_cuda nvshmem_perf; } >"$L/build.log" 2>&1 ||
  { say "BUILD FAILED"; tail -30 "$L/build.log"; exit 1; }
NVH=$(sed -n 's/^NVSHMEM_HOME:[A-Z]*=//p' build-nvshmem/CMakeCache.txt)
export LD_LIBRARY_PATH="$NVH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
export GIN_TIMEOUT_MS=20000 NCCL_NVLS_ENABLE=0
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
R=build-dev/ginrun
for i in 1 2 3; do
  for n in 2 4 8; do
    for v in ipc dflt; do
      pre=""
      [ $v = ipc ] && pre="GIN_CUDA_VMM=0"
      t=ep_${v}_${n}_$i
      # shellcheck disable=SC2086 # pre is empty or one assignment
      timeout 100 env $pre $R -n $n --timeout 90 build-dev/gin_ep_bench_cuda -n 50 -w 5 \
        --csv "$L/$t.csv" >"$L/$t.log" 2>&1
      say "$t rc=$? $(grep -h 'pipelined (no host' "$L/$t.log" | sed 's/.*time): //')" \
        "| $(grep -h 'each phase on its own' "$L/$t.log" | sed 's/.*medians: //')"
    done
  done
done
P=build-nvshmem
for i in 1 2 3; do
  for p in gin_perf_cuda nvshmem_perf; do
    t=pp_${p%%_*}_$i
    timeout 100 $P/ginrun -n 2 --timeout 90 $P/$p pingpong -g thread -b 8 -e 256 -f 2 \
      -n 1000 -w 100 --reps 5 --launches 3 --csv "$L/$t.csv" >"$L/$t.log" 2>&1
    say "$t rc=$? $(awk -F, 'NR>1 && $3=="pingpong"{printf "%s:%s ", $5, $6}' "$L/$t.csv")"
  done
done
echo quit | nvidia-cuda-mps-control
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
