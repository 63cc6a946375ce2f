#!/usr/bin/env bash
# One GPU-machine call (eighteenth session), host target only: the tcp
# round trip with one tcp peer polled by recv (this tree, `t`) against the
# code before it (a copy with PATCH, the reversed change, `o`), each
# against raw TCP ping-pong in the same run, five runs each alternating,
# then bandwidth against the raw stream once each. From the repository
# root, the patch in the tree:
#   PATCH=before-sole.patch OUT=$OUT/tcp bash docs/perf/2026-12-04b/tcp/tcp-ab.sh
set -u
OUT=${OUT:-$PWD/tcp-out}
L=$OUT/logs
mkdir -p "$L"
say() { echo "$*" | tee -a "$L/summary.txt"; }
say "tree digest $(scripts/tree-digest.sh 2>/dev/null || echo unknown) cores $(nproc)"
X=/tmp/tcp-x
scripts/copy-tree.sh $X "${PATCH:?PATCH}" || { say "patch failed"; exit 1; }
for d in . $X; do
  (cd "$d" && cmake -S . -B build-host -DGIN_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-host -j 16 --target ginrun gin_perf_host) >>"$L/build.log" 2>&1 ||
    { say "BUILD FAILED in $d"; tail -30 "$L/build.log"; exit 1; }
done
export GIN_TIMEOUT_MS=30000
# Prints gin's median at 8 and 64 B over raw TCP ping-pong's, same run.
pp() { # tag, tree
  local t=$1 d=$2
  timeout 120 env GIN_BACKEND=proxy GIN_TRANSPORT=tcp \
    "$d/build-host/ginrun" -n 2 --timeout 110 "$d/build-host/gin_perf_host" pingpong --floors \
    -b 8 -e 64 -f 8 -n 5000 -w 500 --csv "$L/$t.csv" >"$L/$t.log" 2>&1
  say "$t rc=$? $(awk -F, 'NR>1 && $3=="floor_tcp_pp"{f[$5]=$6} NR>1 && $3=="pingpong"{g[$5]=$6}
    END{for (b in g) if (f[b] > 0) printf "%sB gin %s raw %s ratio %.2f  ", b, g[b], f[b], g[b]/f[b]}' "$L/$t.csv")"
}
for i in 1 2 3 4 5; do
  pp t_$i .
  pp o_$i $X
done
for v in t o; do
  d=.
  [ $v = o ] && d=$X
  timeout 120 env GIN_BACKEND=proxy GIN_TRANSPORT=tcp "$d/build-host/ginrun" -n 2 --timeout 110 \
    "$d/build-host/gin_perf_host" bw --floors -b 65536 -e 4194304 -f 4 --csv "$L/bw_$v.csv" >"$L/bw_$v.log" 2>&1
  say "bw_$v rc=$? $(awk -F, 'NR>1 && $3=="floor_tcp_stream"{f[$5]=$8} NR>1 && $3=="bw"{g[$5]=$8}
    END{for (b in g) if (f[b] > 0) printf "%s: %s/%s=%.2f  ", b, g[b], f[b], g[b]/f[b]}' "$L/bw_$v.csv")"
done
cp "$L/summary.txt" "$OUT/summary.txt"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
