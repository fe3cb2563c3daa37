#!/usr/bin/env bash
# Device call 1 (one H200): the G2 kernel fixed (two lanes a point), G2 and G1 checked
# against the CPU; setup --dev times at 2^22 (cuda and cpu, the same file?) and 2^24 (cuda);
# then one round of 2^24 BN254 in-core against streamed under 4 GiB, batches of 1 and 10.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; done
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; free -g | head -2; df -h . | tail -1; } > $R/device.txt 2>&1
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
S=lab/exp043/scale.sh
$S $R $B check; at check
$S $R $B setup bn254 22 "cuda cpu"; at setup-22
$S $R $B setup bn254 24 "cuda"; at setup-24
[ $(( $(date +%s) - start )) -lt 380 ] && { $S $R $B speed bn254 24 1 "1 10" 4GiB; at speed-24; }
