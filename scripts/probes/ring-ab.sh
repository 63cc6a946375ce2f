#!/usr/bin/env bash
# The proxy's ring rate (issue 4: >= 30 M ops/s with one proxy thread,
# 80 M with four; null transport, 8 blocks posting), a change before and
# after: "old" is this tree with PATCH reversed (a copy under /tmp), "new"
# this tree, both built for the GPU, in alternating runs under MPS.
# Usage (repository root, GPU machine):
# PATCH=file [ROUNDS=4] bash scripts/probes/ring-ab.sh
set -u
: "${PATCH:?PATCH=the change, as git diff prints it}"
ROUNDS=${ROUNDS:-4}
OLD=/tmp/gin-ring-ab-old
scripts/copy-tree.sh $OLD -R "$PATCH" || { echo "cannot reverse $PATCH"; exit 1; }
build() {
  (cd "$1" && cmake -S . -B build-ring -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-ring -j "$(nproc)" --target gin_perf_cuda ginrun) >/dev/null 2>&1 ||
    { echo "BUILD FAILED in $1"; exit 1; }
}
build $OLD
build .
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log NCCL_NVLS_ENABLE=0
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control' EXIT
for k in $(seq "$ROUNDS"); do
  for t in $OLD .; do
    for th in 1 4; do
      # The round trip's median (us) and the rate (M ops/s).
      r=$(cd $t && GIN_BACKEND=proxy GIN_TRANSPORT=null GIN_PROXY_THREADS=$th timeout 120 \
        build-ring/ginrun -n 2 --timeout 100 build-ring/gin_perf_cuda ring -n 5000 -w 500 --blocks 8 -e 8 2>&1 |
        grep -E "ring_rate|^\[0\] ring " | awk '{print $5, $8}' | tr '\n' ' ')
      echo "== $k $([ $t = . ] && echo new || echo old) threads=$th: $r"
    done
  done
done
