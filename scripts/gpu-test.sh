#!/usr/bin/env bash
# The GPU test run: every correctness test of the cuda target on one GPU
# (ranks share it under an MPS daemon this script starts and stops). From
# the repository root of a machine with an NVIDIA GPU and the CUDA toolkit:
#
#   OUT=DIR scripts/gpu-test.sh            (default DIR: ./gpu-test-out)
#
# Builds build-gpu (the default build: device checks on) and
# build-gpu-nochecks (-DGIN_DEVICE_CHECKS=OFF), then runs, each bounded:
# the conformance suite at 2, 4 and 8 ranks (direct; with checks compiled
# out; proxy + ipc with an 8-slot ring; proxy + tcp), the bad-input suite,
# the window-memory cases (GIN_CUDA_VMM), compute-sanitizer memcheck, the
# EP suite on every path (and its bad-input, lying-peer and soak tests),
# the demo and the EP example, the soak, and the cuda fault tests (ranks
# killed, links cut, aborts) one at a time. First, before its own daemon:
# the MPS daemon ginrun starts for a job, and gin_comm_init's warning for
# ranks sharing the GPU without one. RACECHECK=1 adds
# compute-sanitizer racecheck on the conformance and EP suites.
#
# Output in $OUT: summary.txt (one line per step, then OK or FAILED),
# meta.txt, logs.tgz. Exit status 0 when every step passed.
# Settings (environment): NO_BUILD=1, JOBS (nproc), LIMIT (seconds a step,
# 120), BUDGET (seconds in all, 1500), STEPS (a regular expression: only
# the steps it names run, e.g. those a run skipped), GIN_COMMIT (the
# commit meta.txt names where the tree has no git history).
set -u
LIMIT=${LIMIT:-120}
BUDGET=${BUDGET:-1500}
# shellcheck source=gpu-lib.sh
. "$(dirname "$0")/gpu-lib.sh"
gpu_begin gpu-test-out
gpu_meta "OUT=$OUT scripts/gpu-test.sh" >"$OUT/meta.txt"
if ! nvidia-smi -L >/dev/null 2>&1; then
  say "no GPU (nvidia-smi -L): nothing to run"
  fails=1
  finish
  exit 1
fi

B=build-gpu
BN=build-gpu-nochecks
if [ "${NO_BUILD:-0}" != 1 ]; then
  t0=$SECONDS
  configure_build $B "$LOGS/build.log" all -- -DCMAKE_CUDA_FLAGS=-lineinfo
  rc1=$?
  configure_build $BN "$LOGS/build-nochecks.log" ginrun conformance_cuda test_ep_cuda \
    -- -DGIN_DEVICE_CHECKS=OFF
  rc2=$?
  say "build: $B rc=$rc1, $BN rc=$rc2 ($((SECONDS - t0)) s)"
  builds_ok $rc1 $rc2
fi
R=($B/ginrun)

# ------------------------------------------------------ MPS handling
# Before this script's own daemon, with none at the default directory:
# ginrun starts one for a job whose ranks share the GPU and stops it after
# (no daemon or directory left); ranks of another launcher (torchrun's
# variables here) without MPS get one warning, from rank 0.
mps_procs() { pgrep -c -f '^nvidia-cuda-mps-(control|server)' || true; }
mps_dirs() { ls -d "${TMPDIR:-/tmp}"/ginrun-mps-* 2>/dev/null | wc -l; }
if [ -e /tmp/nvidia-mps/control ]; then
  say "mps_ginrun_4, mps_warn_2: skipped (an MPS daemon runs at /tmp/nvidia-mps)"
  skipped=$((skipped + 2))
else
  procs=$(mps_procs) dirs=$(mps_dirs)
  bounded mps_ginrun_4 env -u CUDA_MPS_PIPE_DIRECTORY -u CUDA_MPS_LOG_DIRECTORY \
    "${R[@]}" -n 4 --timeout 60 $B/gin_demo_cuda
  rc=$?
  sleep 1 # the server's exit after quit
  if [ $rc = 0 ] && ! grep -q "started an MPS control daemon" "$LOGS/mps_ginrun_4.log"; then
    say "mps_ginrun_4: ginrun started no MPS daemon"
    rc=1
  fi
  if [ "$(mps_procs)" != "$procs" ] || [ "$(mps_dirs)" != "$dirs" ]; then
    say "mps_ginrun_4: MPS processes $procs -> $(mps_procs), job directories $dirs -> $(mps_dirs)"
    rc=1
  fi
  judge mps_ginrun_4 $rc
  bounded mps_warn_2 env -u CUDA_MPS_PIPE_DIRECTORY WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=29517 sh -c 'RANK=0 LOCAL_RANK=0 "$0" & a=$!
      RANK=1 LOCAL_RANK=1 "$0"; b=$?; wait $a; a=$?; exit $((a | b))' $B/gin_demo_cuda
  rc=$?
  n=$(grep -c "2 ranks share 1 GPU without MPS (ranks 0-1)" "$LOGS/mps_warn_2.log" 2>/dev/null)
  if [ $rc = 0 ] && [ "$n" != 1 ]; then
    say "mps_warn_2: $n warnings about ranks sharing the GPU without MPS, wanted 1"
    rc=1
  fi
  judge mps_warn_2 $rc
