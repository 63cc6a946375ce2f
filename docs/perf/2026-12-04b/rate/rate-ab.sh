#!/usr/bin/env bash
# One GPU call (eighteenth session): issue 8's rate test read against its
# floor. Builds this tree's gin_perf_cuda and nvshmem_perf (device checks
# off, as nvshmem-compare.sh builds them) and a copy with PATCH (the
# diagnostic nogate.patch: gin_put without the gate's load and vote),
# then, three times in turn, at 128, 512 and 1024 threads a block (one
# block per SM): gin `rate --raw` (rate and rate_raw rows), NVSHMEM's
# rate, the patched gin's rate. From the repository root on the GPU
# machine, the patch in the tree:
#   PATCH=nogate.patch OUT=$OUT/rate bash docs/perf/2026-12-04b/rate/rate-ab.sh
set -u
OUT=${OUT:-$PWD/rate-out}
L=$OUT/logs
mkdir -p "$L"
say() { echo "== $*" | tee -a "$L/summary.txt"; }
say "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
OPTS="-DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DGIN_DEVICE_CHECKS=OFF -DGIN_NVSHMEM=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo"
# shellcheck disable=SC2086 # an option list
{ cmake -S . -B build-nvshmem $OPTS &&
  cmake --build build-nvshmem -j 16 --target ginrun gin_perf_cuda nvshmem_perf; } >"$L/build.log" 2>&1 ||
  { say "BUILD FAILED"; tail -30 "$L/build.log"; exit 1; }
X=/tmp/rate-x
scripts/copy-tree.sh $X "${PATCH:?PATCH}" || { say "patch failed"; exit 1; }
# shellcheck disable=SC2086
(cd $X && cmake -S . -B build-x $OPTS -DGIN_NVSHMEM=OFF && cmake --build build-x -j 16 --target gin_perf_cuda) \
  >"$L/build-x.log" 2>&1 || { say "patched build failed"; tail -30 "$L/build-x.log"; exit 1; }
NVH=$(sed -n 's/^NVSHMEM_HOME:[A-Z]*=//p' build-nvshmem/CMakeCache.txt)
export LD_LIBRARY_PATH="$NVH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
export GIN_TIMEOUT_MS=20000 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && say "MPS started"
O="-n 1000 -w 100 --reps 5"
for i in 1 2 3; do
  for th in 128 512 1024; do
    for v in gin nvshmem nogate; do
      case $v in
      gin) p="build-nvshmem/gin_perf_cuda rate --raw" ;;
      nvshmem) p="build-nvshmem/nvshmem_perf rate" ;;
      nogate) p="$X/build-x/gin_perf_cuda rate" ;;
      esac
      t=${v}_${th}_$i
      # shellcheck disable=SC2086 # command and option lists
      timeout 100 build-nvshmem/ginrun -n 2 --timeout 90 $p --threads $th $O \
        --csv "$L/$t.csv" >"$L/$t.log" 2>&1
      say "$t rc=$? $(awk -F, 'NR>1 && ($3=="rate" || $3=="rate_raw"){printf "%s:%s ", $3, $9}' "$L/$t.csv" 2>/dev/null)"
    done
  done
done
echo quit | nvidia-cuda-mps-control
cp "$L/summary.txt" "$OUT/summary.txt"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
