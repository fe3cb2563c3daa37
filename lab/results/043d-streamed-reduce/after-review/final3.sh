#!/usr/bin/env bash
# Device call E: the review's mend (streamed reduce's layouts made once, the staging guard,
# CpuFixedBase::for_r1cs): seam, setup and fixture checks, then one round of 2^22 BN254
# in-core / streamed (key made with setup --backend cuda).
set -u
R=$OUT/r; mkdir -p $R
bash .carry/final2.sh
xz -dc .carry/p/zkpipe-bench.xz > /tmp/b/zkpipe-bench; chmod +x /tmp/b/zkpipe-bench
SETUP_BACKEND=cuda WORK=/tmp/w timeout 200 lab/exp043/streamed.sh $R/speed /tmp/b speed 22 1 4GiB > $R/speed.log 2>&1
echo "speed rc=$?" >> $R/speed.log
tar czf $OUT/r.tgz -C $OUT r