fi

mps_start gpu-test || say "MPS did not start: ranks on the one GPU time-slice (slow, still bounded)"
export GIN_TIMEOUT_MS=15000 NCCL_NVLS_ENABLE=0
unset GIN_BACKEND GIN_TRANSPORT
C=$B/tests/conformance/conformance_cuda
E=$B/tests/ep
PROXY=(env GIN_BACKEND=proxy)
TCP=(env GIN_BACKEND=proxy GIN_TRANSPORT=tcp)
MEMCHECK=(compute-sanitizer --tool memcheck --error-exitcode 9)

# ------------------------------------------------------ the device API
for n in 2 4 8; do step conformance_$n "${R[@]}" -n $n --timeout 60 $C; done
for n in 2 8; do
  step conformance_nochecks_$n "${R[@]}" -n $n --timeout 60 $BN/tests/conformance/conformance_cuda
done
step conformance_proxy_tinyring_4 "${PROXY[@]}" GIN_PROXY_RING_SIZE=8 "${R[@]}" -n 4 --timeout 60 $C
step conformance_tcp_2 "${TCP[@]}" "${R[@]}" -n 2 --timeout 60 $C
step badinput_2 "${R[@]}" -n 2 --timeout 60 $B/tests/conformance/badinput_cuda
step badinput_proxy_3 "${PROXY[@]}" "${R[@]}" -n 3 --timeout 60 $B/tests/conformance/badinput_cuda
step demo_4 "${R[@]}" -n 4 --timeout 60 $B/gin_demo_cuda
step hello_4 "${R[@]}" -n 4 --timeout 60 $B/gin_hello_cuda
step soak_4 "${R[@]}" -n 4 --timeout 60 $B/tests/soak/soak_cuda --seconds 5

# Window memory (GIN_CUDA_VMM): each case passes on its exit status and on
# how many lines of its log (INFO on) match a pattern.
vmm_case() { # name, status wanted (0 or nz), pattern, lines at least, command...
  local name=$1 want=$2 pat=$3 min=$4 rc n
  shift 4
  GIN_DEBUG=INFO GIN_DEBUG_SUBSYS=INIT bounded "$name" "$@"
  rc=$?
  n=$(grep -c -- "$pat" "$LOGS/$name.log" 2>/dev/null)
  n=${n:-0}
  local ok=0
  case $want in
  0) [ $rc = 0 ] && ok=1 ;;
  *) [ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ] && ok=1 ;; # a timeout is no answer
  esac
  [ "$n" -ge "$min" ] || ok=0
  if [ $rc = 75 ] || [ $rc = 76 ]; then
    judge "$name" $rc
  elif [ $ok = 1 ]; then
    judge "$name" 0
  else
    say "$name: wanted status $want and >= $min lines matching '$pat'; got $rc and $n"
    judge "$name" $((rc == 0 ? 1 : rc))
  fi
}
DENY=$B/tests/unit/deny_pidfd_getfd
# The default picks VMM where it may (root, no Yama): each rank says so.
vmm_case vmm_default_2 0 'windows from cuMemCreate' 2 "${R[@]}" -n 2 --timeout 60 $C
vmm_case vmm_ipc_2 0 'conformance: passed' 1 env GIN_CUDA_VMM=0 "${R[@]}" -n 2 --timeout 60 $C
# Even ranks CUDA IPC, odd ranks VMM: each imports both kinds.
vmm_case vmm_mixed_4 0 'windows from cuMemCreate' 2 "${R[@]}" -n 4 --timeout 60 \
  sh -c '[ $((GIN_RANK % 2)) = 0 ] && export GIN_CUDA_VMM=0; exec "$@"' sh $C
# Rank 1 cannot take descriptors (pidfd_getfd refused by seccomp): both
# ranks fall back to CUDA IPC, naming rank 1 and rank 0, and pass.
vmm_case vmm_denied_2 0 "rank 1 cannot take rank 0's memory descriptors" 2 \
  "${R[@]}" -n 2 --timeout 60 sh -c '[ "$GIN_RANK" = 1 ] && exec "$0" "$@"; exec "$@"' $DENY $C
