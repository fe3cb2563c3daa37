#!/usr/bin/env bash
# Device call (lab 042o call 5): lone proofs of larger SHA-256-valued keys (2^16, 2^18,
# 2^20: the batched kernels' lone path), runs cut at steps over 4 (default) vs not.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
key() {  # NAME CURVE LOG VALUES
  local d=/tmp/$1; mkdir -p $d
  [ -f $d/c.zkey ] && return
  /tmp/bin/zkpipe synth --curve $2 --domain 2^$3 --public 4 --seed 1 ${4:+--values $4} $d/c.r1cs $d/c.wtns >> $o/key.txt 2>&1
  /tmp/bin/zkpipe setup --dev --seed 1 --backend cuda $d/c.r1cs $d/c.zkey >> $o/key.txt 2>&1
}
for l in 16 18 20; do key bn$l-sha bn254 $l sha256; done; key bls20-sha bls12-381 20 sha256
step() { echo "== $* $(date +%T)" >> $o/steps.txt; }
for k in bn16-sha bn18-sha bn20-sha bls20-sha; do
  step verify $k
  timeout 60 /tmp/bin/zkpipe-bench bench --trusted-key --backend cuda --runs 1 --warmup 0 /tmp/$k/c.zkey /tmp/$k/c.wtns > $o/verify-$k.txt 2>&1; echo "rc=$?" >> $o/verify-$k.txt
done
for r in 1 2 3; do for k in bn16-sha bn18-sha bn20-sha bls20-sha; do for g in 0 4; do
  step r$r $k gap$g
  echo "== r$r" >> $o/$k-gap$g.txt
  ZKPIPE_CUDA_RUN_GAP=$g timeout 90 /tmp/bin/zkpipe-bench bench --trusted-key --no-verify --backend cuda --batch 1 --runs 10 --warmup 2 \
    /tmp/$k/c.zkey /tmp/$k/c.wtns >> $o/$k-gap$g.txt 2>&1
done; done; done
step done
cd $OUT && tar czf r.tgz r && rm -rf r
