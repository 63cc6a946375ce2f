#!/usr/bin/env bash
# One GPU call (nineteenth session): gin-ep-bench at DeepEP's defaults on
# this tree (the lean put) and on a copy with before-lean.patch (the
# device code of 718dceb), alternating under one MPS daemon: 2, 4 and 8
# ranks, twice each. Every run checks its outputs against the CPU
# reference. From the repository root:
#   OUT=$OUT/epab bash docs/perf/2026-12-04c/ep-ab.sh
set -u
OUT=${OUT:-$PWD/epab-out}
L=$OUT/logs
mkdir -p "$L"
say() { echo "== $*" | tee -a "$L/summary.txt"; }
say "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
nvidia-smi -L >"$L/gpu.txt"
scripts/copy-tree.sh /tmp/ep-before docs/perf/2026-12-04c/before-lean.patch || { say "patch failed"; exit 1; }
for t in .:lean /tmp/ep-before:before; do
  d=${t%%:*} v=${t#*:}
  { cmake -S "$d" -B "$d/build-epab" -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build "$d/build-epab" -j 16 --target ginrun gin_ep_bench_cuda; } >>"$L/build_$v.log" 2>&1 ||
    { say "BUILD FAILED ($v)"; tail -30 "$L/build_$v.log"; exit 1; }
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
export GIN_TIMEOUT_MS=20000 NCCL_NVLS_ENABLE=0
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && say "MPS started"
for run in 2:1 4:1 8:1 2:2 4:2 8:2; do
  n=${run%%:*} i=${run#*:}
  for t in .:lean /tmp/ep-before:before; do
    d=${t%%:*} v=${t#*:}
    f=ep_${v}_${n}_$i
    timeout 100 "$d/build-epab/ginrun" -n "$n" --timeout 90 "$d/build-epab/gin_ep_bench_cuda" -n 50 -w 5 \
      --csv "$L/$f.csv" >"$L/$f.log" 2>&1
    say "$f rc=$? $(grep -h 'pipelined (no host' "$L/$f.log" | sed 's/.*time): //') | $(grep -h 'pipelined, medians per phase' "$L/$f.log" | sed 's/.*per phase: //')"
  done
done
echo quit | nvidia-cuda-mps-control
cp "$L/summary.txt" "$OUT/summary.txt"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
