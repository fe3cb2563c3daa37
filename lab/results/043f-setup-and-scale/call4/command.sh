#!/usr/bin/env bash
# Device call 4 (one H200, warm from call 3): BN254 2^25 under 16 GiB (call 3 ran out of
# disk with the BLS12-381 2^25 key beside it: that key removed first); then, if time is
# left, a 2^24 BN254 key again and a second round of in-core against streamed (16 GiB).
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; }; done
rm -rf lab/work/scale/bls12-381-25 lab/work/scale/bn254-25
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; df -h . | tail -1; } > $R/device.txt 2>&1
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
S=lab/exp043/scale.sh
$S $R $B setup bn254 25 cuda; at setup-bn254-25
[ -f lab/work/scale/bn254-25/c.zkey ] && rm -f lab/work/scale/bn254-25/c.r1cs
$S $R $B prove bn254 25 16GiB; at prove-bn254-25
rm -rf lab/work/scale/bn254-25
[ $(( $(date +%s) - start )) -lt 280 ] && { $S $R $B speed bn254 24 1 "1 10" 16GiB; at speed-24-16g; }
