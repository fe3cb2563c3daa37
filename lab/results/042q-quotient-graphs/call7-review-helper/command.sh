#!/usr/bin/env bash
# Device call (lab 042q call 7): the reduce's shared helper (a review mend, reduce.cuh):
# gpu-check's kernels against the CPU (quotient, reduce, the one call) to 2^16, then
# verified benches of 1 and 64 proofs, both curves, in every launch mode.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe-bench zkpipe-gpu-check zkpipe; do xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
timeout 200 /tmp/bin/zkpipe-gpu-check 16 3 16 kernels > $o/check-kernels.txt 2>&1; echo "rc=$?" >> $o/check-kernels.txt
CHECK=0 ROUNDS=0 bash .carry/q1.sh
