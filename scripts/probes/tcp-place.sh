#!/usr/bin/env bash
# Does where the four threads of the host target's tcp round trip run
# decide its time? (issue 4: gin's proxy+tcp ping-pong <= 1.3 x raw TCP;
# the same code measured 8.5-13 us run to run on one 16-core machine.)
# For each placement "name K0 P0 K1 P1" (rank r's kernel thread, its main
# thread on the host target, on CPU Kr; its proxy thread on CPU Pr, by
# GIN_PROXY_CPUS) gin-perf's 8 B ping-pong over GIN_BACKEND=proxy
# GIN_TRANSPORT=tcp, then the raw polling TCP ping-pong between the two
# proxies' CPUs (tcp_parts' poll, no library), REPS times in turn; and
# unpinned runs with the CPU each thread was on sampled mid-run.
# Usage (repository root): OUT=dir [REPS=n] [PLACES="..."] bash scripts/probes/tcp-place.sh
set -u
OUT=${OUT:-$PWD/tcp-place}
REPS=${REPS:-3}
PLACES=${PLACES:-"near:2:3:4:5 far:2:3:12:13 split:2:12:3:13 spread:2:9:15:6"}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
B=build-tcpprof
cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGIN_CUDA=OFF >"$OUT/build.log" 2>&1 &&
  cmake --build $B -j "$(nproc)" --target ginrun gin_perf_host >>"$OUT/build.log" 2>&1 &&
  cc -O2 -Wall -pthread -o $B/tcp_parts scripts/probes/tcp_parts.c 2>>"$OUT/build.log" ||
  { echo "BUILD FAILED"; tail -20 "$OUT/build.log"; exit 1; }
export GIN_BACKEND=proxy GIN_TRANSPORT=tcp GIN_PROXY_BUSY_POLL=0
# Rank r: its proxy on P_r, the rest of it (the kernel thread) on K_r.
RANKED='export GIN_PROXY_CPUS=$(eval echo \$P_$GIN_RANK); exec taskset -c $(eval echo \$K_$GIN_RANK) "$@"'
gin_us() { grep -E '^\[0\] pingpong ' "$1" | awk '{print $5}'; }
for k in $(seq "$REPS"); do
  for p in $PLACES; do
    IFS=: read -r name k0 p0 k1 p1 <<<"$p"
    log="$OUT/${name}_$k.log"
    K_0=$k0 P_0=$p0 K_1=$k1 P_1=$p1 timeout 60 $B/ginrun -n 2 --timeout 55 \
      sh -c "$RANKED" sh $B/gin_perf_host pingpong -b 8 -e 8 -n 10000 -w 1000 >"$log" 2>&1
    rc=$?
    raw=$(taskset -c "$p0,$p1" timeout 60 $B/tcp_parts 10000 1 poll 2>&1 | awk '/poll/ {print $4}')
    echo "== $name rep $k: rc=$rc gin $(gin_us "$log") raw(P0,P1) $raw" | tee -a "$OUT/summary.txt"
  done
  # Unpinned: each busy thread's CPU 1.5 s into a longer run, then the
  # raw polling ping-pong, unpinned too.
  log="$OUT/free_$k.log"
  timeout 60 $B/ginrun -n 2 --timeout 55 $B/gin_perf_host pingpong -b 8 -e 8 \
    -n 300000 -w 1000 >"$log" 2>&1 &
  sleep 1.5
  cpus=$(for pid in $(pgrep -f 'gin_perf_host pingpong'); do
    ps -L -o tid=,psr=,pcpu= -p "$pid" | awk -v p="$pid" '$3 > 20 {printf "%s:%s(%s%%) ", p, $2, $3}'
  done)
  wait
  raw=$(timeout 60 $B/tcp_parts 10000 1 poll 2>&1 | awk '/poll/ {print $4}')
  echo "== free rep $k: gin $(gin_us "$log") raw $raw busy threads (pid:cpu) $cpus" |
    tee -a "$OUT/summary.txt"
done
