#!/usr/bin/env bash
# Prepared for the next GPU call (nineteenth session, not run: the device
# time was spent): the six cuda fault tests REPS times (default 3) on
# this tree and on a copy with PATCH (default leanwait.patch, the lean
# wait of 3741650 that call 10's devbarrier failure took back out),
# alternating under one MPS daemon. A client refused by MPS right after
# the previous victim is retried once after 15 s (as device-run.sh does).
# From the repository root: OUT=$OUT/fr bash docs/perf/2026-12-04c/fault-repeat.sh
set -u
OUT=${OUT:-$PWD/fr-out}
PATCH=${PATCH:-docs/perf/2026-12-04c/leanwait.patch}
REPS=${REPS:-3}
TESTS=${TESTS:-fault_cuda_devbarrier_3 fault_cuda_puts_direct_2 fault_cuda_gate_2 fault_cuda_abort_3 fault_cuda_puts_proxy_2 fault_cuda_ep_3}
L=$OUT/logs
mkdir -p "$L"
say() { echo "== $*" | tee -a "$L/summary.txt"; }
say "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
nvidia-smi -L >"$L/gpu.txt"
scripts/copy-tree.sh /tmp/fr-patched "$PATCH" || { say "patch failed"; exit 1; }
for t in .:tree /tmp/fr-patched:patched; do
  d=${t%%:*} v=${t#*:}
  { cmake -S "$d" -B "$d/build-fr" -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build "$d/build-fr" -j 16 --target ginrun fault_cuda; } >>"$L/build_$v.log" 2>&1 ||
    { say "BUILD FAILED ($v)"; tail -30 "$L/build_$v.log"; exit 1; }
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log NCCL_NVLS_ENABLE=0
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && say "MPS started"
one() { # dir, tag, test
  (cd "$1/build-fr" && timeout 100 ctest -V -R "^$3\$" --timeout 60) >"$L/$2_$3.log" 2>&1
}
for rep in $(seq "$REPS"); do
  for t in $TESTS; do
    for x in .:tree /tmp/fr-patched:patched; do
      d=${x%%:*} v=${x#*:}
      one "$d" "${v}_$rep" "$t"
      rc=$?
      if [ $rc != 0 ] && grep -q "cudaErrorDevicesUnavailable" "$L/${v}_${rep}_$t.log"; then
        mv "$L/${v}_${rep}_$t.log" "$L/${v}_${rep}_$t.try1.log"
        sleep 15
        one "$d" "${v}_$rep" "$t"
        rc=$?
      fi
      say "$v rep $rep $t rc=$rc"
    done
  done
done
echo quit | nvidia-cuda-mps-control
cp "$L/summary.txt" "$OUT/summary.txt"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
