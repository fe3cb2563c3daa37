#!/usr/bin/env bash
# Device call 2 (lab 043g, warm from call 1): round 2 of in-core against the streamed variants.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; }; done
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
S=lab/exp043/scale.sh
V="16GiB/2 16GiB/2/pin 16GiB/10/pin 4GiB 4GiB//pin"
timeout 580 $S $R $B stream bn254 24 1 "1 10" "$V"; at stream-r2
