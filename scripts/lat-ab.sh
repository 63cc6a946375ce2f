#!/usr/bin/env bash
# Round-trip A/B of two trees in one GPU call: this tree (o) and a copy
# with PATCH applied (t; a reversed diff gives the code before a change).
# From the repository root of the GPU machine, with the patch file in the
# tree: `PATCH=x.patch scripts/lat-ab.sh`; logs and CSVs under $OUT.
#
# Builds gin_perf_cuda (and ginrun) of both with device checks off, and
# with CONF=1 also conformance_cuda of t with checks on and off, run at 2
# and 8 ranks. Then REPS times, for each issuer in GRANS, gin-perf
# pingpong of o then t at SIZES (each run also measures the raw flag
# floor in its own process), and with LADDER=1 the ladder of each once.
# Prints one line per run: issuer, tree, rep, the floor and size:us pairs.
set -u
OUT=${OUT:-$PWD/ab-out}
PATCH=${PATCH:?PATCH=file (in this tree) to apply to the copy}
GRANS=${GRANS:-thread warp block}
SIZES=${SIZES:--b 8 -e 256 -f 2}
REPS=${REPS:-2}
ITERS=${ITERS:--n 5000 -w 500}
mkdir -p "$OUT"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p /tmp/mps-pipe /tmp/mps-log
checks="OFF"
[ "${CONF:-0}" = 1 ] && checks="ON OFF"
for v in o t; do
  p=""
  [ $v = t ] && p=$PATCH
  if ! scripts/copy-tree.sh /tmp/ab-$v "$p"; then
    echo "copy of the tree or patch $p failed: no A/B" # t would be o again
    exit 1
  fi
  for c in $checks; do
    targets="ginrun gin_perf_cuda"
    [ "${CONF:-0}" = 1 ] && [ $v = t ] && targets="$targets conformance_cuda"
    # shellcheck disable=SC2086 # a list of targets
    (cd /tmp/ab-$v && cmake -S . -B build-$c -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 \
      -DGIN_DEVICE_CHECKS=$c -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
      cmake --build build-$c -j16 --target $targets >"$OUT/build_${v}_$c.log" 2>&1)
    echo "build $v checks $c rc=$?"
  done
done
nvidia-cuda-mps-control -d
R=/tmp/ab-o/build-OFF/ginrun
if [ "${CONF:-0}" = 1 ]; then
  for c in ON OFF; do
    for n in 2 8; do
      timeout 120 $R -n $n --timeout 100 /tmp/ab-t/build-$c/tests/conformance/conformance_cuda \
        >"$OUT/conf_t_${c}_$n.log" 2>&1
      echo "conformance t checks $c $n rc=$?"
    done
  done
fi
for rep in $(seq "$REPS"); do
  for g in $GRANS; do
    for v in o t; do
      f=$OUT/pp_${g}_${v}_$rep
      # shellcheck disable=SC2086 # option lists
      timeout 60 $R -n 2 --timeout 50 /tmp/ab-$v/build-OFF/gin_perf_cuda pingpong -g $g $SIZES \
        $ITERS --csv $f.csv >$f.log 2>&1
      echo "$g $v $rep rc=$? $(awk -F, 'NR>1 && $3=="floor_raw_flag_pp"{printf "floor:%s ", $6}
        NR>1 && $3=="pingpong"{printf "%s:%s ", $5, $6}' "$f.csv")"
    done
  done
done
if [ "${LADDER:-0}" = 1 ]; then
  for v in o t; do
    f=$OUT/ladder_$v
    # shellcheck disable=SC2086 # option list
    timeout 120 $R -n 2 --timeout 100 /tmp/ab-$v/build-OFF/gin_perf_cuda ladder $ITERS --csv $f.csv >$f.log 2>&1
    echo "ladder $v rc=$? $(awk -F, 'NR>1 && $3=="ladder"{printf "%s:%s ", $4, $6}' "$f.csv")"
  done
fi
echo quit | nvidia-cuda-mps-control
