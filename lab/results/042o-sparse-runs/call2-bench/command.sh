#!/usr/bin/env bash
# Device call (lab 042o): runs that stop at wide digit steps. Correctness (gpu-check,
# verified benches), the kernels by ncu, then bench A/B by ZKPIPE_CUDA_RUN_GAP=0 vs default.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
{ date; nproc; free -g; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv; } > $o/host.txt 2>&1
key() {  # NAME CURVE VALUES
  local d=/tmp/$1; mkdir -p $d
  [ -f $d/c.zkey ] && return
  /tmp/bin/zkpipe synth --curve $2 --domain 2^14 --public 4 --seed 1 ${3:+--values $3} $d/c.r1cs $d/c.wtns >> $o/key.txt 2>&1
  /tmp/bin/zkpipe setup --dev --seed 1 $d/c.r1cs $d/c.zkey >> $o/key.txt 2>&1
}
key bn-sha bn254 sha256; key bn-rand bn254 ""; key bls-sha bls12-381 sha256
step() { echo "== $* $(date +%T)" >> $o/steps.txt; }
if [ "${CHECK:-1}" = 1 ]; then
  step gpu-check batch default
  timeout 200 /tmp/bin/zkpipe-gpu-check 14 3 14 batch > $o/check-batch.txt 2>&1; echo "rc=$?" >> $o/check-batch.txt
  step gpu-check batch gap1
  ZKPIPE_CUDA_RUN_GAP=1 timeout 200 /tmp/bin/zkpipe-gpu-check 14 3 14 batch > $o/check-batch-gap1.txt 2>&1; echo "rc=$?" >> $o/check-batch-gap1.txt
  step gpu-check seam
  timeout 300 /tmp/bin/zkpipe-gpu-check 16 3 16 seam > $o/check-seam.txt 2>&1; echo "rc=$?" >> $o/check-seam.txt
  step gpu-check constant
  timeout 200 /tmp/bin/zkpipe-gpu-check 14 3 14 constant > $o/check-constant.txt 2>&1; echo "rc=$?" >> $o/check-constant.txt
  for k in bn-sha bn-rand bls-sha; do for b in 1 64; do
    step verify $k $b
    timeout 60 /tmp/bin/zkpipe-bench bench --trusted-key --backend cuda --batch $b --runs 1 --warmup 0 /tmp/$k/c.zkey /tmp/$k/c.wtns > $o/verify-$k-$b.txt 2>&1; echo "rc=$?" >> $o/verify-$k-$b.txt
  done; done
fi
if [ "${NCU:-1}" = 1 ]; then
  NCUB=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
  for g in 4 0; do
    step ncu gap $g
    ZKPIPE_CUDA_RUN_GAP=$g timeout 200 $NCUB --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
      /tmp/bin/zkpipe-bench bench --trusted-key --no-verify --backend cuda --batch 64 --runs 1 --warmup 1 /tmp/bn-sha/c.zkey /tmp/bn-sha/c.wtns > $o/ncu-gap$g.csv 2> $o/ncu-gap$g.err
  done
fi
for r in $(seq ${ROUNDS:-3}); do
  for k in bn-sha bn-rand bls-sha; do for b in ${BATCHES:-1 64}; do for g in 0 4; do
    step bench r$r $k b$b gap$g
    echo "== r$r $k batch $b gap $g" >> $o/bench-$k-b$b-gap$g.txt
    ZKPIPE_CUDA_RUN_GAP=$g timeout 120 /tmp/bin/zkpipe-bench bench --trusted-key --no-verify --backend cuda --batch $b --runs ${RUNS:-10} --warmup 2 \
      /tmp/$k/c.zkey /tmp/$k/c.wtns >> $o/bench-$k-b$b-gap$g.txt 2>&1
  done; done; done
done
step done
cd $OUT && tar czf r.tgz r && rm -rf r
