#!/usr/bin/env bash
# Device call (lab 042s call 6, one H200): where a 64-proof pass's GPU time goes, by
# kernel: ncu (durations only, clocks left alone) over one bench pass of the 2^14
# SHA-256-valued BN254 key, and the pass trace of 10 passes without ncu.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
d=/tmp/bn-sha; mkdir -p $d
[ -f $d/c.zkey ] || { /tmp/bin/zkpipe synth --curve bn254 --domain 2^14 --public 4 --seed 1 --values sha256 $d/c.r1cs $d/c.wtns; /tmp/bin/zkpipe setup --dev --seed 1 $d/c.r1cs $d/c.zkey; } > $o/key.txt 2>&1
ZKPIPE_CUDA_PASS_TRACE=1 timeout 60 /tmp/bin/zkpipe-bench bench --trusted-key --no-verify --backend cuda --batch 64 --runs 10 --warmup 2 $d/c.zkey $d/c.wtns > $o/trace.txt 2>&1
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $ncu" > $o/ncu.txt
timeout ${NCU_LIMIT:-300} $ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-summary per-kernel \
  /tmp/bin/zkpipe-bench bench --trusted-key --no-verify --backend cuda --batch 64 --runs 1 --warmup 0 $d/c.zkey $d/c.wtns >> $o/ncu.txt 2>&1
echo "rc=$?" >> $o/ncu.txt
cd $OUT && tar czf r.tgz r && rm -rf r
