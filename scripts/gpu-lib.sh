# shellcheck shell=bash
# Shared by the GPU machine's scripts (gpu-test.sh, gpu-perf.sh,
# nvshmem-compare.sh, multigpu-run.sh); sourced, not run. The caller sets
# BUDGET and LIMIT (seconds) if it wants others than the defaults below,
# sources this, then calls gpu_begin (or sets OUT, LOGS, SUMMARY and T0
# itself) and the functions below from the repository root.
#
# Counters: fails, skipped (steps that failed, steps not run),
# unselected (steps STEPS left out).

fails=0 skipped=0 unselected=0 step_t0=$SECONDS
GIN_ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# gpu_begin DEFAULT_OUT: OUT (default ./DEFAULT_OUT, made absolute), LOGS
# and SUMMARY (emptied) under it, T0; then into the repository root.
gpu_begin() {
  T0=$SECONDS
  OUT=${OUT:-$PWD/$1}
  mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
  cd "$GIN_ROOT_DIR" || exit 1
  LOGS=$OUT/logs
  mkdir -p "$LOGS"
  SUMMARY=$OUT/summary.txt
  : >"$SUMMARY"
}
BUDGET=${BUDGET:-100000}
LIMIT=${LIMIT:-300}
JOBS=${JOBS:-$(nproc)}

say() { echo "== $*" | tee -a "$SUMMARY"; }

# bounded NAME COMMAND...: runs it under timeout within the budget, its
# output in $LOGS/NAME.log; returns its exit status, 75 without running
# it once the budget is spent, or 76 without running it when STEPS (an
# extended regular expression) is set and does not match all of NAME
# (STEPS='ep_.*|memcheck_2' re-runs those steps of a run).
bounded() {
  local name=$1
  shift
  if [ -n "${STEPS:-}" ] && ! [[ $name =~ ^($STEPS)$ ]]; then
    unselected=$((unselected + 1))
    return 76
  fi
  local left=$((BUDGET - (SECONDS - T0)))
  [ "$left" -lt 15 ] && return 75
  local lim=$((left < LIMIT ? left : LIMIT))
  step_t0=$SECONDS
  timeout -k 10 "$lim" "$@" >"$LOGS/$name.log" 2>&1
}

# judge NAME STATUS: one summary line; 0 passes, 77 (the tests' "skip")
# and 75 (budget spent) count as skipped, 76 (not in STEPS) says nothing,
# anything else fails, with the tail of the log. Returns STATUS.
judge() {
  local name=$1 rc=$2
  case $rc in
  0) say "$name: ok ($((SECONDS - step_t0)) s)" ;;
  76) ;;
  75)
    say "$name: skipped (the budget of $BUDGET s is spent)"
    skipped=$((skipped + 1))
    ;;
  77)
    say "$name: skipped: $(grep -m1 SKIP "$LOGS/$name.log")"
    skipped=$((skipped + 1))
    ;;
  *)
    say "$name: FAILED rc=$rc ($((SECONDS - step_t0)) s)"
    fails=$((fails + 1))
    tail -6 "$LOGS/$name.log" | sed 's/^/    /' | tee -a "$SUMMARY"
    ;;
  esac
  return "$rc"
}

# step NAME COMMAND...: bounded, then judged.
step() {
  bounded "$@"
  judge "$1" $?
}

# have PROGRAM: present, or a skip line.
have() {
  [ -x "$1" ] && return 0
  say "$(basename "$1"): not built, its steps skipped"
  skipped=$((skipped + 1))
  return 1
}

# configure_build DIR LOG TARGETS... -- CMAKE_OPTIONS...: the cuda target
# for sm_90, RelWithDebInfo, only the targets named.
configure_build() {
  local dir=$1 log=$2
  shift 2
  local targets=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do targets+=("$1"); shift; done
  shift
  cmake -S . -B "$dir" -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$log" 2>&1 &&
    cmake --build "$dir" -j "$JOBS" --target "${targets[@]}" >>"$log" 2>&1
}

# builds_ok STATUS...: returns when every build status is 0; otherwise
# puts the build logs' errors in the summary and ends the run FAILED.
builds_ok() {
  local rc
  for rc in "$@"; do
    [ "$rc" -eq 0 ] && continue
    grep -h -E "error|Error" "$LOGS"/build*.log | head -20 | tee -a "$SUMMARY"
    fails=$((fails + 1))
    finish
    exit 1
  done
}

# mps_start NAME: a control daemon private to this script (its pipe and
# log directories under /tmp/gin-NAME-mps-*), stopped by mps_stop and on
# exit. Returns non-zero when it cannot start (ranks on one GPU then
# time-slice: slow, still bounded).
mps=0
mps_stop() {
  if [ "$mps" = 1 ]; then
    echo quit | nvidia-cuda-mps-control
    mps=0
    cp "$CUDA_MPS_LOG_DIRECTORY/control.log" "$LOGS/mps-control.log" 2>/dev/null
  fi
  return 0
}
mps_start() {
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/gin-$1-mps-pipe
  export CUDA_MPS_LOG_DIRECTORY=/tmp/gin-$1-mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  trap mps_stop EXIT
  trap 'exit 130' INT TERM HUP
  nvidia-cuda-mps-control -d || return 1
  mps=1
  say "MPS started ($CUDA_MPS_PIPE_DIRECTORY)"
}

# gpu_meta COMMAND: date, command, GPU, driver, commit and tree digest, on
# stdout. The GPU machine's copy of the tree may carry stale git metadata,
# so the digest (scripts/tree-digest.sh) names the code that ran.
gpu_meta() {
  q() { nvidia-smi --query-gpu="$1" --format=csv,noheader 2>/dev/null | head -1; }
  echo "date: $(date -u +%FT%TZ)"
  echo "command: $1"
  echo "gpu: $(q name), driver $(q driver_version), $(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') GPU(s)"
  echo "cuda: $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "commit: ${GIN_COMMIT:-$(git describe --always --dirty 2>/dev/null || echo unknown)}"
  echo "tree digest: $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
}

# finish: packs $LOGS into $OUT/logs.tgz (the device tool brings back few
# files), prints the summary's verdict line and returns 0 only when no
# step failed or was skipped.
finish() {
  local verdict=OK
  [ "$fails" -eq 0 ] && [ "$skipped" -eq 0 ] || verdict=FAILED
  [ "$fails" -eq 0 ] && [ "$skipped" -gt 0 ] && verdict="FAILED (steps skipped)"
  local sel=""
  [ "$unselected" -gt 0 ] && sel=", $unselected not in STEPS=$STEPS"
  say "done $(date -u +%FT%TZ): $fails failed, $skipped skipped$sel, $((SECONDS - T0)) s"
  tar -C "$OUT" -czf "$OUT/logs.tgz" "$(basename "$LOGS")" && rm -rf "$LOGS"
  echo "$verdict" | tee -a "$SUMMARY"
  [ "$verdict" = OK ]
}
