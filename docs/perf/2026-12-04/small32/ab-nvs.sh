#!/usr/bin/env bash
# One GPU call (seventeenth session): scripts/lat-ab.sh with PATCH (o =
# this tree, t = patched; checks off), then the patched tree's gin-perf
# against nvshmem_perf, alternating three times, thread 8-64 B and block
# 8-32 KiB, with nvshmem-compare's options. From the repository root on
# the GPU machine, the patch in the tree:
#   PATCH=x.patch OUT=$OUT/ab bash docs/perf/2026-12-04/small32/ab-nvs.sh
set -u
OUT=${OUT:-$PWD/abn-out}
mkdir -p "$OUT"
O="-n 1000 -w 100 --reps 5 --launches 3"
GRANS="thread warp block" SIZES="-b 8 -e 16384 -f 2" REPS=2 ITERS="$O" CONF=1 \
  bash scripts/lat-ab.sh | tee "$OUT/ab.txt"
{ cmake -S . -B build-nvshmem -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DGIN_DEVICE_CHECKS=OFF -DGIN_NVSHMEM=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  cmake --build build-nvshmem -j 16 --target ginrun nvshmem_perf; } >"$OUT/build-nvshmem.log" 2>&1 ||
  { echo "NVSHMEM BUILD FAILED"; exit 1; }
NVH=$(sed -n 's/^NVSHMEM_HOME:[A-Z]*=//p' build-nvshmem/CMakeCache.txt)
export LD_LIBRARY_PATH="$NVH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
export GIN_TIMEOUT_MS=20000 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
nvidia-cuda-mps-control -d
for i in 1 2 3; do
  for g in thread block; do
    sizes="-b 8 -e 64 -f 2"
    [ $g = block ] && sizes="-b 8192 -e 32768 -f 2"
    for p in /tmp/ab-t/build-OFF/gin_perf_cuda build-nvshmem/nvshmem_perf; do
      t=nv_${g}_$(basename "$p" | cut -d_ -f1)_$i
      # shellcheck disable=SC2086 # option lists
      timeout 100 build-nvshmem/ginrun -n 2 --timeout 90 "$p" pingpong -g $g $sizes $O \
        --csv "$OUT/$t.csv" >"$OUT/$t.log" 2>&1
      echo "$t rc=$? $(awk -F, 'NR>1 && $3=="pingpong"{printf "%s:%s ", $5, $6}' "$OUT/$t.csv")" |
        tee -a "$OUT/ab.txt"
    done
  done
done
echo quit | nvidia-cuda-mps-control
