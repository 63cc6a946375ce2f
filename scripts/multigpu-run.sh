#!/usr/bin/env bash
# The multi-GPU run: gin across GPUs, side by side with NCCL and
# NVSHMEM, in one call on a machine with several GPUs of one host. From
# the repository root:
#
#   OUT=DIR scripts/multigpu-run.sh          (default DIR: ./multigpu-out)
#
# 1. Counts the GPUs (nvidia-smi -L). N >= 2: one rank per GPU, no MPS;
#    rank counts R = 2, 4, 8 up to N. N = 1: the degenerate mode, a smoke
#    test only: ranks share GPU 0 under an MPS daemon this script starts and
#    stops, R = 2 and 4, NCCL with one rank sending to itself (NCCL refuses
#    two ranks on one GPU), and every output says "1 GPU: not the
#    multi-GPU measurement".
# 2. Builds, side by side: $BUILD (device checks on) for the conformance
#    and EP suites; $BUILD_PERF (-DGIN_DEVICE_CHECKS=OFF, as benchmarks
#    run) for gin_perf_cuda, gin_ep_bench_cuda and, where found,
#    nvshmem_perf and nccl_perf (-DGIN_NVSHMEM=AUTO -DGIN_NCCL=AUTO).
#    Both -DGIN_CUDA_ARCH=90, RelWithDebInfo.
# 3. Runs, most important first, each under `timeout`, each logged:
#    conformance (GIN_BACKEND=direct at every R; proxy + ipc at 2 and the
#    largest R) and the EP suite at the largest R; gin-perf between GPU 0
#    and GPU 1 (pingpong thread/warp/block, bw, and the floors: raw flag
#    ping-pong, device copy, the copy into the peer's memory); nccl_perf
#    (ncclSend/ncclRecv ping-pong and bandwidth); nvshmem_perf (the same
#    tests as gin's);
#    gin_ep_bench and scripts/ep_nccl_a2a.py (torch all_to_all_single over
#    NCCL) at every R, largest first; gin-perf over the proxy (ipc).
# 4. scripts/multigpu-table.py joins every CSV into $OUT/multigpu.md (also
#    printed), $OUT/multigpu-p2p.csv and $OUT/multigpu-ep.csv.
#
# NVLink multicast stays off: NCCL_NVLS_ENABLE=0, NVSHMEM_DISABLE_NVLS=1,
# TORCH_SYMM_MEM_DISABLE_MULTICAST=1 are exported for everything.
# Bounded: each step gets at most LIMIT seconds and the steps stop once
# BUDGET seconds from the start are spent (the rest are listed as skipped),
# so the call ends within about BUDGET + 30 s.
# Output in $OUT: summary.txt (one line per step), meta.txt, multigpu.md,
# multigpu-p2p.csv, multigpu-ep.csv, logs.tgz (every log and CSV).
# Settings (environment): BUILD (build-mg), BUILD_PERF (build-mg-perf),
# NO_BUILD=1, JOBS (nproc), LIMIT (150), BUDGET (500), RANKS (override the
# rank counts), PP_SIZES ("-b 8 -e 1048576 -f 8"), PP_THREAD_MAX (65536),
# BW_SIZES ("-b 65536 -e 16777216 -f 4"), COMMON ("-n 1000 -w 100 --reps
# 5"), PROXY_COMMON ("-n 200 -w 20 --reps 3"), EP_ITERS ("-n 50 -w 5"),
# COMMIT (what meta.txt names; default: git describe, where .git exists).
# Exit status 0 when every step ran and passed.
set -u
LIMIT=${LIMIT:-150}
BUDGET=${BUDGET:-500}
# shellcheck source=gpu-lib.sh
. "$(dirname "$0")/gpu-lib.sh"
gpu_begin multigpu-out
BUILD=${BUILD:-build-mg}
BUILD_PERF=${BUILD_PERF:-build-mg-perf}
read -r -a PP <<<"${PP_SIZES:--b 8 -e 1048576 -f 8}"
read -r -a BW <<<"${BW_SIZES:--b 65536 -e 16777216 -f 4}"
read -r -a COM <<<"${COMMON:--n 1000 -w 100 --reps 5}"
read -r -a PCOM <<<"${PROXY_COMMON:--n 200 -w 20 --reps 3}"
read -r -a EPI <<<"${EP_ITERS:--n 50 -w 5}"
PP_THREAD_MAX=${PP_THREAD_MAX:-65536}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export GIN_TIMEOUT_MS=${GIN_TIMEOUT_MS:-60000} PYTHONUNBUFFERED=1
unset GIN_BACKEND GIN_TRANSPORT GIN_CUDA_DEVICE

