#!/usr/bin/env bash
# One GPU call for the next session (fourteenth session's plan, not run):
# does a VMM window fix block bandwidth over 8.4 GB windows (issue 8)?
# From a clean tree on the GPU machine:
#   cp docs/perf/2026-12-03j/next-vmm/vmm.patch . && bash docs/perf/2026-12-03j/next-vmm/vmm-ab.sh
# Logs under $OUT. Steps:
#  1. kernel.yama.ptrace_scope (pidfd_getfd between sibling ranks needs it
#     <= 1 with PR_SET_PTRACER, which vmm.patch sets).
#  2. vmm-probe/ipc_probe.cu without and with MPS: the four-load copy into
#     a child process's buffer shared by CUDA IPC or by a VMM descriptor.
#  3. The tree with vmm.patch built (checks off, NVSHMEM on). GIN_CUDA_VMM=0
#     is the code as it is; =1 the VMM windows. Under MPS: conformance at
#     2 and 8 ranks and test_ep at 4 with GIN_CUDA_VMM=1; then gin-perf bw
#     to 64 MiB (8.4 GB windows) and to 16 MiB with VMM 0 and 1, and
#     nvshmem_perf bw to 64 MiB; then thread / warp / block round trips
#     8-256 B with VMM 0 and 1 (--launches 3).
# Prediction: if ipc_probe's vmm rows keep ~1990 GB/s where its ipc rows
# fall to ~1350, gin bw with GIN_CUDA_VMM=1 holds ~1970 GB/s from 1 MiB to
# 64 MiB (against ~1350 with 0), and round trips do not move.
set -u
OUT=${OUT:-$PWD/vmm-out}
mkdir -p "$OUT"
P=docs/perf/2026-12-03j/vmm-probe
echo "ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo none)" | tee "$OUT/summary.txt"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p /tmp/mps-pipe /tmp/mps-log
nvcc -O2 -arch=sm_90 -o /tmp/ipc_probe $P/ipc_probe.cu -lcuda && {
  echo "== no MPS"; timeout 90 /tmp/ipc_probe; echo "rc=$?"
  nvidia-cuda-mps-control -d
  echo "== MPS"; timeout 90 /tmp/ipc_probe; echo "rc=$?"
  echo quit | nvidia-cuda-mps-control; sleep 1
} >"$OUT/ipc_probe.txt" 2>&1
tee -a "$OUT/summary.txt" <"$OUT/ipc_probe.txt"
patch -p1 <vmm.patch >/dev/null || { echo "vmm.patch failed" | tee -a "$OUT/summary.txt"; exit 1; }
B=build-vmm
(cmake -S . -B $B -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DGIN_DEVICE_CHECKS=OFF -DGIN_NVSHMEM=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
  cmake --build $B -j16 --target ginrun gin_perf_cuda nvshmem_perf conformance_cuda test_ep_cuda) \
  >"$OUT/build.log" 2>&1
echo "build rc=$?" | tee -a "$OUT/summary.txt"
NVH=$(sed -n 's/^NVSHMEM_HOME:[A-Z]*=//p' $B/CMakeCache.txt)
export LD_LIBRARY_PATH="$NVH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
R=$B/ginrun
nvidia-cuda-mps-control -d
run() { # name, env..., command...
  local n=$1
  shift
  timeout 200 env "$@" >"$OUT/$n.log" 2>&1
  echo "$n rc=$?" | tee -a "$OUT/summary.txt"
}
for n in 2 8; do run conf_vmm_$n GIN_CUDA_VMM=1 $R -n $n --timeout 180 $B/tests/conformance/conformance_cuda; done
run ep_vmm_4 GIN_CUDA_VMM=1 $R -n 4 --timeout 180 $B/tests/ep/test_ep_cuda
for v in 0 1; do
  for e in 67108864 16777216; do
    run bw_vmm${v}_$e GIN_CUDA_VMM=$v $R -n 2 --timeout 180 $B/gin_perf_cuda bw -b 65536 -e $e -f 4 --reps 3 \
      --csv "$OUT/bw_vmm${v}_$e.csv"
    echo "  $(awk -F, 'NR>1 && $3=="bw"{printf "%s:%s ", $5, $8}' "$OUT/bw_vmm${v}_$e.csv")" | tee -a "$OUT/summary.txt"
  done
done
run bw_nvshmem_67108864 $R -n 2 --timeout 180 $B/nvshmem_perf bw -b 65536 -e 67108864 -f 4 --reps 3 \
  --csv "$OUT/bw_nvshmem.csv"
echo "  $(awk -F, 'NR>1 && $3=="bw"{printf "%s:%s ", $5, $8}' "$OUT/bw_nvshmem.csv")" | tee -a "$OUT/summary.txt"
for g in thread warp block; do
  for v in 0 1; do
    run pp_${g}_vmm$v GIN_CUDA_VMM=$v $R -n 2 --timeout 100 $B/gin_perf_cuda pingpong -g $g -b 8 -e 256 -f 4 \
      -n 5000 -w 500 --launches 3 --csv "$OUT/pp_${g}_vmm$v.csv"
    echo "  $(awk -F, 'NR>1 && $3=="pingpong"{printf "%s:%s/%s ", $5, $6, $11}' "$OUT/pp_${g}_vmm$v.csv")" |
      tee -a "$OUT/summary.txt"
  done
done
echo quit | nvidia-cuda-mps-control
# One archive: the device tool brings back only a few files per call.
tar -C "$OUT" -czf "$OUT.tgz" . && rm -rf "$OUT" && mkdir -p "$OUT" && mv "$OUT.tgz" "$OUT/logs.tgz"
