#!/usr/bin/env bash
# One call on the GPU machine: build the cuda target, run the conformance
# suite with 2, 4 and 8 ranks on the one GPU under MPS, the bad-input suite,
# the demo, and compute-sanitizer memcheck on one configuration.
# Logs go to $OUT (or ./device-out). Usage: scripts/device-run.sh
# (MODE=perf: only the build and gin-perf; MODE=ep, ladder, nvshmem, epx,
# ncu, check: see each below. Modes of earlier sessions' diagnoses (diag, diag2,
# diag3, px, epdebug, final, nvs3) are in the history, up to 4ee529a.)
set -u
OUT=${OUT:-$PWD/device-out}
FINAL=$OUT
OUT=$FINAL/logs   # everything lands here; packed into logs.tgz at the end
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
# EXP=patch (modes nvshmem, epx, check): a copy of the tree at $X with
# the patch applied (a reversed diff gives the code before a change),
# built beside this one so that both run in the same session.
X=/tmp/exp-tree
exp_copy() {
  scripts/copy-tree.sh $X "$EXP" || { log "experiment patch failed"; return 1; }
}
exp_build() { # build dir, cmake options (one word list), targets...
  local dir=$1 opts=$2
  shift 2
  # shellcheck disable=SC2086 # opts is a list of options
  (cd $X && cmake -S . -B "$dir" $opts -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
    cmake --build "$dir" -j 16 --target "$@" >/dev/null 2>&1) || { log "experiment build failed ($dir)"; return 1; }
}

nvidia-smi -L | tee "$OUT/gpu.txt"
# Which code ran: this copy's git metadata may be stale, its contents not.
log "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown)"
# MODE=nvshmem: gin against NVSHMEM side by side (issue 8). The script
# builds build-nvshmem (device checks off, nvshmem_perf) and runs its own
# MPS daemon; its CSVs, table and plots land in $FINAL/nvshmem.
if [ "${MODE:-all}" = nvshmem ]; then
  BUILD=build-nvshmem JOBS=16 scripts/nvshmem-compare.sh "$FINAL/nvshmem" 2>&1 | tee "$OUT/nvshmem.log"
  log "nvshmem-compare: rc=${PIPESTATUS[0]}"
  # EXP=patch: both rate tests of a copy with the patch applied (a
  # reversed diff: the code before a change), under one MPS daemon.
  if [ -n "${EXP:-}" ] && [ -f "$EXP" ]; then
    exp_copy && exp_build build-xn "-DGIN_CUDA=ON -DGIN_DEVICE_CHECKS=OFF -DGIN_NVSHMEM=ON" \
      ginrun gin_perf_cuda nvshmem_perf
    NVH=$(sed -n 's/^NVSHMEM_HOME:[A-Z]*=//p' build-nvshmem/CMakeCache.txt)
    export LD_LIBRARY_PATH="$NVH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
    mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
    nvidia-cuda-mps-control -d && log "MPS started"
    for p in gin_perf_cuda nvshmem_perf; do
      for b in build-nvshmem $X/build-xn; do
        tag=$p-$(basename $b)
        timeout 120 $X/build-xn/ginrun -n 2 --timeout 100 $b/$p rate -n 300 -w 30 --reps 3 \
          --csv "$OUT/rate_$tag.csv" >"$OUT/rate_$tag.log" 2>&1
        log "rate $tag: rc=$? $(grep -h '^rate' "$OUT/rate_$tag.csv" 2>/dev/null | head -1)"
      done
    done
    echo quit | nvidia-cuda-mps-control; sleep 1
  fi
  # One archive: the device tool brings back only a few files per call.
  cp "$OUT/summary.txt" "$FINAL/summary.txt"
  tar -C "$FINAL" -czf "$FINAL/logs.tgz" logs nvshmem && rm -rf "$OUT" "$FINAL/nvshmem"
  exit 0
fi
log "build $(date -u +%FT%TZ)"
if [ "${MODE:-all}" != lat ]; then
cmake -S . -B build-dev -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CUDA_FLAGS=-lineinfo \
  >"$OUT/build.log" 2>&1 && cmake --build build-dev -j 16 ${CHECK_QUICK:+--target ginrun \
  test_ep_cuda test_ep_badinput_cuda conformance_cuda abort_cuda fault_cuda gate_cuda gin_ep_bench_cuda \
  test_ep_liar1_cuda test_ep_liar2_cuda test_ep_liar3_cuda} >>"$OUT/build.log" 2>&1 \
  || { log "BUILD FAILED"; tail -50 "$OUT/build.log"; exit 1; }
# The same benchmarks without device-side argument checks.
if [ -z "${CHECK_QUICK:-}" ]; then
  cmake -S . -B build-dev-nochecks -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DGIN_DEVICE_CHECKS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >>"$OUT/build.log" 2>&1 && \
    cmake --build build-dev-nochecks -j 16 --target gin_perf_cuda test_ep_cuda conformance_cuda >>"$OUT/build.log" 2>&1 \
    || log "nochecks build failed"
fi
else # MODE=lat: gin-perf only (checks off), below
  cmake -S . -B build-dev-nochecks -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DGIN_DEVICE_CHECKS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$OUT/build.log" 2>&1 && \
    cmake --build build-dev-nochecks -j 16 --target gin_perf_cuda ginrun >>"$OUT/build.log" 2>&1 \
    || { log "BUILD FAILED"; tail -50 "$OUT/build.log"; exit 1; }
