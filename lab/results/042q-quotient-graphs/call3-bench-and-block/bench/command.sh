#!/usr/bin/env bash
# Device call (lab 042q call 1): a proof's reduce and quotient as one call and one CUDA
# graph. Correctness (gpu-check batch/seam/constant, verified benches in each launch mode),
# then bench A/B/C: calls (before) vs fused vs graph (default), 2^14 keys, 3 rounds.
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
key bn-sha bn254 sha256; key bls-sha bls12-381 sha256
step() { echo "== $* $(date +%T)" >> $o/steps.txt; }
if [ "${CHECK:-1}" = 1 ]; then
  for c in batch constant; do
    step gpu-check $c
    timeout 200 /tmp/bin/zkpipe-gpu-check 14 3 14 $c > $o/check-$c.txt 2>&1; echo "rc=$?" >> $o/check-$c.txt
  done
  step gpu-check seam
  timeout 300 /tmp/bin/zkpipe-gpu-check 16 3 16 seam > $o/check-seam.txt 2>&1; echo "rc=$?" >> $o/check-seam.txt
fi
if [ "${VERIFY:-1}" = 1 ]; then
  for m in graph fused calls; do for k in bn-sha bls-sha; do for b in 1 64; do
    step verify $m $k $b
    ZKPIPE_CUDA_QUOTIENT_LAUNCH=$m timeout 60 /tmp/bin/zkpipe-bench bench --trusted-key --backend cuda --batch $b --runs 2 --warmup 0 /tmp/$k/c.zkey /tmp/$k/c.wtns > $o/verify-$m-$k-$b.txt 2>&1; echo "rc=$?" >> $o/verify-$m-$k-$b.txt
  done; done; done
fi
for r in $(seq ${ROUNDS:-3}); do
  for k in bn-sha bls-sha; do for b in ${BATCHES:-1 64}; do for m in calls fused graph; do
    step bench r$r $k b$b $m
    echo "== r$r $k batch $b $m" >> $o/bench-$k-b$b-$m.txt
    ZKPIPE_CUDA_QUOTIENT_LAUNCH=$m timeout 120 /tmp/bin/zkpipe-bench bench --trusted-key --no-verify --backend cuda --batch $b --runs ${RUNS:-10} --warmup 2 \
      /tmp/$k/c.zkey /tmp/$k/c.wtns >> $o/bench-$k-b$b-$m.txt 2>&1
  done; done; done
done
step done
cd $OUT && tar czf r.tgz r && rm -rf r
