#!/usr/bin/env bash
# A change to the host tcp round trip, before and after, in alternating
# runs of tcp-paired.sh (each a run of gin-perf --launches L through
# proxy+tcp, every launch paired with the raw TCP ping-pong): "old" is
# this tree with PATCH reversed (in a copy under /tmp), "new" this tree.
# Usage (repository root): PATCH=file OUT=dir [ROUNDS=4] [L=21] bash scripts/probes/tcp-ab.sh
set -u
: "${PATCH:?PATCH=the change, as git diff prints it}"
OUT=${OUT:-$PWD/tcp-ab}
ROUNDS=${ROUNDS:-4}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
OLD=/tmp/gin-tcp-ab-old
scripts/copy-tree.sh $OLD -R "$PATCH" || { echo "cannot reverse $PATCH here"; exit 1; }
for k in $(seq "$ROUNDS"); do
  (cd $OLD && OUT=$OUT/old$k RUNS=1 bash scripts/probes/tcp-paired.sh | sed "s/^== /== old$k /")
  OUT=$OUT/new$k RUNS=1 bash scripts/probes/tcp-paired.sh | sed "s/^== /== new$k /"
done | tee "$OUT/summary.txt"
