#!/usr/bin/env bash
# Device call 4: the daemon under load with the streamed-pass fix, 1 round warm/pinned.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench; do xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $R/device.txt 2>&1
nproc >> $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
LOAD_TIMEOUT=90 WORK=/tmp/w timeout 330 lab/exp043/pinned-load.sh $R $B 22 1 4GiB 4 3 2 > $R/load.log 2>&1
echo "load rc=$? at $(( $(date +%s) - start )) s" >> $R/times.txt
