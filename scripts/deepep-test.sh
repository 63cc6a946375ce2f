#!/usr/bin/env bash
# DeepEP's own tests against gin on one GPU: every rank on device 0 under
# an MPS daemon this script starts and stops, through
# scripts/deepep_test.py (gin_comm.deep_ep as `deep_ep`, a gloo group for
# DeepEP's init_dist). From the repository root of a GPU machine where
# `import gin_comm` finds the cuda target (pip install .):
#
#   DEEPEP=PATH/TO/DeepEP OUT=DIR scripts/deepep-test.sh
#
# DEEPEP: a DeepEP checkout (v1.2.1; nothing of it is built: only its
# tests/ folder is used). Each step bounded:
# - tests/test_low_latency.py at RUNS (ranks:experts, default "2:64 4:32
#   8:16 8:288": DeepEP's defaults are 8 ranks and 288 experts, 128
#   tokens, hidden 7168, top-8; empty: none);
# - its pressure loop bounded to PRESSURE (seeds,repeats; default 20,5)
#   at PRESSURE_RUN (default 4:32; empty: none);
# - the normal mode's tests/test_intranode.py at INTRA ranks (default
#   "2 4 8"; empty: none) with DeepEP's defaults (4096 tokens, 256
#   experts), its tuning loop included.
# Output in $OUT (default ./deepep-test-out): summary.txt, meta.txt,
# logs.tgz; exit status 0 when every step passed. LIMIT: seconds a step
# (300), BUDGET: in all (1500).
set -u
LIMIT=${LIMIT:-300}
BUDGET=${BUDGET:-1500}
# gpu_begin moves to the repository root: a relative DEEPEP first.
case ${DEEPEP:-} in /* | '') ;; *) DEEPEP=$PWD/$DEEPEP ;; esac
# shellcheck source=gpu-lib.sh
. "$(dirname "$0")/gpu-lib.sh"
gpu_begin deepep-test-out
gpu_meta "DEEPEP=${DEEPEP:-} OUT=$OUT scripts/deepep-test.sh" >"$OUT/meta.txt"
T=${DEEPEP:-}/tests/test_low_latency.py
if [ ! -f "$T" ]; then
  say "DEEPEP=${DEEPEP:-} holds no tests/test_low_latency.py: set DEEPEP to a DeepEP checkout"
  fails=1
  finish
  exit 1
fi
if ! GIN_COMM_TARGET=cuda python3 -c 'import gin_comm' 2>"$LOGS/import.log"; then
  say "gin_comm with the cuda target does not import (pip install . first): $(tail -1 "$LOGS/import.log")"
  fails=1
  finish
  exit 1
fi
mps_start deepep-test || say "MPS did not start: the ranks time-slice the GPU"
export GIN_COMM_TARGET=cuda PYTHONUNBUFFERED=1 GIN_TIMEOUT_MS=${GIN_TIMEOUT_MS:-20000}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
H=scripts/deepep_test.py
port=8361
for run in ${RUNS-2:64 4:32 8:16 8:288}; do
  port=$((port + 1))
  step "ll_${run%:*}x${run#*:}" env MASTER_PORT=$port python3 $H "$T" \
    --num-processes "${run%:*}" --num-experts "${run#*:}"
done
P=${PRESSURE_RUN-4:32}
port=$((port + 1))
[ -n "$P" ] && step "ll_pressure_${P%:*}x${P#*:}" env MASTER_PORT=$port \
  python3 $H "$T" --num-processes "${P%:*}" --num-experts "${P#*:}" \
  --pressure "${PRESSURE:-20,5}"
# Normal mode: DeepEP's intranode test (4096 tokens, hidden 7168, top-8,
# 256 experts; its tuning loop included) at each rank count of INTRA.
for n in ${INTRA-2 4 8}; do
  port=$((port + 1))
  step "intranode_$n" env MASTER_PORT=$port python3 $H \
    "$DEEPEP/tests/test_intranode.py" --num-processes "$n"
done
mps_stop
finish
