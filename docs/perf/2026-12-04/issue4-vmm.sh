#!/usr/bin/env bash
# One GPU call (fifteenth session): issue 4's proxy and host-initiated rows
# with VMM windows the default. From the repository root on the GPU machine:
#   OUT=$OUT/i4 bash docs/perf/2026-12-04/issue4-vmm.sh
# gin-perf (device checks on, as device-run.sh's figures): proxy + ipc bw
# 64 KiB - 16 MiB with the default (VMM) and GIN_CUDA_VMM=0 (CUDA IPC),
# alternating, twice; the direct thread round trip against the
# host-initiated baseline and the floors (`all --floors`), 8 B - 4 KiB.
set -u
OUT=${OUT:-$PWD/i4-out}
L=$OUT/logs
mkdir -p "$L"
say() { echo "$*" | tee -a "$L/summary.txt"; }
say "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
{ cmake -S . -B build-dev -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  cmake --build build-dev -j 16 --target ginrun gin_perf_cuda; } >"$L/build.log" 2>&1 ||
  { say "BUILD FAILED"; tail -30 "$L/build.log"; exit 1; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
export GIN_TIMEOUT_MS=30000 NCCL_NVLS_ENABLE=0
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
R=build-dev/ginrun P=build-dev/gin_perf_cuda
for i in 1 2; do
  for v in vmm ipc; do
    t=proxy_bw_${v}_$i m=-1
    [ $v = ipc ] && m=0
    timeout 150 env GIN_BACKEND=proxy GIN_CUDA_VMM=$m \
      $R -n 2 --timeout 140 $P bw -b 65536 -e 16777216 -f 4 --csv "$L/$t.csv" >"$L/$t.log" 2>&1
    say "$t rc=$? $(awk -F, 'NR>1 && $3=="bw"{printf "%s:%s/%s ", $5, $8, $12}' "$L/$t.csv")"
  done
done
t=direct_all
timeout 200 $R -n 2 --timeout 190 $P all --floors -g thread -b 8 -e 4096 -f 8 -n 2000 -w 200 \
  --csv "$L/$t.csv" >"$L/$t.log" 2>&1
say "$t rc=$?"
awk -F, 'NR>1{printf "%s %s %s %s %s\n", $3, $5, $6, $10, $12}' "$L/$t.csv" | tee -a "$L/summary.txt"
echo quit | nvidia-cuda-mps-control
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
