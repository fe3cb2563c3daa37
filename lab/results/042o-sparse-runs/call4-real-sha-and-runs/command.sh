#!/usr/bin/env bash
# Device call (lab 042o call 4): a real circom SHA-256 witness (only 0s and 1s), gap 0 vs 4;
# then the pieces per run R against the default now that runs stop at wide steps.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
{ date; nproc; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; } > $o/host.txt 2>&1
key() {  # NAME CURVE VALUES
  local d=/tmp/$1; mkdir -p $d
  [ -f $d/c.zkey ] && return
  /tmp/bin/zkpipe synth --curve $2 --domain 2^14 --public 4 --seed 1 ${3:+--values $3} $d/c.r1cs $d/c.wtns >> $o/key.txt 2>&1
  /tmp/bin/zkpipe setup --dev --seed 1 $d/c.r1cs $d/c.zkey >> $o/key.txt 2>&1
}
key bn-sha bn254 sha256; key bn-rand bn254 ""
d=/tmp/real-sha; mkdir -p $d
[ -f $d/c.zkey ] || { xz -dc .carry/sha.r1cs.xz > $d/c.r1cs; xz -dc .carry/sha.wtns.xz > $d/c.wtns; /tmp/bin/zkpipe setup --dev --seed 1 $d/c.r1cs $d/c.zkey >> $o/key.txt 2>&1; }
step() { echo "== $* $(date +%T)" >> $o/steps.txt; }
B="/tmp/bin/zkpipe-bench bench --trusted-key --no-verify --backend cuda --warmup 2 --runs 10"
step verify real-sha
timeout 60 /tmp/bin/zkpipe-bench bench --trusted-key --backend cuda --runs 1 --warmup 0 $d/c.zkey $d/c.wtns > $o/verify-real-sha.txt 2>&1; echo "rc=$?" >> $o/verify-real-sha.txt
for r in 1 2 3; do
  for g in 0 4; do
    step r$r real-sha gap$g
    echo "== r$r" >> $o/real-sha-gap$g.txt
    ZKPIPE_CUDA_RUN_GAP=$g timeout 60 $B --batch 1 $d/c.zkey $d/c.wtns >> $o/real-sha-gap$g.txt 2>&1
  done
  for k in bn-sha bn-rand; do for run in 16 32 64; do
    step r$r $k b64 run$run
    echo "== r$r" >> $o/$k-b64-run$run.txt
    ZKPIPE_CUDA_RUN=$run timeout 60 $B --batch 64 /tmp/$k/c.zkey /tmp/$k/c.wtns >> $o/$k-b64-run$run.txt 2>&1
  done; done
  for run in 4 8 16; do
    step r$r bn-sha b1 run$run
    echo "== r$r" >> $o/bn-sha-b1-run$run.txt
    ZKPIPE_CUDA_RUN=$run timeout 60 $B --batch 1 /tmp/bn-sha/c.zkey /tmp/bn-sha/c.wtns >> $o/bn-sha-b1-run$run.txt 2>&1
  done
done
step done
cd $OUT && tar czf r.tgz r && rm -rf r
