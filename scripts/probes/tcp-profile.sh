#!/usr/bin/env bash
# Where the host target's tcp round trip goes (issue 4: <= 1.3 x raw TCP
# ping-pong), for a machine with cores to spare (the GPU machine's CPUs:
# the 2-core CI box measures contention). Builds the host target, then in
# turn: gin-perf's 8 and 64 B ping-pong over proxy+tcp with the raw TCP
# floor beside it (--floors), default idling and GIN_PROXY_BUSY_POLL=1,
# three runs each; the same under `strace -c -f` (system calls a round
# trip, both ranks) and, where perf works, `perf stat` (context switches,
# migrations). Each run is cut at 60 s: on 2 cores busy polling starves
# the ranks (rc 124 there). Usage (repository root):
# OUT=dir [VARIANTS=...] [REPS=n] [CTEST=1] bash scripts/probes/tcp-profile.sh
# VARIANTS: space-separated name=VAR=value[,VAR=value...], run in turn
# REPS times (default: idle and busy proxies, three times); an item
# TASKSET=cpulist runs that variant's ranks (and the floors beside them)
# under `taskset -c cpulist` ('+' for the list's commas: 0+2+4). CTEST=1 also
# times the whole host-target suite (ctest -j 8) once per variant of
# CTEST_VARIANTS (default: VARIANTS), under the tcp settings exported
# below (every test forced through proxy+tcp but those that set their own).
set -u
OUT=${OUT:-$PWD/tcp-profile}
VARIANTS=${VARIANTS:-"idle=GIN_PROXY_BUSY_POLL=0 busy=GIN_PROXY_BUSY_POLL=1"}
REPS=${REPS:-3}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
B=build-tcpprof
TARGETS=(--target ginrun gin_perf_host)
[ "${CTEST:-0}" = 1 ] && TARGETS=()
cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGIN_CUDA=OFF >"$OUT/build.log" 2>&1 &&
  cmake --build $B -j "$(nproc)" "${TARGETS[@]}" >>"$OUT/build.log" 2>&1 ||
  { echo "BUILD FAILED"; tail -20 "$OUT/build.log"; exit 1; }
nproc >"$OUT/nproc.txt"
# Where cores share caches (the pinned variants' sets are read against it).
{ lscpu 2>/dev/null
  for d in /sys/devices/system/cpu/cpu[0-9]*; do
    echo "$(basename "$d"): smt $(cat "$d/topology/thread_siblings_list" 2>/dev/null)" \
      "l3 $(cat "$d/cache/index3/shared_cpu_list" 2>/dev/null)"
  done; } >"$OUT/topology.txt" 2>&1
export GIN_BACKEND=proxy GIN_TRANSPORT=tcp
PP=(pingpong -b 8 -e 64 -f 8 -n 10000 -w 1000 --floors)
run() { # name, env..., (gin-perf args follow PP)
  local name=$1 pre=() envs=() e; shift
  for e in "$@"; do
    case $e in TASKSET=*) e=${e#TASKSET=} && pre=(taskset -c "${e//+/,}") ;; *) envs+=("$e") ;; esac
  done
  env "${envs[@]}" "${pre[@]}" timeout 60 $B/ginrun -n 2 --timeout 55 $B/gin_perf_host "${PP[@]}" \
    --csv "$OUT/$name.csv" >"$OUT/$name.log" 2>&1
  echo "== $name: rc=$? $(grep -hE 'floor_tcp_pp|floor_tcp_relay|pingpong' "$OUT/$name.log" | awk '{print $2, $4, $5}' | tr '\n' ' ')" |
    tee -a "$OUT/summary.txt"
}
for k in $(seq "$REPS"); do
  for v in $VARIANTS; do
    IFS=, read -r -a envs <<<"${v#*=}"
    run "${v%%=*}_$k" "${envs[@]}"
  done
done
if [ "${CTEST:-0}" = 1 ]; then
  for v in ${CTEST_VARIANTS:-$VARIANTS}; do
    IFS=, read -r -a envs <<<"${v#*=}"
    t0=$(date +%s.%N)
    (cd $B && env "${envs[@]}" ctest -j 8 --timeout 300 --output-on-failure >"$OUT/ctest_${v%%=*}.log" 2>&1)
    rc=$?
    echo "== ctest ${v%%=*}: rc=$rc $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }") s, $(grep -E 'tests passed' "$OUT/ctest_${v%%=*}.log")" |
      tee -a "$OUT/summary.txt"
  done
fi
# The round trip's parts without the library (tcp_parts.c: blocking,
# polling, and the proxy's relay shape over TCP loopback; a recv on an
# empty socket, a sched_yield, a cache-line round trip).
if cc -O2 -Wall -pthread -o $B/tcp_parts scripts/probes/tcp_parts.c 2>>"$OUT/build.log"; then
  timeout 120 $B/tcp_parts 20000 "$REPS" >"$OUT/parts.txt" 2>&1
  sed 's/^/== parts: /' "$OUT/parts.txt" | tee -a "$OUT/summary.txt"
fi
# System calls of both ranks and their threads (ginrun's children).
for v in 0 1; do
  command -v strace >/dev/null || break
  strace -f -c -o "$OUT/strace_busy$v.txt" env GIN_PROXY_BUSY_POLL=$v \
    timeout 60 $B/ginrun -n 2 --timeout 55 $B/gin_perf_host pingpong -b 8 -e 8 \
    -n 10000 -w 1000 >"$OUT/strace_busy$v.log" 2>&1
  echo "== strace busy=$v: $(head -12 "$OUT/strace_busy$v.txt" | tail -8 | awk '{print $NF":"$4}' | tr '\n' ' ')" |
    tee -a "$OUT/summary.txt"
done
if perf stat -e task-clock true >/dev/null 2>&1; then
  for v in 0 1; do
    perf stat -e task-clock,context-switches,cpu-migrations -o "$OUT/perf_busy$v.txt" \
      env GIN_PROXY_BUSY_POLL=$v timeout 60 $B/ginrun -n 2 --timeout 55 $B/gin_perf_host \
      pingpong -b 8 -e 8 -n 10000 -w 1000 >"$OUT/perf_busy$v.log" 2>&1
    echo "== perf stat busy=$v: $(grep -E 'context-switches|cpu-migrations|task-clock' "$OUT/perf_busy$v.txt" | awk '{print $2":"$1}' | tr '\n' ' ')" |
      tee -a "$OUT/summary.txt"
  done
fi