# ------------------------------------------------------------ the machine
nvidia-smi -L >"$LOGS/gpus.txt" 2>&1
say "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
NG=$(grep -c '^GPU ' "$LOGS/gpus.txt")
nvidia-smi topo -m >"$LOGS/topo.txt" 2>&1
if [ "$NG" -lt 1 ]; then
  say "no GPU (nvidia-smi -L): nothing to run"
  exit 1
fi
if [ "$NG" -ge 2 ]; then
  MODE="$NG GPUs, one rank per GPU"
  RANKS_DEF=""
  for r in 2 4 8; do [ "$r" -le "$NG" ] && RANKS_DEF="$RANKS_DEF $r"; done
  case " $RANKS_DEF " in *" $NG "*) ;; *) [ $((288 % NG)) -eq 0 ] && [ "$NG" -le 8 ] &&
    RANKS_DEF="$RANKS_DEF $NG" ;; esac
  NCCL_RANKS=2
else
  MODE="1 GPU: not the multi-GPU measurement (ranks share GPU 0 under MPS)"
  RANKS_DEF="2 4"
  NCCL_RANKS=1
fi
read -r -a RANKS <<<"${RANKS:-$RANKS_DEF}"
# Largest first: R=8 is the one compared with DeepEP's figures.
read -r -a RANKS_DESC <<<"$(printf '%s\n' "${RANKS[@]}" | sort -rn | tr '\n' ' ')"
RMAX=${RANKS_DESC[0]}
say "multigpu-run $(date -u +%FT%TZ): $MODE; ranks ${RANKS[*]}"
link=$(awk '$1 == "GPU0" && $2 == "X" { print $3; exit }' "$LOGS/topo.txt")
q() { nvidia-smi --query-gpu="$1" --format=csv,noheader 2>/dev/null | head -1; }
{
  echo "date: $(date -u +%FT%TZ)"
  echo "command: OUT=$OUT scripts/multigpu-run.sh"
  echo "mode: $MODE"
  echo "gpus: $NG x $(q name), driver $(q driver_version)"
  [ "$NG" -ge 2 ] && echo "GPU0-GPU1 link (nvidia-smi topo -m): ${link:-?}"
  echo "commit: ${COMMIT:-$(git describe --always --dirty 2>/dev/null || echo unknown)}"
  echo "cuda: $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "builds: $BUILD (checks on), $BUILD_PERF (checks off)," \
    "-DGIN_CUDA_ARCH=90, RelWithDebInfo"
  echo "settings: NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1" \
    "TORCH_SYMM_MEM_DISABLE_MULTICAST=1 GIN_TIMEOUT_MS=$GIN_TIMEOUT_MS"
  echo "sizes: pingpong ${PP[*]} (thread to $PP_THREAD_MAX), bw ${BW[*]}," \
    "${COM[*]}; proxy ${PCOM[*]}; EP ${EPI[*]}"
} >"$OUT/meta.txt"

# ------------------------------------------------------------------ build
if [ "${NO_BUILD:-0}" != 1 ]; then
  t0=$SECONDS
  export -f configure_build
  export JOBS
  timeout -k 10 240 bash -c 'configure_build "$@"' _ "$BUILD" "$LOGS/build.log" \
    ginrun conformance_cuda test_ep_cuda -- -DGIN_NVSHMEM=OFF -DGIN_NCCL=OFF &
  b1=$!
  timeout -k 10 240 bash -c 'configure_build "$@"' _ "$BUILD_PERF" \
    "$LOGS/build-perf.log" ginrun gin_perf_cuda gin_ep_bench_cuda -- \
    -DGIN_DEVICE_CHECKS=OFF -DGIN_NVSHMEM=AUTO -DGIN_NCCL=AUTO &
  b2=$!
  wait $b1
  rc1=$?
  wait $b2
  rc2=$?
  for t in nvshmem_perf nccl_perf; do
    if grep -q "building $t" "$LOGS/build-perf.log"; then
      timeout -k 10 120 cmake --build "$BUILD_PERF" -j "$JOBS" --target "$t" \
        >>"$LOGS/build-perf.log" 2>&1 || say "build of $t failed (build-perf.log)"
    else
      say "$t not built: $(grep -m1 "$t skipped" "$LOGS/build-perf.log" | sed 's/^-- //')"
    fi
  done
  say "build: $BUILD rc=$rc1, $BUILD_PERF rc=$rc2 ($((SECONDS - t0)) s)"
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
    grep -h -E "error|Error" "$LOGS"/build*.log | head -20 | tee -a "$SUMMARY"
    fails=$((fails + 1))
  fi
