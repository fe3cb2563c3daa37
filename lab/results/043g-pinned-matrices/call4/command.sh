#!/usr/bin/env bash
# Device call 4 (lab 043g, warm from call 3): stream batch 2, 3 and 4 under 16 GiB, pinned,
# against in-core, 2 rounds (the chunk size each batch leaves).
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; }; done
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
S=lab/exp043/scale.sh
timeout 400 $S $R $B stream bn254 24 2 "1 10" "16GiB/2/pin 16GiB/3/pin 16GiB/4/pin"; at batches
