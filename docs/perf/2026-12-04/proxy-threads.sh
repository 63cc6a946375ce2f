#!/usr/bin/env bash
# One GPU call (seventeenth session): proxy + ipc bandwidth at 4 and 16 MiB
# against the number of proxy threads (GIN_PROXY_THREADS 1, 2, 4, 8; the
# 64 contexts are dealt round robin to them), and with EXP (a patch in the
# tree) applied to a copy: the large copies of one submission as one
# cudaMemcpyBatchAsync per side stream (GIN_EXP_LARGE_BATCH=1) instead of
# one cudaMemcpyAsync each. Plus the floors (one cudaMemcpyAsync's host
# cost). From the repository root on the GPU machine:
#   OUT=$OUT/px EXP=exp-lb.patch bash docs/perf/2026-12-04/proxy-threads.sh
set -u
OUT=${OUT:-$PWD/px-out}
L=$OUT/logs
mkdir -p "$L"
say() { echo "$*" | tee -a "$L/summary.txt"; }
say "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
{ cmake -S . -B build-dev -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  cmake --build build-dev -j 16 --target ginrun gin_perf_cuda; } >"$L/build.log" 2>&1 ||
  { say "BUILD FAILED"; tail -30 "$L/build.log"; exit 1; }
X=/tmp/exp-tree
XP=""
if [ -n "${EXP:-}" ] && scripts/copy-tree.sh $X "$EXP" &&
  (cd $X && cmake -S . -B build-x -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-x -j 16 --target gin_perf_cuda) >"$L/build-x.log" 2>&1; then
  XP=$X/build-x/gin_perf_cuda
else
  say "no experiment tree"
fi
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
export GIN_TIMEOUT_MS=30000 NCCL_NVLS_ENABLE=0
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
R=build-dev/ginrun P=build-dev/gin_perf_cuda
bw() { # tag, binary, env...
  local t=$1 p=$2
  shift 2
  timeout 150 env GIN_BACKEND=proxy "$@" \
    $R -n 2 --timeout 140 "$p" bw -b 4194304 -e 16777216 -f 4 --csv "$L/$t.csv" >"$L/$t.log" 2>&1
  say "$t rc=$? $(awk -F, 'NR>1 && $3=="bw"{printf "%s:%s/%s ", $5, $8, $12}' "$L/$t.csv")"
}
for i in 1 2; do
  for th in 1 2 4 8; do
    bw threads${th}_$i $P GIN_PROXY_THREADS=$th
  done
  if [ -n "$XP" ]; then
    for th in 1 4; do
      bw lbatch_threads${th}_$i "$XP" GIN_PROXY_THREADS=$th GIN_EXP_LARGE_BATCH=1
    done
  fi
done
t=floors
timeout 100 $R -n 2 --timeout 90 $P floors --csv "$L/$t.csv" >"$L/$t.log" 2>&1
say "$t rc=$?"
awk -F, 'NR>1{printf "%s %s %s %s\n", $3, $5, $6, $8}' "$L/$t.csv" | tee -a "$L/summary.txt"
echo quit | nvidia-cuda-mps-control
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
