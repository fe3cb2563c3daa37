#!/usr/bin/env bash
# Device call (lab 042s call 11, one H200): three passes a GPU on large keys: 10-partition
# 2^22 jobs from witnesses (random values, 1.28 GB a job), the defaults (2 passes, 2
# workers) against device.passes = 3, device.workers = 4; 16 clients x 2 jobs, 1 GPU,
# 2 rounds; the 2^22 dev key made on the GPU.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
WORK=/tmp/work-big BIG=1 SMALL=0 BIG_C=${BIG_C:-16} BIG_J=${BIG_J:-2} SETUP_ARGS="--backend cuda" \
  SET_B="device.passes=3 device.workers=4" \
  timeout ${LIMIT:-500} lab/exp042/scaling.sh $o/big /tmp/bin /tmp/bin ${ROUNDS:-2} "${GPUS:-1}" "p2 p3" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/big/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
