#!/usr/bin/env bash
# Probe (twentieth session, call 5; docs/perf/2026-12-04d): does fault_cuda_devbarrier_3's late
# failure (a survivor's gin_window_deregister blocked until ~130-170 ms
# after the kill, then cudaErrorIllegalAddress) depend on how window
# memory is shared? The scenario N times with the default (VMM, cuMemCreate
# descriptors) and with GIN_CUDA_VMM=0 (CUDA IPC), in turn, under MPS.
# Usage (repository root, on the GPU machine): OUT=dir N=4 bash THIS
# (KINDS="default" runs only the VMM case; slow releases are logged by
# the library since the twentieth session and copied to the summary.)
set -u
OUT=${OUT:-$PWD/probe-out}; mkdir -p "$OUT"
nvidia-smi -L > "$OUT/gpu.txt"
cmake -S . -B build-dev -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$OUT/build.log" 2>&1 &&
  cmake --build build-dev -j 16 --target ginrun fault_cuda >>"$OUT/build.log" 2>&1 || { echo "BUILD FAILED"; exit 1; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log NCCL_NVLS_ENABLE=0
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
for k in $(seq "${N:-4}"); do
  for v in ${KINDS:-default 0}; do
    name=devbarrier_vmm${v}_$k
    for _ in 1 2; do
      if [ $v = default ]; then
        sh tests/fault/fault.sh build-dev/ginrun build-dev/tests/fault/fault_cuda 3 devbarrier 1 >"$OUT/$name.log" 2>&1
      else
        GIN_CUDA_VMM=0 sh tests/fault/fault.sh build-dev/ginrun build-dev/tests/fault/fault_cuda 3 devbarrier 1 >"$OUT/$name.log" 2>&1
      fi
      rc=$?
      # MPS still tearing the last victim down refuses new clients: again.
      grep -q "cudaErrorDevicesUnavailable" "$OUT/$name.log" || break
      sleep 15
    done
    echo "== $name: rc=$rc $(grep -ho 'gin_window_deregister@[0-9.]*' "$OUT/$name.log" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
    grep -h "took [0-9.]* ms" "$OUT/$name.log" | cut -c1-300 | tee -a "$OUT/summary.txt"
    sleep 5
  done
done
echo quit | nvidia-cuda-mps-control