# The same with GIN_CUDA_VMM=1 on rank 0: both fail init saying why.
vmm_case vmm_denied_forced_2 nz 'and rank 0 has GIN_CUDA_VMM=1' 2 "${R[@]}" -n 2 --timeout 60 \
  sh -c '[ "$GIN_RANK" = 1 ] && exec "$0" "$@"; export GIN_CUDA_VMM=1; exec "$@"' $DENY $C
vmm_case vmm_badvalue_2 nz 'GIN_CUDA_VMM=5: expected -1' 2 env GIN_CUDA_VMM=5 "${R[@]}" -n 2 --timeout 60 $C
LIMIT=300 step memcheck_2 "${R[@]}" -n 2 --timeout 280 "${MEMCHECK[@]}" $C

# ------------------------------------------------------ expert parallelism
for n in 2 4 8; do step ep_$n "${R[@]}" -n $n --timeout 60 $E/test_ep_cuda; done
step ep_nochecks_8 "${R[@]}" -n 8 --timeout 60 $BN/tests/ep/test_ep_cuda
step ep_proxy_4 "${PROXY[@]}" "${R[@]}" -n 4 --timeout 60 $E/test_ep_cuda
step ep_tcp_2 "${TCP[@]}" "${R[@]}" -n 2 --timeout 60 $E/test_ep_cuda
# Odd ranks push their rows, even ranks' are copied from their windows.
step ep_mixedpull_4 "${R[@]}" -n 4 --timeout 60 $E/test_ep_cuda --mixed-pull
# The receive's sources one at a time (two count arrays in turn).
step ep_onesrc_4 "${R[@]}" -n 4 --timeout 60 $E/test_ep_onesrc_cuda
step ep_badinput_3 "${R[@]}" -n 3 --timeout 60 $E/test_ep_badinput_cuda
step ep_hello_4 "${R[@]}" -n 4 --timeout 60 $B/gin_ep_hello_cuda
step ep_soak_4 "${R[@]}" -n 4 --timeout 60 $E/test_ep_cuda --seconds 5
LIMIT=300 step ep_memcheck_2 "${R[@]}" -n 2 --timeout 280 "${MEMCHECK[@]}" $E/test_ep_cuda
# A warp with more than 32 rows of one expert (its rows in two batches):
# 192 local experts and 512 rows at each of experts 0-7, checked against
# the CPU reference.
step ep_manyrows_2 "${R[@]}" -n 2 --timeout 60 $B/gin_ep_bench_cuda -e 384 -t 256 \
  --routing skewed -n 3 -w 1 --no-baseline
# Rank 1 lies (a count, headers, `where` words): every rank fails at once
# naming it, or is aborted by one that did.
for m in 1 2 3 4; do
  step ep_liar${m}_3 env GIN_TIMEOUT_MS=10000 "${R[@]}" -n 3 --timeout 60 $E/test_ep_liar${m}_cuda
done

# ------------------------------------------------------ faults
# One at a time with a pause: right after a client was SIGKILLed the MPS
# server may refuse new clients for a moment (cudaErrorDevicesUnavailable);
# a test refused that way at init runs once more.
fault_one() { # test
  local t=$1 rc
  bounded "$t" ctest --test-dir $B -V -R "^$t\$" --timeout 60
  rc=$?
  if [ $rc -ne 0 ] && grep -q "gin_comm_init.*cudaErrorDevicesUnavailable" "$LOGS/$t.log" 2>/dev/null; then
    say "$t: MPS refused the clients; again"
    sleep 15
    bounded "$t" ctest --test-dir $B -V -R "^$t\$" --timeout 60
    rc=$?
  fi
  # ctest exits 0 for a test that skipped (no GPU seen): say so.
  [ $rc -eq 0 ] && grep -q '\*\*\*Skipped' "$LOGS/$t.log" && rc=77
  judge "$t" $rc
  sleep 5
}
for t in $(ctest --test-dir $B -N | sed -n 's/.*Test *#[0-9]*: \(fault_cuda_[a-z_0-9]*\)$/\1/p'); do
  fault_one "$t"
done

if [ -n "${RACECHECK:-}" ]; then
  # racecheck slows kernels a lot: a longer bound on the waits.
  for t in conformance:$C ep:$E/test_ep_cuda; do
    LIMIT=300 step racecheck_${t%%:*}_2 env GIN_TIMEOUT_MS=120000 "${R[@]}" -n 2 --timeout 280 \
      compute-sanitizer --tool racecheck --error-exitcode 9 "${t#*:}"
  done
fi
mps_stop
finish
