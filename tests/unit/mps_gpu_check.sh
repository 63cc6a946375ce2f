#!/bin/sh
# ginrun's MPS handling with the real daemon, on a GPU machine.
# usage: mps_gpu_check.sh ginrun|warn PATH/ginrun PATH/gin_demo_cuda
#   ginrun: a 4-rank job through ginrun, with no daemon running, must say
#           it started one for the job and leave no MPS process or job
#           directory behind.
#   warn:   2 ranks started with torchrun's variables (no ginrun, no MPS)
#           share the GPU: the job works and rank 0 warns once.
# Skips (77) without a GPU or where a daemon already runs at the default
# directory (it would serve the job instead). Exit 0 pass, 1 fail.
set -u
mode=${1:?usage: mps_gpu_check.sh ginrun|warn ginrun demo}
GINRUN=${2:?usage}
DEMO=${3:?usage}
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "SKIP: no GPU (nvidia-smi -L lists none)"
  exit 77
fi
if [ -e /tmp/nvidia-mps/control ]; then
  echo "SKIP: an MPS daemon runs at /tmp/nvidia-mps"
  exit 77
fi
command -v timeout >/dev/null 2>&1 || { echo "SKIP: no timeout"; exit 77; }
procs() { pgrep -c -f '^nvidia-cuda-mps-(control|server)' || true; }
jobdirs() { ls -d "${TMPDIR:-/tmp}"/ginrun-mps-* 2>/dev/null | wc -l; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { cat "$out"; echo "mps_gpu_check $mode: $*"; exit 1; }

if [ "$mode" = ginrun ]; then
  p0=$(procs) d0=$(jobdirs)
  env -u CUDA_MPS_PIPE_DIRECTORY -u CUDA_MPS_LOG_DIRECTORY \
    timeout -k 5 100 "$GINRUN" -n 4 --timeout 90 "$DEMO" >"$out" 2>&1
  rc=$?
  [ $rc = 0 ] || fail "the job failed (status $rc)"
  grep -q "started an MPS control daemon" "$out" || fail "ginrun started no MPS daemon"
  sleep 1 # the server's exit after quit
  [ "$(procs)" = "$p0" ] && [ "$(jobdirs)" = "$d0" ] ||
    fail "MPS processes $p0 -> $(procs), job directories $d0 -> $(jobdirs)"
else
  port=$((29600 + $$ % 300))
  env -u CUDA_MPS_PIPE_DIRECTORY -u GIN_RANK -u GIN_NRANKS WORLD_SIZE=2 \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout -k 5 100 sh -c '
      RANK=0 LOCAL_RANK=0 "$0" & a=$!
      RANK=1 LOCAL_RANK=1 "$0"; b=$?; wait $a; a=$?; exit $((a | b))' "$DEMO" \
    >"$out" 2>&1
  rc=$?
  [ $rc = 0 ] || fail "the job failed (status $rc)"
  n=$(grep -c "2 ranks share 1 GPU without MPS (ranks 0-1)" "$out")
  [ "$n" = 1 ] || fail "$n warnings about ranks sharing the GPU without MPS, wanted 1"
fi
cat "$out"
echo "mps_gpu_check $mode: passed"
