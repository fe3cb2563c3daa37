#!/usr/bin/env bash
# Device call: where a 2^14 batched pass's GPU time goes (kernel durations by ncu).
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
{ date; nproc; free -g; nvidia-smi; command -v ncu; ls /opt/nvidia/nsight-compute 2>&1; } > $o/host.txt 2>&1
W=/tmp/k14; mkdir -p $W
[ -f $W/c.zkey ] || { /tmp/bin/zkpipe synth --domain 2^14 --public 4 --seed 1 --values sha256 $W/c.r1cs $W/c.wtns && \
  /tmp/bin/zkpipe setup --dev --seed 1 $W/c.r1cs $W/c.zkey; } > $o/key.txt 2>&1
B="/tmp/bin/zkpipe-bench bench --trusted-key --no-verify --backend cuda $W/c.zkey $W/c.wtns"
for k in ${BATCHES:-32 64 128}; do
  echo "== batch $k" >> $o/bench.txt
  ZKPIPE_CUDA_PASS_TRACE=1 timeout 120 $B --batch $k --runs ${RUNS:-10} --warmup 2 >> $o/bench.txt 2>&1
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
for k in ${NCU_BATCHES:-64}; do
  timeout 300 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    $B --batch $k --runs 1 --warmup 1 > $o/ncu-$k.csv 2> $o/ncu-$k.err
  echo "rc=$?" >> $o/ncu-$k.err
done
cd $OUT && tar czf r.tgz r && rm -rf r
