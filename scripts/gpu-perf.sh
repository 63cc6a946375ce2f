#!/usr/bin/env bash
# The per-path tables of docs/PERFORMANCE.md (direct, proxy with the null
# and ipc transports, tcp, EP), measured on one GPU: two ranks share it
# under an MPS daemon this script starts and stops. From the repository
# root of a machine with an NVIDIA GPU and the CUDA toolkit:
#
#   OUT=DIR scripts/gpu-perf.sh            (default DIR: ./gpu-perf-out)
#
# Builds build-perf (the default build: device checks on),
# build-perf-nochecks (-DGIN_DEVICE_CHECKS=OFF) and build-perf-host (the
# host target), then runs gin-perf over each path with the machine's
# floors in the same run, the host target's tcp path against raw TCP on
# the same CPUs, and gin-ep-bench at 2, 4 and 8 ranks (DeepEP's
# low-latency defaults, the host-initiated baseline in the same run).
#
# Output in $OUT: results/ (the CSVs, named as in docs/results, and with
# matplotlib the plots), meta.txt, summary.txt (one line per step, then OK
# or FAILED), logs.tgz. PACK=1 packs results/ into results.tgz (the device
# tool brings back at most 8 files). To publish: replace docs/results'
# CSVs and plots with these and the tables of docs/PERFORMANCE.md with
# their figures, naming the card, date, commit and this command.
# Settings (environment): NO_BUILD=1, JOBS (nproc), LIMIT (seconds a step,
# 280), BUDGET (seconds in all, 1500), GIN_COMMIT (the commit meta.txt
# names where the tree has no git history). Exit status 0 when every step
# passed.
set -u
LIMIT=${LIMIT:-280}
BUDGET=${BUDGET:-1500}
# shellcheck source=gpu-lib.sh
. "$(dirname "$0")/gpu-lib.sh"
gpu_begin gpu-perf-out
RES=$OUT/results
mkdir -p "$RES"
gpu_meta "OUT=$OUT scripts/gpu-perf.sh" | tee "$OUT/meta.txt"
if ! nvidia-smi -L >/dev/null 2>&1; then
  say "no GPU (nvidia-smi -L): nothing to run"
  fails=1
  finish
  exit 1
fi

B=build-perf
BN=build-perf-nochecks
BH=build-perf-host
if [ "${NO_BUILD:-0}" != 1 ]; then
  t0=$SECONDS
  configure_build $B "$LOGS/build.log" ginrun gin_perf_cuda gin_ep_bench_cuda --
  rc1=$?
  configure_build $BN "$LOGS/build-nochecks.log" ginrun gin_perf_cuda -- -DGIN_DEVICE_CHECKS=OFF
  rc2=$?
  { cmake -S . -B $BH -DGIN_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build $BH -j "$JOBS" --target ginrun gin_perf_host; } >"$LOGS/build-host.log" 2>&1
  rc3=$?
  say "build: $B rc=$rc1, $BN rc=$rc2, $BH rc=$rc3 ($((SECONDS - t0)) s)"
  builds_ok $rc1 $rc2 $rc3
fi
mps_start gpu-perf || say "MPS did not start: ranks on the one GPU time-slice (slow, still bounded)"
export GIN_TIMEOUT_MS=60000 NCCL_NVLS_ENABLE=0
unset GIN_BACKEND GIN_TRANSPORT
R=("$B/ginrun" -n 2 --timeout $((LIMIT - 10)))
P=$B/gin_perf_cuda
PN=$BN/gin_perf_cuda
PROXY=(env GIN_BACKEND=proxy)
NULL=(env GIN_BACKEND=proxy GIN_TRANSPORT=null)
TCP=(env GIN_BACKEND=proxy GIN_TRANSPORT=tcp)

# pf NAME COMMAND...: a gin-perf step whose CSV is results/NAME.csv.
pf() {
  local name=$1
  shift
  step "$name" "$@" --csv "$RES/$name.csv"
}

# Direct: thread-issued sweeps stop at 64 KiB (one thread copying
# megabytes is not a use case), warp and block go to 1 MiB.
pf direct "${R[@]}" $P all --floors -g thread -b 8 -e 65536 -f 8 -n 2000 -w 200
pf direct_nochecks "${R[@]}" $PN pingpong -b 8 -e 4096 -f 8 -n 5000 -w 500
for g in warp block; do
  pf direct_$g "${R[@]}" $P pingpong -g $g -b 8 -e 1048576 -f 8 -n 2000 -w 200
