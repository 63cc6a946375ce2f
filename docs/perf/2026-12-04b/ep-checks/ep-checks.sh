#!/usr/bin/env bash
# One GPU call (eighteenth session): gin-ep-bench at DeepEP's defaults
# with the device argument checks on (the default build) and off
# (-DGIN_DEVICE_CHECKS=OFF, as gin-perf and the multi-GPU script run
# their benchmarks), alternating under one MPS daemon: 4 ranks three
# times, 2 and 8 ranks twice. Every run checks its outputs against the
# CPU reference. From the repository root:
#   OUT=$OUT/epc bash docs/perf/2026-12-04b/ep-checks/ep-checks.sh
set -u
OUT=${OUT:-$PWD/epc-out}
L=$OUT/logs
mkdir -p "$L"
say() { echo "== $*" | tee -a "$L/summary.txt"; }
say "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
for c in ON OFF; do
  { cmake -S . -B build-epc-$c -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DGIN_DEVICE_CHECKS=$c \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-epc-$c -j 16 --target ginrun gin_ep_bench_cuda; } >>"$L/build.log" 2>&1 ||
    { say "BUILD FAILED ($c)"; tail -30 "$L/build.log"; exit 1; }
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
export GIN_TIMEOUT_MS=20000 NCCL_NVLS_ENABLE=0
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && say "MPS started"
for run in 4:1 2:1 8:1 4:2 2:2 8:2 4:3; do
  n=${run%%:*} i=${run#*:}
  for c in ON OFF; do
    t=ep_${c}_${n}_$i
    timeout 100 build-epc-$c/ginrun -n "$n" --timeout 90 build-epc-$c/gin_ep_bench_cuda -n 50 -w 5 \
      --csv "$L/$t.csv" >"$L/$t.log" 2>&1
    say "$t rc=$? $(grep -h 'pipelined (no host' "$L/$t.log" | sed 's/.*time): //') | $(grep -h 'pipelined, medians per phase' "$L/$t.log" | sed 's/.*per phase: //')"
  done
done
echo quit | nvidia-cuda-mps-control
cp "$L/summary.txt" "$OUT/summary.txt"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