fi

export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && log "MPS started"
export GIN_TIMEOUT_MS=60000 NCCL_NVLS_ENABLE=0
R=build-dev/ginrun
T=build-dev/tests/conformance

run() { # name, command... 
  local name=$1; shift
  local t0=$(date +%s.%N)
  timeout 300 "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  local t1=$(date +%s.%N)
  log "$name: rc=$rc ($(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s)"
  tail -4 "$OUT/$name.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
}

# Stops MPS, packs the logs into $FINAL/logs.tgz, prints the summary and
# exits.
finish() {
  echo quit | nvidia-cuda-mps-control 2>/dev/null; sleep 1
  log "done $(date -u +%FT%TZ)"
  cp "$OUT/summary.txt" "$FINAL/summary.txt"
  tar -C "$FINAL" -czf "$FINAL/logs.tgz" logs && rm -rf "$OUT"
  cat "$FINAL/summary.txt"
  exit 0
}

# EP: the test suite with 2, 4 and 8 ranks on every path, the example,
# the benchmark (DeepEP's low-latency defaults, host-initiated baseline
# and CUDA graph replay in the same run) and memcheck.
pf() { # name, env..., -- args...
  local name=$1; shift
  run perf_$name env "$@" --csv $OUT/perf_$name.csv --json $OUT/perf_$name.json
}
ep_runs() {
  E=build-dev/tests/ep
  for n in 2 4 8; do run ep_test_$n $R -n $n --timeout 280 $E/test_ep_cuda; done
  run ep_test_proxy_4 env GIN_BACKEND=proxy $R -n 4 --timeout 280 $E/test_ep_cuda
  run ep_test_tcp_2 env GIN_BACKEND=proxy GIN_TRANSPORT=tcp $R -n 2 --timeout 280 $E/test_ep_cuda
  [ -x $E/test_ep_badinput_cuda ] && run ep_badinput_3 $R -n 3 --timeout 120 $E/test_ep_badinput_cuda
  run ep_hello_4 $R -n 4 --timeout 60 build-dev/gin_ep_hello_cuda
  B=build-dev/gin_ep_bench_cuda
  run ep_bench_8 $R -n 8 --timeout 280 $B -n 20 -w 3 --csv $OUT/ep_bench_8.csv
  run ep_bench_8_bf16 $R -n 8 --timeout 280 $B --bf16 -n 20 -w 3 --csv $OUT/ep_bench_8_bf16.csv
  run ep_bench_4 $R -n 4 --timeout 280 $B -n 20 -w 3 --csv $OUT/ep_bench_4.csv
  run ep_bench_2 $R -n 2 --timeout 280 $B -n 20 -w 3 --csv $OUT/ep_bench_2.csv
  run ep_bench_8_proxy env GIN_BACKEND=proxy $R -n 8 --timeout 280 $B -n 10 -w 2 --no-baseline --csv $OUT/ep_bench_8_proxy.csv
  run ep_memcheck_2 $R -n 2 --timeout 280 compute-sanitizer --tool memcheck --error-exitcode 9 $E/test_ep_cuda
}
# EP experiments (EXP): the EP benchmark of a copy with the patch
# ("patched", built in $X/build-xc) and of this tree ("tree") in turn,
# for each ranks:turn of $1; then ep_extra. (Runs before the sixth
# session's end named the files otherwise: docs/perf/2026-12-03b/README.md.)
ep_compare() {
  exp_copy && exp_build build-xc "-DGIN_CUDA=ON -DGIN_CUDA_ARCH=90" gin_ep_bench_cuda
  # EXP2=patch: a second copy with that patch (on this tree), as patched2.
  local b2=""
  if [ -n "${EXP2:-}" ] && [ -f "$EXP2" ]; then
    (X=/tmp/exp-tree2 EXP=$EXP2; exp_copy && exp_build build-xc "-DGIN_CUDA=ON -DGIN_CUDA_ARCH=90" gin_ep_bench_cuda) &&
      b2=/tmp/exp-tree2/build-xc/gin_ep_bench_cuda
    log "patched2 = $EXP2 (${b2:-build failed})"
  fi
  local ni n i
  for ni in $1; do # ranks:turn
    n=${ni%:*} i=${ni#*:}
    run ep_bench_patched_${n}_$i $R -n $n --timeout 60 $X/build-xc/gin_ep_bench_cuda -n 50 -w 5 --csv $OUT/ep_bench_patched_${n}_$i.csv
    run ep_bench_tree_${n}_$i $R -n $n --timeout 60 build-dev/gin_ep_bench_cuda -n 50 -w 5 --csv $OUT/ep_bench_tree_${n}_$i.csv
    [ -n "$b2" ] && run ep_bench_patched2_${n}_$i $R -n $n --timeout 60 $b2 -n 50 -w 5 --csv $OUT/ep_bench_patched2_${n}_$i.csv
  done
  ep_extra
}
# EP_EXTRA: one more EP configuration at EP_EXTRA_N ranks (2 unless
# set), twice, both trees (e.g. "-e 384": more local experts than the
# dispatch receive's block budget).
ep_extra() {
  [ -n "${EP_EXTRA:-}" ] || return 0
  local i n=${EP_EXTRA_N:-2}
  for i in 1 2; do
    run ep_extra_patched_$i $R -n $n --timeout 60 $X/build-xc/gin_ep_bench_cuda $EP_EXTRA -n 50 -w 5 --csv $OUT/ep_extra_patched_$i.csv
    run ep_extra_tree_$i $R -n $n --timeout 60 build-dev/gin_ep_bench_cuda $EP_EXTRA -n 50 -w 5 --csv $OUT/ep_extra_tree_$i.csv
  done
}

# MODE=epx: the EP suite on every path, memcheck, and the EP benchmark at
# 2 / 4 / 8 ranks (phases timed one by one). Short timeouts: a broken
# kernel costs seconds, not minutes.
if [ "${MODE:-all}" = epx ]; then
  export GIN_TIMEOUT_MS=5000
  E=build-dev/tests/ep; B=build-dev/gin_ep_bench_cuda
  for n in 2 4 8; do run ep_test_$n $R -n $n --timeout 30 $E/test_ep_cuda; done
  run px_test_ep_4 env GIN_BACKEND=proxy $R -n 4 --timeout 30 $E/test_ep_cuda
  run px_test_ep_tcp_2 env GIN_BACKEND=proxy GIN_TRANSPORT=tcp $R -n 2 --timeout 30 $E/test_ep_cuda
  run ep_badinput_3 $R -n 3 --timeout 30 $E/test_ep_badinput_cuda
  run ep_memcheck_4 $R -n 4 --timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $E/test_ep_cuda
  export GIN_TIMEOUT_MS=20000
  for n in 2 4 8; do run ep_bench_$n $R -n $n --timeout 60 $B -n 50 -w 5 --csv $OUT/ep_bench_$n.csv; done
  run ep_bench_8_bf16 $R -n 8 --timeout 60 $B --bf16 -n 50 -w 5 --csv $OUT/ep_bench_8_bf16.csv
  # EXP=patch: the same benchmark of a copy with the patch applied (a
  # reversed diff gives the code before a change), alternating with this
  # tree's, so both sides share the run.
  if [ -n "${EXP:-}" ] && [ -f "$EXP" ]; then ep_compare "${EP_COMPARE_RUNS:-2:1 4:1 8:1}"; fi
  finish
fi

# MODE=ncu: Nsight Compute on the EP send kernels (NCU_KERNELS, a regex;
# NCU_COUNT launches), one rank (nothing to wait for, so kernel replay
# works; the same bytes as a rank of a 2-rank run), no MPS: where their
# time goes (stall reasons, memory, occupancy), and the stall samples per
# SASS instruction with its source line (-lineinfo) as a CSV of the
# source page; the report lands in $OUT.
if [ "${MODE:-all}" = ncu ]; then
  echo quit | nvidia-cuda-mps-control 2>/dev/null; sleep 1
  export GIN_TIMEOUT_MS=120000
  run ncu_ep_send timeout 300 ncu --target-processes all \
    --kernel-name regex:"${NCU_KERNELS:-k_ep_(dispatch|combine)_send}" \
    --launch-skip 6 --launch-count "${NCU_COUNT:-2}" \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section MemoryWorkloadAnalysis --section SourceCounters \
    --import-source yes -f -o $OUT/ep_send \
    $R -n 1 --timeout 200 build-dev/gin_ep_bench_cuda -n 3 -w 1 --no-baseline ${NCU_BENCH:-}
  ncu -i $OUT/ep_send.ncu-rep --page details > $OUT/ep_send_details.txt 2>&1
  ncu -i $OUT/ep_send.ncu-rep --page source --csv --print-source cuda,sass \
    > $OUT/ep_send_source.csv 2> $OUT/ep_send_source.err
  log "source page: $(wc -l < $OUT/ep_send_source.csv) lines"
  # PROBE=1: then, under MPS, how the EP phases scale at 8 ranks with the
  # tokens and top-k (--zero-copy; each phase also on its own), and an
  # nsys timeline of one 8-rank run if nsys is there.
  if [ -n "${PROBE:-}" ]; then
    nvidia-cuda-mps-control -d && log "MPS started"
    export GIN_TIMEOUT_MS=20000
    for a in "-t 128" "-t 64" "-t 32" "-t 128 -k 2" "-t 128 -k 4"; do
      tag=$(echo "$a" | tr -d ' -')
      # shellcheck disable=SC2086 # a is a list of options
      run probe8_$tag $R -n 8 --timeout 60 build-dev/gin_ep_bench_cuda $a --zero-copy -n 30 -w 3 --csv $OUT/probe8_$tag.csv
      grep -h "on its own\|per phase" "$OUT/probe8_$tag.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    done
    run probe2_t128 $R -n 2 --timeout 60 build-dev/gin_ep_bench_cuda --zero-copy -n 30 -w 3 --csv $OUT/probe2_t128.csv
    if command -v nsys >/dev/null; then
      run nsys8 nsys profile --trace=cuda -o $OUT/ep8 -f true $R -n 8 --timeout 100 build-dev/gin_ep_bench_cuda --zero-copy -n 10 -w 2 --no-baseline
      nsys stats --report cuda_gpu_kern_sum $OUT/ep8.nsys-rep > $OUT/nsys8_kern.txt 2>&1
      log "nsys: $(wc -l < $OUT/nsys8_kern.txt) lines"
    else
      log "no nsys"
    fi
  fi
  finish
fi

# MODE=lat EXPS="a.patch b.patch": a latency experiment with several
# candidates and nothing else: gin-perf (checks off) of this tree ("base")
# and of a copy with each patch applied ("x1", "x2", ...), run in turn:
# 8-byte thread round trip, warp and block round trips, barrier, rate and
# the ladder (LAT_REPS=n: the round trips and the rate n times, default
# 2). For a landing, MODE=check follows.
if [ "${MODE:-all}" = lat ]; then
  R=build-dev-nochecks/ginrun
  bins="base:build-dev-nochecks/gin_perf_cuda"
  i=0
  for p in ${EXPS:-}; do
    i=$((i + 1)); X=/tmp/exp-tree-$i; EXP=$p
    exp_copy && exp_build build-x "-DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DGIN_DEVICE_CHECKS=OFF" gin_perf_cuda &&
      bins="$bins x$i:$X/build-x/gin_perf_cuda"
    log "x$i = $p"
  done
  for rep in $(seq "${LAT_REPS:-2}"); do
    for b in $bins; do pf pp_${b%%:*}_$rep $R -n 2 --timeout 60 ${b#*:} pingpong -b 8 -e 8 -n 5000 -w 500; done
    for g in warp block; do
      for b in $bins; do pf pp_${g}_${b%%:*}_$rep $R -n 2 --timeout 60 ${b#*:} pingpong -g $g -b 8 -e 4096 -f 8 -n 5000 -w 500; done
    done
    # The rate moves by ~15 % between runs: every rep, in turn.
    for b in $bins; do pf rate_${b%%:*}_$rep $R -n 2 --timeout 60 ${b#*:} rate -n 300 -w 30 --reps 5; done
  done
  # BW=1: block-issued bandwidth of each, in turn, twice, up to 16 MiB;
  # then this tree's up to 64 MiB (a larger window: the largest size sets
  # it) and the machine's floors.
  if [ -n "${BW:-}" ]; then
    for rep in 1 2; do
      for b in $bins; do pf bw_${b%%:*}_$rep $R -n 2 --timeout 100 ${b#*:} bw -b 65536 -e 16777216 -f 4 --reps 5 --raw; done
    done
    pf bw_base_to64m $R -n 2 --timeout 100 build-dev-nochecks/gin_perf_cuda bw -b 65536 -e 67108864 -f 4 --reps 5 --raw
    pf floors $R -n 2 --timeout 100 build-dev-nochecks/gin_perf_cuda floors
  fi
  for b in $bins; do
    pf bar_block_${b%%:*} $R -n 2 --timeout 60 ${b#*:} barrier -g block -n 5000 -w 500
    pf ladder_${b%%:*} $R -n 2 --timeout 60 ${b#*:} ladder -n 3000 -w 300
    # SCAN=1: the raw floor per flag line and on a signal word (floorscan).
    [ -n "${SCAN:-}" ] && pf floorscan_${b%%:*} $R -n 2 --timeout 100 ${b#*:} floorscan -n 3000 -w 300
  done
  finish
fi

# MODE=check: correctness only, for a landing: conformance (direct, proxy
# ipc with a tiny ring, proxy tcp), bad input, the EP suite on every path,
# a short soak and the cuda fault tests (RACECHECK=1: also racecheck).
if [ "${MODE:-all}" = check ]; then
  export GIN_TIMEOUT_MS=15000
  E=build-dev/tests/ep
  # CHECK_QUICK=1: only the EP suite, racecheck (with RACECHECK) and the
  # fault tests (FAULT_TESTS): for a short device budget.
  if [ -z "${CHECK_QUICK:-}" ]; then
  for n in 2 4 8; do run conformance_cuda_$n $R -n $n --timeout 60 $T/conformance_cuda; done
  # Checks compiled out, as the benchmarks build it.
  for n in 2 8; do run conformance_nochecks_$n $R -n $n --timeout 60 build-dev-nochecks/tests/conformance/conformance_cuda; done
  run ep_test_nochecks_8 $R -n 8 --timeout 60 build-dev-nochecks/tests/ep/test_ep_cuda
  # The receive's sources one at a time (two count arrays in turn).
  run ep_test_onesrc_4 $R -n 4 --timeout 60 build-dev/tests/ep/test_ep_onesrc_cuda
  run conformance_proxy_tinyring_4 env GIN_BACKEND=proxy GIN_PROXY_RING_SIZE=8 $R -n 4 --timeout 60 $T/conformance_cuda
  run conformance_tcp_2 env GIN_BACKEND=proxy GIN_TRANSPORT=tcp $R -n 2 --timeout 60 $T/conformance_cuda
  run badinput_cuda_2 $R -n 2 --timeout 60 $T/badinput_cuda
  run badinput_cuda_proxy_3 env GIN_BACKEND=proxy $R -n 3 --timeout 60 $T/badinput_cuda
  # Window memory (GIN_CUDA_VMM), each case judged PASS / FAIL on its rc
  # and how many lines of its log (INFO on) match a pattern:
  vmm_case() { # name, rc wanted (0 or nz), pattern, lines at least, command...
    local name=$1 want=$2 pat=$3 min=$4 rc n v=FAIL
    shift 4
    timeout 100 env GIN_DEBUG=INFO GIN_DEBUG_SUBSYS=INIT "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    n=$(grep -c -- "$pat" "$OUT/$name.log")
    { [ "$want" = 0 ] && [ $rc = 0 ] || { [ "$want" = nz ] && [ $rc != 0 ]; }; } &&
      [ "$n" -ge "$min" ] && v=PASS
    log "$name: $v (rc=$rc; $n lines match '$pat', wanted >= $min)"
  }
  C=$T/conformance_cuda DENY=build-dev/tests/unit/deny_pidfd_getfd
  # The default picks VMM here (no Yama, root): each rank says so.
  vmm_case vmm_default_2 0 'windows from cuMemCreate' 2 $R -n 2 --timeout 60 $C
  vmm_case vmm_ipc_2 0 'conformance: passed' 1 env GIN_CUDA_VMM=0 $R -n 2 --timeout 60 $C
  # Even ranks CUDA IPC, odd ranks VMM: each imports both kinds.
  vmm_case vmm_mixed_4 0 'windows from cuMemCreate' 2 $R -n 4 --timeout 60 \
    sh -c '[ $((GIN_RANK % 2)) = 0 ] && export GIN_CUDA_VMM=0; exec "$@"' sh $C
  # Rank 1 cannot take descriptors (pidfd_getfd refused by seccomp): both
  # ranks fall back to CUDA IPC, naming rank 1 and rank 0, and pass.
  vmm_case vmm_denied_2 0 "rank 1 cannot take rank 0's memory descriptors" 2 \
    $R -n 2 --timeout 60 sh -c '[ "$GIN_RANK" = 1 ] && exec "$0" "$@"; exec "$@"' $DENY $C
  # The same with GIN_CUDA_VMM=1 on rank 0: both fail init saying why.
  vmm_case vmm_denied_forced_2 nz 'and rank 0 has GIN_CUDA_VMM=1' 2 $R -n 2 --timeout 60 \
    sh -c '[ "$GIN_RANK" = 1 ] && exec "$0" "$@"; export GIN_CUDA_VMM=1; exec "$@"' $DENY $C
  vmm_case vmm_badvalue_2 nz 'GIN_CUDA_VMM=5: expected -1' 2 env GIN_CUDA_VMM=5 $R -n 2 --timeout 60 $C
  # Memory of a VMM window under memcheck.
  run memcheck_vmm_2 $R -n 2 --timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $C
  fi
  for n in 2 4 8; do run ep_test_$n $R -n $n --timeout 60 $E/test_ep_cuda; done
  [ -z "${CHECK_QUICK:-}" ] && {
  run ep_test_proxy_4 env GIN_BACKEND=proxy $R -n 4 --timeout 60 $E/test_ep_cuda
  run ep_test_tcp_2 env GIN_BACKEND=proxy GIN_TRANSPORT=tcp $R -n 2 --timeout 60 $E/test_ep_cuda
  run ep_badinput_3 $R -n 3 --timeout 60 $E/test_ep_badinput_cuda
  run ep_hello_4 $R -n 4 --timeout 60 build-dev/gin_ep_hello_cuda
  run soak_cuda_4 $R -n 4 --timeout 60 build-dev/tests/soak/soak_cuda --seconds 5
  run ep_soak_cuda_4 $R -n 4 --timeout 60 $E/test_ep_cuda --seconds 5
  }
  [ -n "${CHECK_QUICK:-}" ] && run ep_badinput_3 $R -n 3 --timeout 60 $E/test_ep_badinput_cuda
  # Odd ranks push their rows, even ranks' are copied from their windows.
  run ep_test_mixedpull_4 $R -n 4 --timeout 60 $E/test_ep_cuda --mixed-pull
  # A warp with more than 32 rows of one expert (its rows in two batches):
  # 192 local experts (one block each) and 512 rows at each of experts
  # 0-7; checked against the CPU reference.
  run ep_bench_manyrows_2 $R -n 2 --timeout 60 build-dev/gin_ep_bench_cuda -e 384 -t 256 --routing skewed -n 3 -w 1 --no-baseline
  # Rank 1 lies (a count, headers, `where` words): every rank must fail
  # at once naming it, or aborted by one that did.
  for m in 1 2 3; do run ep_liar${m}_3 env GIN_TIMEOUT_MS=10000 $R -n 3 --timeout 60 $E/test_ep_liar${m}_cuda; done
  # EP_AB="VAR=value": the EP benchmark with that setting (set), without
  # (dflt) and with --zero-copy (zc), in turn, at 2 / 4 / 8 ranks and with
  # 16 experts at 2 ranks (several receive units per expert; EP_AB_RUNS
  # changes the list); one binary.
  if [ -n "${EP_AB:-}" ]; then
    run ep_memcheck_4 $R -n 4 --timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $E/test_ep_cuda
    export GIN_TIMEOUT_MS=20000
    for ni in ${EP_AB_RUNS:-2:1 4:1 8:1 2:e16}; do
      n=${ni%:*} i=${ni#*:} extra=""
      [ "$i" = e16 ] && extra="-e 16"
      for v in set dflt zc; do
        pre="" opt=""
        [ $v = set ] && pre="$EP_AB"
        [ $v = zc ] && opt="--zero-copy"
        # shellcheck disable=SC2086 # lists of words
        run ep_bench_${v}_${n}_$i env $pre $R -n $n --timeout 60 build-dev/gin_ep_bench_cuda $extra $opt -n 50 -w 5 --csv $OUT/ep_bench_${v}_${n}_$i.csv
      done
    done
    export GIN_TIMEOUT_MS=15000
  fi
  # EXP=patch EXP_WHAT=ep: the EP benchmark of this tree and of a copy
  # with the patch applied, alternating, at 2 / 4 / 8 ranks and EP_EXTRA
  # at 2 ranks, and this tree's EP suite under memcheck (an EP change).
  if [ -n "${EXP:-}" ] && [ -f "$EXP" ] && [ "${EXP_WHAT:-}" = ep ]; then
    run ep_memcheck_4 $R -n 4 --timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $E/test_ep_cuda
    export GIN_TIMEOUT_MS=20000
    ep_compare "${EP_COMPARE_RUNS:-2:1 4:1 8:1 2:2 8:2}"
    export GIN_TIMEOUT_MS=15000
  # EXP=patch EXP_WHAT=fault: the fault tests below also on a copy with
  # the patch applied (a change that could matter after a death).
  elif [ -n "${EXP:-}" ] && [ -f "$EXP" ] && [ "${EXP_WHAT:-}" = fault ]; then
    exp_copy && exp_build build-xf "-DGIN_CUDA=ON -DGIN_CUDA_ARCH=90" ginrun fault_cuda gate_cuda abort_cuda &&
      FX=$X/build-xf
  # EXP=patch: gin-perf's 8-byte round trip (checks off) of this tree and
  # of a copy with the patch applied, alternating (a latency experiment;
  # here "base" is this tree and "exp" the patched copy).
  elif [ -n "${EXP:-}" ] && [ -f "$EXP" ]; then
    exp_copy && exp_build build-x "-DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DGIN_DEVICE_CHECKS=OFF" gin_perf_cuda &&
      exp_build build-xc "-DGIN_CUDA=ON -DGIN_CUDA_ARCH=90" gin_ep_bench_cuda test_ep_cuda
    PN=build-dev-nochecks/gin_perf_cuda; PX=$X/build-x/gin_perf_cuda
    for i in 1 2; do
      pf pp_base_$i $R -n 2 --timeout 60 $PN pingpong -b 8 -e 8 -n 5000 -w 500
      pf pp_exp_$i $R -n 2 --timeout 60 $PX pingpong -b 8 -e 8 -n 5000 -w 500
    done
    for g in warp block; do
      for t in base exp base2 exp2; do
        b=$PN; [ "${t#exp}" != "$t" ] && b=$PX
        pf pp_${g}_$t $R -n 2 --timeout 60 $b pingpong -g $g -b 8 -e 8192 -f 8 -n 5000 -w 500
      done
      pf bar_${g}_base $R -n 2 --timeout 60 $PN barrier -g $g -n 5000 -w 500
      pf bar_${g}_exp $R -n 2 --timeout 60 $PX barrier -g $g -n 5000 -w 500
    done
    for i in 1 2; do
      pf rate_base_$i $R -n 2 --timeout 60 $PN rate -n 300 -w 30 --reps 5
      pf rate_exp_$i $R -n 2 --timeout 60 $PX rate -n 300 -w 30 --reps 5
    done
    pf ladder_base $R -n 2 --timeout 60 $PN ladder -n 3000 -w 300
    pf ladder_exp $R -n 2 --timeout 60 $PX ladder -n 3000 -w 300
    run exp_ep_test_8 $R -n 8 --timeout 60 $X/build-xc/tests/ep/test_ep_cuda
    for n in 2 8; do
      run ep_bench_base_$n $R -n $n --timeout 60 build-dev/gin_ep_bench_cuda -n 30 -w 3 --csv $OUT/ep_bench_base_$n.csv
      run ep_bench_exp_$n $R -n $n --timeout 60 $X/build-xc/gin_ep_bench_cuda -n 30 -w 3 --csv $OUT/ep_bench_exp_$n.csv
    done
    ep_extra
  fi
  # The figures of the landed code: EP at 2 / 4 / 8 ranks, the 8-byte
  # round trip and the ladder (checks off).
  if [ -n "${FIGURES:-}" ]; then
    export GIN_TIMEOUT_MS=30000
    for n in 2 4 8; do run ep_bench_$n $R -n $n --timeout 60 build-dev/gin_ep_bench_cuda -n 50 -w 5 --csv $OUT/ep_bench_$n.csv; done
    for i in 1 2; do pf pp_nochecks_$i $R -n 2 --timeout 60 build-dev-nochecks/gin_perf_cuda pingpong -b 8 -e 4096 -f 8 -n 5000 -w 500; done
    pf ladder_nochecks $R -n 2 --timeout 60 build-dev-nochecks/gin_perf_cuda ladder -n 5000 -w 500
    export GIN_TIMEOUT_MS=15000
  fi
  # One at a time with a pause: right after a client was SIGKILLed the MPS
  # server refused new clients for a moment (cudaErrorDevicesUnavailable).
  # FAULT_REPS=n: the list n times (logs NAME_k); with EXP_WHAT=fault each
  # test also runs on the patched copy, in turn (logs exp_NAME).
  fault_one() { # build dir, log name, test
    local d=$1 name=$2 t=$3 rc
    (cd "$d" && timeout 100 ctest -V -R "^$t\$" --timeout 60) > "$OUT/$name.log" 2>&1
    rc=$?
    # Refused at init by MPS (still tearing the last victim down): once
    # more (only then: the init call itself names the error).
    if [ $rc != 0 ] && grep -q "gin_comm_init.*cudaErrorDevicesUnavailable" "$OUT/$name.log"; then
      mv "$OUT/$name.log" "$OUT/$name.try1.log"
      sleep 15; log "$name: MPS refused the clients; again"
      (cd "$d" && timeout 100 ctest -V -R "^$t\$" --timeout 60) > "$OUT/$name.log" 2>&1
      rc=$?
    fi
    log "$name: rc=$rc"; grep -E "Test +#" "$OUT/$name.log" | tee -a "$OUT/summary.txt"
    sleep 5
  }
  for k in $(seq "${FAULT_REPS:-1}"); do
    sfx=""
    [ "${FAULT_REPS:-1}" != 1 ] && sfx=_$k
    for t in ${FAULT_TESTS:-fault_cuda_ep_3 fault_cuda_puts_proxy_2 fault_cuda_puts_direct_2 fault_cuda_devbarrier_3 fault_cuda_late_devbarrier_3 fault_cuda_gate_2 fault_cuda_abort_3}; do
      fault_one build-dev "$t$sfx" "$t"
      [ -n "${FX:-}" ] && fault_one "$FX" "exp_$t$sfx" "$t"
    done
  done
  # compute-sanitizer racecheck (shared-memory hazards) on the
  # conformance and EP suites, 2 ranks; each rank's summary line is kept.
  if [ -n "${RACECHECK:-}" ]; then
    for t in conformance:$T/conformance_cuda ep:$E/test_ep_cuda; do
      # (racecheck slows kernels a lot: a longer timeout for the waits)
      run racecheck_${t%%:*}_2 env GIN_TIMEOUT_MS=120000 $R -n 2 --timeout 280 compute-sanitizer --tool racecheck --error-exitcode 9 ${t#*:}
      grep -h "RACECHECK SUMMARY" "$OUT/racecheck_${t%%:*}_2.log" | tee -a "$OUT/summary.txt"
    done
  fi
  # SCAN=1 (not with CHECK_QUICK): gin-perf's floorscan and two 8-byte
  # ping-pongs (checks off) on this GPU too.
  if [ -n "${SCAN:-}" ] && [ -z "${CHECK_QUICK:-}" ]; then
    pf floorscan $R -n 2 --timeout 100 build-dev-nochecks/gin_perf_cuda floorscan -n 3000 -w 300
    for i in 1 2; do pf pp_$i $R -n 2 --timeout 60 build-dev-nochecks/gin_perf_cuda pingpong -b 8 -e 8 -n 5000 -w 500; done
  fi
  finish
fi

if [ "${MODE:-all}" = ep ]; then
  ep_runs
  finish
fi

if [ "${MODE:-all}" = ladder ]; then
# Diagnosis only: the latency ladder with and without checks, the proxy's
# large copies over 8 streams, and the SASS of the ladder's kernel.
P=build-dev/gin_perf_cuda; PN=build-dev-nochecks/gin_perf_cuda
for b in P PN; do run ladder_$b $R -n 2 --timeout 100 ${!b} ladder -n 5000 -w 500; done
run ipc_bw_8streams env GIN_BACKEND=proxy GIN_COPY_STREAMS=8 $R -n 2 --timeout 200 $P bw -b 1048576 -e 16777216 -f 4
cuobjdump -sass -fun _Z11k_lat_V_PUT8lat_args $PN >"$OUT/k_lat_nochecks.sass" 2>&1 || true
finish
fi

if [ "${MODE:-all}" != perf ]; then
for n in 2 4 8; do run conformance_cuda_$n $R -n $n --timeout 280 $T/conformance_cuda; done
# The proxy path on the GPU: ring in mapped host memory, CPU proxy, ipc
# transport (copy engine), signals in mapped host memory.
for n in 2 4; do run conformance_cuda_proxy_$n env GIN_BACKEND=proxy $R -n $n --timeout 280 $T/conformance_cuda; done
run conformance_cuda_proxy_tinyring_4 env GIN_BACKEND=proxy GIN_PROXY_RING_SIZE=8 $R -n 4 --timeout 280 $T/conformance_cuda
run badinput_cuda_proxy_3 env GIN_BACKEND=proxy $R -n 3 --timeout 280 $T/badinput_cuda
# Proxy with the tcp transport (loopback), GPU memory staged by the proxy.
for n in 2 4; do run conformance_cuda_tcp_$n env GIN_BACKEND=proxy GIN_TRANSPORT=tcp $R -n $n --timeout 280 $T/conformance_cuda; done
run badinput_cuda_2 $R -n 2 --timeout 280 $T/badinput_cuda
run badinput_cuda_4 $R -n 4 --timeout 280 $T/badinput_cuda
run demo_cuda_4 $R -n 4 --timeout 100 build-dev/gin_demo_cuda
run demo_cuda_2 $R -n 2 --timeout 100 build-dev/gin_demo_cuda
fi

# gin-perf: floors, the paths and the host-initiated baseline, same run;
# CSV/JSON land in the logs. Thread-issued sweeps stop at 64 KiB (one
# thread copying megabytes is not a use case), warp/block go to 1 MiB.
P=build-dev/gin_perf_cuda
PN=build-dev-nochecks/gin_perf_cuda
pf direct_all $R -n 2 --timeout 280 $P all --floors -g thread -b 8 -e 65536 -f 8 -n 2000 -w 200
pf direct_ladder $R -n 2 --timeout 100 $P ladder -n 5000 -w 500
pf direct_ladder_nochecks $R -n 2 --timeout 100 $PN ladder -n 5000 -w 500
pf direct_pp_nochecks $R -n 2 --timeout 100 $PN pingpong -b 8 -e 4096 -f 8 -n 5000 -w 500
for g in warp block; do
  pf direct_pp_$g $R -n 2 --timeout 200 $P pingpong -g $g -b 8 -e 1048576 -f 8 -n 2000 -w 200
  pf direct_sigpp_$g $R -n 2 --timeout 100 $P sigpp -g $g -n 2000 -w 200
  pf direct_barrier_$g $R -n 2 --timeout 100 $P barrier -g $g -n 2000 -w 200
done
pf direct_bw $R -n 2 --timeout 200 $P bw -b 4096 -e 16777216 -f 4
pf direct_bibw $R -n 2 --timeout 200 $P bibw -b 4096 -e 16777216 -f 4
pf ring_null GIN_BACKEND=proxy GIN_TRANSPORT=null $R -n 2 --timeout 200 $P ring -n 5000 -w 500 --blocks 8 --floors -e 8
pf ring_null_4threads GIN_BACKEND=proxy GIN_TRANSPORT=null GIN_PROXY_THREADS=4 $R -n 2 --timeout 200 $P ring -n 5000 -w 500 --blocks 8
pf ring_null_nochecks GIN_BACKEND=proxy GIN_TRANSPORT=null $R -n 2 --timeout 200 $PN ring -n 5000 -w 500 --blocks 8
# Small puts through the proxy cost a copy-engine copy each: 8 blocks.
pf proxy_ipc GIN_BACKEND=proxy $R -n 2 --timeout 280 $P all -b 8 -e 65536 -f 8 -n 1000 -w 100 --blocks 8 --reps 3
pf proxy_ipc_bw GIN_BACKEND=proxy $R -n 2 --timeout 200 $P bw -b 65536 -e 16777216 -f 4
pf proxy_ipc_bw_1stream GIN_BACKEND=proxy GIN_COPY_STREAMS=1 $R -n 2 --timeout 200 $P bw -b 1048576 -e 16777216 -f 4
pf proxy_ipc_bw_nobatch GIN_BACKEND=proxy GIN_COPY_BATCH=0 $R -n 2 --timeout 200 $P bw -b 4096 -e 262144 -f 8 --blocks 8 --reps 3
pf proxy_tcp GIN_BACKEND=proxy GIN_TRANSPORT=tcp $R -n 2 --timeout 200 $P pingpong -b 8 -e 65536 -f 8 -n 300 -w 30
pf proxy_tcp_bw GIN_BACKEND=proxy GIN_TRANSPORT=tcp $R -n 2 --timeout 200 $P bw -b 65536 -e 4194304 -f 4 --blocks 8 --reps 3
# The host target's tcp path against raw TCP on the same CPUs.
if cmake -S . -B build-host -DGIN_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >>"$OUT/build.log" 2>&1 && \
   cmake --build build-host -j 16 --target gin_perf_host ginrun >>"$OUT/build.log" 2>&1; then
  pf host_tcp GIN_BACKEND=proxy GIN_TRANSPORT=tcp build-host/ginrun -n 2 --timeout 200 build-host/gin_perf_host pingpong --floors -b 8 -e 65536 -f 8 -n 2000 -w 200
  pf host_tcp_bw GIN_BACKEND=proxy GIN_TRANSPORT=tcp build-host/ginrun -n 2 --timeout 200 build-host/gin_perf_host bw --floors -b 4096 -e 4194304 -f 4
fi

if [ "${MODE:-all}" != perf ]; then
ep_runs
# Host target on the same machine, for comparison.
run conformance_host_4 $R -n 4 --timeout 280 $T/conformance_host

# compute-sanitizer memcheck: under MPS if it is accepted there, else
# without MPS (kernels of the two ranks then time-slice: slow, still bounded).
run memcheck_mps_2 $R -n 2 --timeout 280 compute-sanitizer --tool memcheck --error-exitcode 9 $T/conformance_cuda
echo quit | nvidia-cuda-mps-control; sleep 1
if ! grep -q "ERROR SUMMARY: 0 errors" "$OUT/memcheck_mps_2.log"; then
  run memcheck_nomps_2 $R -n 2 --timeout 280 compute-sanitizer --tool memcheck --error-exitcode 9 $T/conformance_cuda
fi
fi
finish
