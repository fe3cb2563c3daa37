#!/usr/bin/env bash
# Device call 3 (one H200, warm from call 2): the ceiling at 2^25 under 16 GiB. Earlier
# keys removed for disk; BLS12-381 2^25 made on the GPU, proved under 16 GiB, verified;
# then BN254 2^25 the same if time allows.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; }; done
rm -rf lab/work/scale/bn254-22 lab/work/scale/bn254-24 lab/work/scale/bls12-381-24
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; free -g | head -2; df -h . | tail -1; } > $R/device.txt 2>&1
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
S=lab/exp043/scale.sh
$S $R $B setup bls12-381 25 cuda; at setup-bls-25
rm -f lab/work/scale/bls12-381-25/c.r1cs
$S $R $B prove bls12-381 25 16GiB; at prove-bls-25
df -h . | tail -1 >> $R/device.txt
[ $(( $(date +%s) - start )) -lt 320 ] && { $S $R $B setup bn254 25 cuda; at setup-bn254-25; rm -f lab/work/scale/bn254-25/c.r1cs; $S $R $B prove bn254 25 16GiB; at prove-bn254-25; }
