#!/usr/bin/env bash
# Device call (lab 042q call 3, 2 x H200): the micro-bench of all three launch modes
# (q1.sh, the fused mode mended), then the daemon with graphs (the default) against
# graphs with CUDA's host wait = block, 1 and 2 GPUs, 384 clients per GPU, 3 rounds.
set -uo pipefail
CHECK=${CHECK:-0} bash .carry/q1.sh
mv $OUT/r.tgz $OUT/bench.tgz
mkdir -p /tmp/bin
o=$OUT/r; mkdir -p $o
WORK=/tmp/work VALUES=sha256 SMALL_C=${C:-384} SMALL_J=${J:-40} \
  ENV_A="ZKPIPE_CUDA_PASS_TRACE=1" ENV_B="ZKPIPE_CUDA_HOST_WAIT=${WAIT:-block} ZKPIPE_CUDA_PASS_TRACE=1" \
  timeout ${LIMIT:-400} lab/exp042/scaling.sh $o/ab /tmp/bin /tmp/bin ${ROUNDS:-3} "${GPUS:-1 2}" "auto ${WAIT:-block}" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/ab/*serve.log; do [ -f "$f" ] && MIN_K=48 MAX_K=64 python3 lab/exp042/passes.py "$f" >> $o/passes.txt 2>&1; done
for f in $o/ab/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
