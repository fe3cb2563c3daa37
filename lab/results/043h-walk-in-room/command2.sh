#!/usr/bin/env bash
# Device call (lab 043h, second build: a lower scratch rate for long chunks): ROUND=1 makes
# the key and runs the seam check; then BN254 2^24 bench rounds, in-core against 4 GiB and
# 16 GiB pinned, batches 1 and 10; PEAK=1 then samples nvidia-smi (100 ms) during one
# 4 GiB and one 16 GiB job of ten.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; }; done
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
S=lab/exp043/scale.sh
if [ "${ROUND:-1}" = 1 ]; then
  ( timeout 150 $B/zkpipe-gpu-check 16 3 16 seam; echo "rc=$?" ) > $R/seam.txt 2>&1; at seam
fi
timeout ${T1:-330} $S $R $B stream bn254 24 ${ROUNDS:-1} "1 10" "4GiB/pin 16GiB/pin"; at main
if [ "${PEAK:-0}" = 1 ]; then
  d=lab/work/scale/bn254-24
  for v in 4GiB 16GiB; do
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > $R/peak-$v.csv &
    smi=$!
    timeout 120 $B/zkpipe-bench bench --trusted-key --backend cuda --runs 1 --warmup 0 --batch 10 \
      --device-limit $v --pin $d/c.zkey $d/c.wtns > $R/peak-$v.txt 2>&1
    kill $smi
    echo "$v: peak memory.used $(sort -n $R/peak-$v.csv | tail -1) MiB over $(wc -l < $R/peak-$v.csv) samples" >> $R/peak.txt
  done
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits >> $R/peak.txt
  at peak
fi
