#!/usr/bin/env bash
# One-call A/B of thread64.patch (thirteenth session, not run yet): a lone
# thread's put of up to 64 bytes read into registers first. On the GPU
# machine, from a clean tree with thread64.patch copied into its root:
# `bash lat-ab.sh`. Builds the tree (o) and the patched copy (t) with
# device checks off, runs the conformance suite of t at 2 and 8 ranks
# (checks on and off), then alternates gin-perf's thread / warp / block
# round trips (8 B .. 256 B) of o and t, twice; logs and CSVs under $OUT.
set -u
OUT=${OUT:-$PWD/ab-out}
mkdir -p "$OUT"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p /tmp/mps-pipe /tmp/mps-log
for v in o t; do
  rm -rf /tmp/ab-$v && mkdir -p /tmp/ab-$v && tar --exclude='./build*' -cf - . | tar -xf - -C /tmp/ab-$v
  [ $v = t ] && { (cd /tmp/ab-t && patch -p1 <thread64.patch >/dev/null) || echo "patch failed"; }
  for c in ON OFF; do
    (cd /tmp/ab-$v && cmake -S . -B build-$c -DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 \
      -DGIN_DEVICE_CHECKS=$c -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
      cmake --build build-$c -j16 --target ginrun gin_perf_cuda conformance_cuda >"$OUT/build_${v}_$c.log" 2>&1)
    echo "build $v checks $c rc=$?"
  done
done
nvidia-cuda-mps-control -d
R=/tmp/ab-o/build-OFF/ginrun
for c in ON OFF; do
  for n in 2 8; do
    timeout 120 $R -n $n --timeout 100 /tmp/ab-t/build-$c/tests/conformance/conformance_cuda >"$OUT/conf_t_${c}_$n.log" 2>&1
    echo "conformance t checks $c $n rc=$?"
  done
done
for rep in 1 2; do
  for g in thread warp block; do
    for v in o t; do
      f=$OUT/pp_${g}_${v}_$rep
      timeout 60 $R -n 2 --timeout 50 /tmp/ab-$v/build-OFF/gin_perf_cuda pingpong -g $g -b 8 -e 256 -f 2 \
        -n 5000 -w 500 --csv $f.csv >$f.log 2>&1
      echo "$g $v $rep rc=$? $(awk -F, 'NR>1 && $3=="pingpong"{printf "%s:%s ", $5, $6}' $f.csv)"
    done
  done
done
echo quit | nvidia-cuda-mps-control
