#!/usr/bin/env bash
# One GPU call (seventeenth session): issue 8's rows that crossed 1 in
# single runs (thread 32 and 64 B, block 8-32 KiB round trips), gin-perf
# and nvshmem_perf alternating five times with nvshmem-compare's options
# (device checks off, -n 1000 -w 100 --reps 5 --launches 3); each gin run
# also measures the raw flag floor, so the thread runs give issue 4's
# 8-byte ratio too (-b 8 -e 64). From the repository root on the GPU
# machine: OUT=$OUT/nvs bash docs/perf/2026-12-04/nvs-rows.sh
set -u
OUT=${OUT:-$PWD/nvs-out}
L=$OUT/logs
mkdir -p "$L"
say() { echo "$*" | tee -a "$L/summary.txt"; }
say "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
{ cmake -S . -B build-nvshmem -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DGIN_DEVICE_CHECKS=OFF -DGIN_NVSHMEM=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  cmake --build build-nvshmem -j 16 --target ginrun gin_perf_cuda nvshmem_perf; } >"$L/build.log" 2>&1 ||
  { say "BUILD FAILED"; tail -30 "$L/build.log"; exit 1; }
NVH=$(sed -n 's/^NVSHMEM_HOME:[A-Z]*=//p' build-nvshmem/CMakeCache.txt)
export LD_LIBRARY_PATH="$NVH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
export GIN_TIMEOUT_MS=20000 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
P=build-nvshmem
for i in 1 2 3 4 5; do
  for g in thread block; do
    sizes="-b 8 -e 64 -f 2"
    [ $g = block ] && sizes="-b 8192 -e 32768 -f 2"
    for p in gin_perf_cuda nvshmem_perf; do
      t=pp_${g}_${p%%_*}_$i
      # shellcheck disable=SC2086 # an option list
      timeout 100 $P/ginrun -n 2 --timeout 90 $P/$p pingpong -g $g $sizes \
        -n 1000 -w 100 --reps 5 --launches 3 --csv "$L/$t.csv" >"$L/$t.log" 2>&1
      say "$t rc=$? $(awk -F, 'NR>1 && $3=="floor_raw_flag_pp"{printf "floor:%s ", $6}
        NR>1 && $3=="pingpong"{printf "%s:%s ", $5, $6}' "$L/$t.csv")"
    done
  done
done
echo quit | nvidia-cuda-mps-control
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
