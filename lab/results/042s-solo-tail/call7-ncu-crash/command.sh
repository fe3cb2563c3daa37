#!/usr/bin/env bash
# Device call (lab 042s call 7, one H200): call 6's ncu run ended in "malloc(): unaligned
# tcache chunk detected" (SIGSEGV) after the key's window tables. Which path: ncu over the
# same bench with the quotient launched kernel by kernel (calls), and as a graph profiled
# whole; the bench without ncu under glibc's heap checks; compute-sanitizer memcheck.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
d=/tmp/bn-sha; mkdir -p $d
[ -f $d/c.zkey ] || { /tmp/bin/zkpipe synth --curve bn254 --domain 2^14 --public 4 --seed 1 --values sha256 $d/c.r1cs $d/c.wtns; /tmp/bin/zkpipe setup --dev --seed 1 $d/c.r1cs $d/c.zkey; } > $o/key.txt 2>&1
bench=(/tmp/bin/zkpipe-bench bench --trusted-key --backend cuda --batch ${BATCH:-64} --runs 1 --warmup 0 $d/c.zkey $d/c.wtns)
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
step() { echo "== $1 $(date +%T)" >> $o/steps.txt; }
step heapcheck
MALLOC_CHECK_=3 MALLOC_PERTURB_=165 timeout 60 "${bench[@]}" > $o/heapcheck.txt 2>&1; echo "rc=$?" >> $o/heapcheck.txt
step ncu-calls
ZKPIPE_CUDA_QUOTIENT_LAUNCH=calls timeout 150 $ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-summary per-kernel "${bench[@]}" > $o/ncu-calls.txt 2>&1; echo "rc=$?" >> $o/ncu-calls.txt
step ncu-graph-whole
timeout 100 $ncu --clock-control none --graph-profiling graph --metrics gpu__time_duration.sum --csv --print-summary per-kernel "${bench[@]}" > $o/ncu-graph.txt 2>&1; echo "rc=$?" >> $o/ncu-graph.txt
step memcheck
timeout 150 compute-sanitizer --tool memcheck "${bench[@]}" > $o/memcheck.txt 2>&1; echo "rc=$?" >> $o/memcheck.txt
step done
cd $OUT && tar czf r.tgz r && rm -rf r