done
pf direct_bw "${R[@]}" $P bw -b 4096 -e 16777216 -f 4
pf direct_bibw "${R[@]}" $P bibw -b 4096 -e 16777216 -f 4
pf direct_ladder "${R[@]}" $PN ladder -n 5000 -w 500
# Device checks: the 8-byte round trips of both builds, each kernel right
# after a floor kernel (docs/PERFORMANCE.md, "Device checks").
for t in pingpong sigpp; do
  pf direct_checks_$t "${R[@]}" $P $t -b 8 -e 8 -n 2000 -w 200 --launches 3
  pf direct_checks_${t}_off "${R[@]}" $PN $t -b 8 -e 8 -n 2000 -w 200 --launches 3
done

# Proxy: the ring alone (null transport), then the ipc transport (copy
# engine); small puts cost a copy each, so 8 blocks.
pf proxy_null "${NULL[@]}" "${R[@]}" $P ring -n 5000 -w 500 --blocks 8 --floors -e 8
pf proxy_null_4threads "${NULL[@]}" GIN_PROXY_THREADS=4 "${R[@]}" $P ring -n 5000 -w 500 --blocks 8
pf proxy_ipc "${PROXY[@]}" "${R[@]}" $P all -b 8 -e 65536 -f 8 -n 1000 -w 100 --blocks 8 --reps 3
pf proxy_ipc_bw "${PROXY[@]}" "${R[@]}" $P bw -b 65536 -e 16777216 -f 4

# tcp: GPU memory staged by the proxy, then the host target's tcp path
# against raw TCP on the same CPUs.
pf tcp_cuda "${TCP[@]}" "${R[@]}" $P pingpong -b 8 -e 65536 -f 8 -n 300 -w 30
pf tcp_cuda_bw "${TCP[@]}" "${R[@]}" $P bw -b 65536 -e 4194304 -f 4 --blocks 8 --reps 3
RH=("$BH/ginrun" -n 2 --timeout $((LIMIT - 10)))
pf tcp_host "${TCP[@]}" "${RH[@]}" $BH/gin_perf_host pingpong --floors -b 8 -e 65536 -f 8 -n 2000 -w 200
pf tcp_host_bw "${TCP[@]}" "${RH[@]}" $BH/gin_perf_host bw --floors -b 4096 -e 4194304 -f 4

# EP at DeepEP's low-latency defaults (128 tokens a rank, hidden 7168,
# top-8 of 288 experts, FP8 dispatch), checked against the CPU reference.
EB=$B/gin_ep_bench_cuda
for n in 2 4 8; do
  step ep_$n "$B/ginrun" -n $n --timeout $((LIMIT - 10)) $EB -n 50 -w 5 --csv "$RES/ep_$n.csv"
done
step ep_8_bf16 "$B/ginrun" -n 8 --timeout $((LIMIT - 10)) $EB --bf16 -n 50 -w 5 --csv "$RES/ep_8_bf16.csv"
mps_stop

# Plots: latency and bandwidth against size for each path.
plot() { # name, CSVs...
  local name=$1 d=$LOGS/plot-$1
  shift
  mkdir -p "$d"
  if python3 scripts/perf-plot.py -o "$d" --title "gin $name, $(sed -n 's/^gpu: //p' "$OUT/meta.txt")" \
    "$@" >>"$LOGS/plots.log" 2>&1; then
    for f in latency bandwidth; do
      [ -f "$d/$f.png" ] && mv "$d/$f.png" "$RES/$name-$f.png"
    done
  else
    say "plots of $name not drawn (plots.log)"
  fi
}
plot direct "$RES/direct.csv" "$RES/direct_warp.csv" "$RES/direct_block.csv" "$RES/direct_bw.csv"
plot proxy "$RES/proxy_ipc.csv" "$RES/proxy_ipc_bw.csv"
plot tcp-host "$RES/tcp_host.csv" "$RES/tcp_host_bw.csv"
cp "$OUT/meta.txt" "$RES/meta.txt"
if [ "${PACK:-0}" = 1 ]; then
  tar -C "$OUT" -czf "$OUT/results.tgz" results && rm -rf "$RES"
fi
finish