fi
GR=$BUILD_PERF/ginrun
[ -x "$GR" ] || GR=$BUILD/ginrun
P=$BUILD_PERF/gin_perf_cuda
NVH=$(sed -n 's/^NVSHMEM_HOME:[A-Z]*=//p' "$BUILD_PERF/CMakeCache.txt" 2>/dev/null)

# --------------------------------------------------------------- MPS (1 GPU)
if [ "$NG" -lt 2 ]; then
  mps_start multigpu ||
    say "MPS did not start: ranks on the one GPU time-slice (slow, still bounded)"
else
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi

# ------------------------------------------------------------------ steps
GRT=(--timeout $((LIMIT - 10))) # ginrun's own bound, inside the step's
DIRECT=(env GIN_BACKEND=direct)
PROXY=(env GIN_BACKEND=proxy GIN_TRANSPORT=ipc)

# Correctness first: the conformance suite, then the EP suite.
if have "$BUILD/tests/conformance/conformance_cuda"; then
  for n in "${RANKS[@]}"; do
    step "conformance_direct_$n" "${DIRECT[@]}" "$GR" -n "$n" --timeout 100 \
      "$BUILD/tests/conformance/conformance_cuda"
  done
  for n in $(printf '%s\n' 2 "$RMAX" | sort -un); do
    step "conformance_proxy_ipc_$n" "${PROXY[@]}" "$GR" -n "$n" --timeout 100 \
      "$BUILD/tests/conformance/conformance_cuda"
  done
fi
have "$BUILD/tests/ep/test_ep_cuda" &&
  step "ep_test_direct_$RMAX" "${DIRECT[@]}" "$GR" -n "$RMAX" --timeout 120 \
    "$BUILD/tests/ep/test_ep_cuda"

# Point to point between GPU 0 and GPU 1: gin direct, NCCL, NVSHMEM.
if have "$P"; then
  for g in thread warp block; do
    e=(); [ $g = thread ] && e=(-e "$PP_THREAD_MAX")
    step "gin_pp_$g" "${DIRECT[@]}" "$GR" -n 2 "${GRT[@]}" "$P" \
      pingpong -g $g "${PP[@]}" "${e[@]}" "${COM[@]}" --csv "$LOGS/gin_pp_$g.csv"
  done
  step gin_bw "${DIRECT[@]}" "$GR" -n 2 "${GRT[@]}" "$P" bw "${BW[@]}" "${COM[@]}" \
    --csv "$LOGS/gin_bw.csv"
  # The floors: raw flag ping-pong, device copy, the copy into the peer's
  # memory up to 256 MiB (the window of -e 1 MiB holds that), CPU floors.
  step gin_floors "${DIRECT[@]}" "$GR" -n 2 "${GRT[@]}" "$P" floors -b 8 \
    -e 1048576 -f 8 -n 200 -w 20 --csv "$LOGS/gin_floors.csv"
fi
if have "$BUILD_PERF/nccl_perf"; then
  NP=("$GR" -n "$NCCL_RANKS" "${GRT[@]}" "$BUILD_PERF/nccl_perf")
  step nccl_pp "${NP[@]}" pingpong "${PP[@]}" "${COM[@]}" --csv "$LOGS/nccl_pp.csv"
  step nccl_bw "${NP[@]}" bw "${BW[@]}" "${COM[@]}" --csv "$LOGS/nccl_bw.csv"
fi
if have "$BUILD_PERF/nvshmem_perf"; then
  NV=(env "LD_LIBRARY_PATH=${NVH:+$NVH/lib:}${LD_LIBRARY_PATH:-}")
  for g in thread warp block; do
    e=(); [ $g = thread ] && e=(-e "$PP_THREAD_MAX")
    step "nvshmem_pp_$g" "${NV[@]}" "$GR" -n 2 "${GRT[@]}" \
      "$BUILD_PERF/nvshmem_perf" pingpong -g $g "${PP[@]}" "${e[@]}" "${COM[@]}" \
      --csv "$LOGS/nvshmem_pp_$g.csv"
  done
  step nvshmem_bw "${NV[@]}" "$GR" -n 2 "${GRT[@]}" \
    "$BUILD_PERF/nvshmem_perf" bw "${BW[@]}" "${COM[@]}" --csv "$LOGS/nvshmem_bw.csv"
