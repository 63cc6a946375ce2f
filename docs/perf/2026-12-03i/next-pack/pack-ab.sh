#!/usr/bin/env bash
# One-off A/B (thirteenth session): n = this tree (8 channels a lane),
# o = HEAD (pack16.patch reversed), u = HEAD + unroll.patch.
set -u
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p /tmp/mps-pipe /tmp/mps-log
cfg="-DGIN_CUDA=ON -DGIN_CUDA_ARCH=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo"
for v in o u; do
  rm -rf /tmp/$v && mkdir -p /tmp/$v && tar --exclude='./build*' -cf - . | tar -xf - -C /tmp/$v
  (cd /tmp/$v && patch -R -p1 < pack16.patch >/dev/null) || echo "patch R failed $v"
done
(cd /tmp/u && patch -p1 < unroll.patch >/dev/null) || echo "patch u failed"
cmake -S . -B build-n $cfg >/dev/null && cmake --build build-n -j16 --target ginrun gin_ep_bench_cuda test_ep_cuda >$OUT/bn.log 2>&1; echo "build n rc=$?"
for v in o u; do (cd /tmp/$v && cmake -S . -B build-$v $cfg >/dev/null && cmake --build build-$v -j16 --target gin_ep_bench_cuda >$OUT/b$v.log 2>&1); echo "build $v rc=$?"; done
nvidia-cuda-mps-control -d
R=build-n/ginrun
for n in 2 4 8; do timeout 40 $R -n $n --timeout 30 build-n/tests/ep/test_ep_cuda >$OUT/test_$n.log 2>&1; echo "test_ep $n rc=$?"; done
for run in 2:1 8:1 2:2; do
  n=${run%:*} i=${run#*:}
  for v in n o u; do
    B=build-n/gin_ep_bench_cuda; [ $v != n ] && B=/tmp/$v/build-$v/gin_ep_bench_cuda
    timeout 40 $R -n $n --timeout 30 $B -n 50 -w 5 --csv $OUT/ep_${v}_${n}_$i.csv >$OUT/ep_${v}_${n}_$i.log 2>&1
    echo "$v $n:$i rc=$? $(grep -h 'medians per phase' $OUT/ep_${v}_${n}_$i.log | sed 's/.*phase: //') | $(grep -h 'pipelined (no host' $OUT/ep_${v}_${n}_$i.log | sed 's/.*time): //')"
  done
done
echo quit | nvidia-cuda-mps-control
