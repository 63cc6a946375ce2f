#!/usr/bin/env bash
# `make run`: the demo, the 8-byte round trip against its floor, and an EP
# dispatch/combine against the host-initiated baseline, on the GPU when one
# is visible and the cuda target was built, on the host target otherwise;
# then a short summary and a last line OK or FAILED (exit status 0 or 1).
#
#   scripts/run.sh [BUILD_DIR] [NRANKS]          (defaults: build, 4)
#
# RUN_TARGET=host or cuda picks the target instead of the GPU's presence.
set -u
B=${1:-build}
N=${2:-4}
T=${RUN_TARGET:-}
if [ -z "$T" ]; then
  T=host
  [ -x "$B/gin_demo_cuda" ] && nvidia-smi -L >/dev/null 2>&1 && T=cuda
fi
for p in ginrun gin_demo_$T gin_perf_$T gin_ep_bench_$T; do
  [ -x "$B/$p" ] || { echo "run: $B/$p is not built (make build)"; echo FAILED; exit 1; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
R="$B/ginrun"
if [ "$T" = cuda ]; then
  EP_ARGS=() # DeepEP's low-latency defaults
  EP_WHAT="128 tokens a rank, hidden 7168, top-8 of 288 experts, FP8 dispatch"
else
  EP_ARGS=(-t 32 -H 512 -k 4 -e 16 -n 5 -w 1)
  EP_WHAT="32 tokens a rank, hidden 512, top-4 of 16 experts, FP8 dispatch"
fi

echo "== gin demo, $T target, $N ranks =="
"$R" -n "$N" --timeout 120 "$B/gin_demo_$T" 2>&1 | tee "$TMP/demo.out"
demo_rc=${PIPESTATUS[0]}
echo "== 8-byte put+signal round trip, $T target, 2 ranks =="
# Three kernels, each right after a raw floor kernel, and the medians of
# theirs: a single launch's floor moves 1.5-2.2 us on a GPU with no code
# changed (docs/PERFORMANCE.md, "Design figures").
"$R" -n 2 --timeout 120 "$B/gin_perf_$T" pingpong -b 8 -e 8 -n 2000 -w 200 --launches 3 \
  --csv "$TMP/pp.csv" 2>&1 | tee "$TMP/pp.out"
pp_rc=${PIPESTATUS[0]}
echo "== EP dispatch/combine, $T target, $N ranks: $EP_WHAT =="
"$R" -n "$N" --timeout 300 "$B/gin_ep_bench_$T" "${EP_ARGS[@]}" --csv "$TMP/ep.csv" 2>&1 |
  tee "$TMP/ep.out"
ep_rc=${PIPESTATUS[0]}

# A column of a CSV row whose leading fields match, or "?".
field() { # file, column name, pattern the row matches
  awk -F, -v col="$2" -v pat="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
    c && $0 ~ pat { print $c; found = 1; exit }
    END { if (!found) print "?" }' "$1" 2>/dev/null || echo "?"
}
fmt() { awk -v x="$1" -v f="$2" 'BEGIN { if (x + 0 > 0) printf f, x; else print "?" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "?" }'; }
# "gin R x faster" or "gin R x slower" (R >= 1) from the baseline's time
# and gin's.
versus() { awk -v base="$1" -v gin="$2" 'BEGIN {
  if (base + 0 <= 0 || gin + 0 <= 0) print "gin ? x the baseline"
  else if (base + 0 >= gin + 0) printf "gin %.2f x faster", base / gin
  else printf "gin %.2f x slower", gin / base }'; }
verdict() { [ "$1" -eq 0 ] && echo "ok" || echo "FAILED (exit status $1)"; }

pp=$(field "$TMP/pp.csv" median_us ",pingpong,thread,8,")
floor=$(field "$TMP/pp.csv" floor_value ",pingpong,thread,8,")
gd=$(field "$TMP/ep.csv" median_us ",gin,dispatch,")
gc=$(field "$TMP/ep.csv" median_us ",gin,combine,")
bd=$(field "$TMP/ep.csv" median_us ",host-baseline,dispatch,")
bc=$(field "$TMP/ep.csv" median_us ",host-baseline,combine,")
intact=$(grep -c ": $N of $N messages arrived intact" "$TMP/demo.out")
checked=$(grep -c "match the CPU reference" "$TMP/ep.out")

echo
echo "== summary ($T target) =="
echo "demo: $N ranks each put a message into every rank's window from a kernel;"
echo "  $intact of $N ranks checked every message: $(verdict "$demo_rc")"
echo "round trip: 8-byte put+signal between 2 ranks, $(fmt "$pp" %.2f) us; $(fmt "$floor" %.2f) us for the"
echo "  raw flag ping-pong with no library (the floor): $(ratio "$pp" "$floor") x the floor; $(verdict "$pp_rc")"
echo "EP: dispatch and combine checked against the CPU reference ($checked of 2"
echo "  implementations matched): $(verdict "$ep_rc")"
echo "  dispatch $(fmt "$gd" %.1f) us, the host-initiated baseline $(fmt "$bd" %.1f) us: $(versus "$bd" "$gd")"
echo "  combine  $(fmt "$gc" %.1f) us, the host-initiated baseline $(fmt "$bc" %.1f) us: $(versus "$bc" "$gc")"
# Whether the ranks shared their GPU through MPS: ginrun says when it
# started a daemon or could not; otherwise one was already running, or
# the ranks had a GPU each, or GIN_MPS=0 turned it off.
if [ "$T" = host ]; then
  echo "MPS: not used (the host target runs no GPU contexts)"
elif grep -q "started an MPS control daemon" "$TMP/demo.out"; then
  echo "MPS: ginrun started a daemon for each job and stopped it after"
elif grep -q "cannot start one:" "$TMP/demo.out"; then
  echo "MPS: NOT running; $(sed -n 's/.*cannot start one: \([^.]*\)\..*/\1/p' "$TMP/demo.out" | head -1);"
  echo "  the ranks time-sliced the GPU, so the times above are milliseconds"
elif [ "${GIN_MPS:-1}" = 0 ]; then
  echo "MPS: off (GIN_MPS=0)"
elif [ -e "${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}/control" ]; then
  echo "MPS: the daemon already running at ${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps} served the ranks"
else
  echo "MPS: not needed (a GPU for each rank)"
fi
if [ "$T" = host ]; then
  echo "note: on the host target CPU threads stand in for GPU blocks; these"
  echo "  timings are a smoke test (docs/PERFORMANCE.md has the GPU's)."
fi
if [ "$demo_rc" -eq 0 ] && [ "$pp_rc" -eq 0 ] && [ "$ep_rc" -eq 0 ] &&
  [ "$intact" -eq "$N" ] && [ "$checked" -eq 2 ]; then
  echo OK
  exit 0
fi
echo FAILED
exit 1
