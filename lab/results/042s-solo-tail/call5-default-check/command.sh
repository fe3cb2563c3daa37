#!/usr/bin/env bash
# Device call (lab 042s call 3): CUDA's host wait, spin against WAIT_B (default: auto, which
# is block on several GPUs and spin on one), tail batches alone (the new default) on both,
# 768 clients per GPU, GPUS (default 2), 3 rounds alternating.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
WORK=/tmp/work VALUES=sha256 SMALL_C=${C:-768} SMALL_J=${J:-40} TRACE=${TRACE:-1} \
  ENV_A="ZKPIPE_CUDA_HOST_WAIT=spin" ENV_B="ZKPIPE_CUDA_HOST_WAIT=${WAIT_B:-}" \
  timeout ${LIMIT:-400} lab/exp042/scaling.sh $o/wait /tmp/bin /tmp/bin ${ROUNDS:-3} "${GPUS:-2}" "spin ${WAIT_B:-auto}" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/wait/*trace.json; do [ -f "$f" ] && python3 lab/exp042/waterfall.py "$f" > "$f.summary.txt" 2>&1 && rm "$f"; done
for f in $o/wait/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
