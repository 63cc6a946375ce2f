#!/usr/bin/env bash
# One-call A/B of the dispatch send's prepared patches (thirteenth
# session, not run yet). On the GPU machine, from a clean tree of afac066
# (or a later one they still apply to) with the patches copied into its
# root: `bash pack-ab.sh`; logs and CSVs under $OUT.
#   o  = the tree as it is
#   p  = pack16.patch: fp8 cast 8 channels a lane, loops unrolled, send
#        bounded to 64 registers
#   u  = unroll.patch: the unrolling and the bound alone
#   c  = count-spread.patch: each expert's count sent by the warp that sent
#        its last token (no last block), bounded to 64 registers
#   pc = pack16+count.patch: p and c together
# test_ep runs at 2 / 4 / 8 ranks for every patched variant (the fp8
# bytes and the counts against the CPU reference), then gin-ep-bench
# alternates the variants at 2 and 8 ranks, twice.
set -u
OUT=${OUT:-$PWD/ab-out}
mkdir -p "$OUT"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p /tmp/mps-pipe /tmp/mps-log
cfg="-DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo"
V="o u:unroll.patch p:pack16.patch c:count-spread.patch pc:pack16+count.patch"
for vp in $V; do
  v=${vp%%:*} p=${vp#*:}
  [ "$p" = "$vp" ] && p=""
  rm -rf /tmp/ab-$v && mkdir -p /tmp/ab-$v && tar --exclude='./build*' -cf - . | tar -xf - -C /tmp/ab-$v
  if [ -n "$p" ]; then (cd /tmp/ab-$v && patch -p1 <"$p" >/dev/null) || echo "patch $p failed"; fi
  (cd /tmp/ab-$v && cmake -S . -B build $cfg >/dev/null &&
    cmake --build build -j16 --target ginrun gin_ep_bench_cuda test_ep_cuda >"$OUT/build_$v.log" 2>&1)
  echo "build $v rc=$?"
done
nvidia-cuda-mps-control -d
R=/tmp/ab-o/build/ginrun
for v in u p c pc; do
  for n in 2 4 8; do
    timeout 60 $R -n $n --timeout 50 /tmp/ab-$v/build/tests/ep/test_ep_cuda >"$OUT/test_${v}_$n.log" 2>&1
    echo "test_ep $v $n rc=$?"
  done
done
for run in 2:1 8:1 2:2 8:2; do
  n=${run%:*} i=${run#*:}
  for v in o u p c pc; do
    f=$OUT/ep_${v}_${n}_$i
    timeout 60 $R -n $n --timeout 50 /tmp/ab-$v/build/gin_ep_bench_cuda -n 50 -w 5 --csv $f.csv >$f.log 2>&1
    echo "$v $n:$i rc=$? $(grep -h 'medians per phase' $f.log | sed 's/.*phase: //') | $(grep -h 'pipelined (no host' $f.log | sed 's/.*time): //')"
  done
done
echo quit | nvidia-cuda-mps-control
