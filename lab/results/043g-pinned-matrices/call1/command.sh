#!/usr/bin/env bash
# Device call 1 (lab 043g): the seam check with pinned matrices, a 2^24 BN254 dev key made
# on the GPU, then round 1 of in-core against streamed variants (pinned points and
# matrices, stream batch), one proof and a job of ten.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; }; done
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; free -g | head -2; df -h . | tail -1; } > $R/device.txt 2>&1
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
( timeout 170 $B/zkpipe-gpu-check 16 3 16 seam; echo "rc=$?" ) > $R/seam.txt 2>&1; at seam
S=lab/exp043/scale.sh
V="16GiB/2 16GiB/2/pin 16GiB/10/pin 4GiB 4GiB//pin"
[ $(( $(date +%s) - start )) -lt 200 ] && { timeout $(( 590 - ($(date +%s) - start) )) $S $R $B stream bn254 24 1 "1 10" "$V"; at stream-r1; }
