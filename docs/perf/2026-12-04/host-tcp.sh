#!/usr/bin/env bash
# One GPU-machine call (seventeenth session), host target only: the tcp
# round trip against raw TCP ping-pong on the machine's 16 cores, eight
# runs alternating the default proxy idling with GIN_PROXY_BUSY_POLL=1,
# then bandwidth against the raw stream twice. From the repository root:
#   OUT=$OUT/tcp bash docs/perf/2026-12-04/host-tcp.sh
set -u
OUT=${OUT:-$PWD/tcp-out}
L=$OUT/logs
mkdir -p "$L"
say() { echo "$*" | tee -a "$L/summary.txt"; }
say "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown) cores $(nproc)"
{ cmake -S . -B build-host -DGIN_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  cmake --build build-host -j 16 --target ginrun gin_perf_host; } >"$L/build.log" 2>&1 ||
  { say "BUILD FAILED"; tail -30 "$L/build.log"; exit 1; }
export GIN_TIMEOUT_MS=30000
R=build-host/ginrun P=build-host/gin_perf_host
# Prints gin's median at 8 and 64 B over raw TCP ping-pong's, same run.
pp() { # tag, env...
  local t=$1
  shift
  timeout 120 env GIN_BACKEND=proxy GIN_TRANSPORT=tcp "$@" \
    $R -n 2 --timeout 110 $P pingpong --floors -b 8 -e 64 -f 8 -n 5000 -w 500 \
    --csv "$L/$t.csv" >"$L/$t.log" 2>&1
  say "$t rc=$? $(awk -F, 'NR>1 && $3=="floor_tcp_pp"{f[$5]=$6} NR>1 && $3=="pingpong"{g[$5]=$6}
    END{for (b in g) if (f[b] > 0) printf "%sB gin %s raw %s ratio %.2f  ", b, g[b], f[b], g[b]/f[b]}' "$L/$t.csv")"
}
for i in 1 2 3 4; do
  pp default_$i
  pp busy_$i GIN_PROXY_BUSY_POLL=1
done
for i in 1 2; do
  t=bw_$i
  timeout 120 env GIN_BACKEND=proxy GIN_TRANSPORT=tcp \
    $R -n 2 --timeout 110 $P bw --floors -b 65536 -e 4194304 -f 4 --csv "$L/$t.csv" >"$L/$t.log" 2>&1
  say "$t rc=$? $(awk -F, 'NR>1 && $3=="floor_tcp_stream"{f[$5]=$8} NR>1 && $3=="bw"{g[$5]=$8}
    END{for (b in g) if (f[b] > 0) printf "%s: %s/%s=%.2f  ", b, g[b], f[b], g[b]/f[b]}' "$L/$t.csv")"
done
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
