#!/usr/bin/env bash
# Device call 2 (one H200, the same machine as call 1 if still warm: its keys reused):
# 2^24 BN254 proved under 16 GiB and verified; in-core against streamed under 16 GiB,
# batches 1 and 10; BLS12-381 2^24 made on the GPU, proved under 16 GiB and verified.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; done
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; ls -la lab/work/scale/* 2>&1; df -h . | tail -1; } > $R/device.txt 2>&1
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
S=lab/exp043/scale.sh
$S $R $B prove bn254 24 16GiB; at prove-bn254-24
$S $R $B speed bn254 24 1 "1 10" 16GiB; at speed-24-16g
[ $(( $(date +%s) - start )) -lt 300 ] && { $S $R $B setup bls12-381 24 cuda; at setup-bls-24; $S $R $B prove bls12-381 24 16GiB; at prove-bls-24; }