fi

# EP at DeepEP's low-latency defaults: gin, then NCCL's all-to-all.
B=$BUILD_PERF/gin_ep_bench_cuda
A2A=(python3 scripts/ep_nccl_a2a.py)
for n in "${RANKS_DESC[@]}"; do
  have "$B" && step "ep_gin_$n" "${DIRECT[@]}" "$GR" -n "$n" \
    "${GRT[@]}" "$B" "${EPI[@]}" --csv "$LOGS/ep_gin_$n.csv"
  # The experts' outputs written into gin's combine buffer (DeepEP's
  # zero-copy combine): combine reads them in place.
  have "$B" && step "ep_gin_zc_$n" "${DIRECT[@]}" "$GR" -n "$n" \
    "${GRT[@]}" "$B" "${EPI[@]}" --zero-copy --csv "$LOGS/ep_gin_zc_$n.csv"
  if [ "$NG" -ge 2 ]; then
    step "ep_nccl_$n" "$GR" -n "$n" "${GRT[@]}" "${A2A[@]}" "${EPI[@]}" \
      --csv "$LOGS/ep_nccl_$n.csv"
  fi
done
if [ "$NG" -lt 2 ]; then # the script's code path, as far as one GPU allows
  step ep_nccl_1 "$GR" -n 1 "${GRT[@]}" "${A2A[@]}" "${EPI[@]}" \
    --csv "$LOGS/ep_nccl_1.csv"
  step ep_gloo_2 "$GR" -n 2 "${GRT[@]}" "${A2A[@]}" --backend gloo -n 5 -w 1 \
    --csv "$LOGS/ep_gloo_2.csv"
fi

# The proxy path (ipc transport: copy engine) between GPU 0 and GPU 1.
if [ -x "$P" ]; then
  for g in thread warp block; do
    e=(); [ $g = thread ] && e=(-e "$PP_THREAD_MAX")
    step "gin_pp_${g}_proxy" "${PROXY[@]}" "$GR" -n 2 "${GRT[@]}" "$P" \
      pingpong -g $g "${PP[@]}" "${e[@]}" "${PCOM[@]}" \
      --csv "$LOGS/gin_pp_${g}_proxy.csv"
  done
  step gin_bw_proxy "${PROXY[@]}" "$GR" -n 2 "${GRT[@]}" "$P" bw "${BW[@]}" \
    "${PCOM[@]}" --csv "$LOGS/gin_bw_proxy.csv"
fi
mps_stop

# ------------------------------------------------------------------ table
first() { # sed expression, files...: the first line it prints, or "not run"
  local v
  v=$(sed -n "$1" "${@:2}" 2>/dev/null | head -1)
  echo "${v:-not run}"
}
{
  lib=$(first 's/^-- gin: NCCL \(.*\), building.*/\1/p' "$LOGS/build-perf.log")
  echo "nccl_perf: $(first 's/.*# nccl_perf, \(NCCL [^,]*\).*/\1/p' \
    "$LOGS"/nccl_*.log) (libnccl: $lib)"
  echo "ep_nccl_a2a: $(first 's/.*# ep_nccl_a2a, \(torch [^,]*, NCCL [^,]*\).*/\1/p' \
    "$LOGS"/ep_nccl_*.log)"
  echo "nvshmem_perf: $(first 's/.*# nvshmem_perf, \(NVSHMEM [0-9.]*\).*/\1/p' \
    "$LOGS"/nvshmem_*.log) (${NVH:-NVSHMEM not found})"
  echo "steps: $fails failed, $skipped skipped, $((SECONDS - T0)) s"
} >>"$OUT/meta.txt"
csvs=("$LOGS"/*.csv)
if [ -e "${csvs[0]}" ]; then
  python3 scripts/multigpu-table.py -o "$OUT" --gpus "$NG" --meta "$OUT/meta.txt" \
    "${csvs[@]}" >"$LOGS/table.log" 2>&1 || fails=$((fails + 1))
  cat "$LOGS/table.log"
else
  say "no CSV: no table"
  fails=$((fails + 1))
fi
say "$MODE"
finish
