#!/usr/bin/env bash
# Device call (lab 042s call 1, 2 x H200): a tail batch alone on its worker's thread while
# others wait (the new default) against every batch spread over the tail's pool
# (tail.always_spread = true, the old way); same binary, host wait spin on both (the old
# default), 768 clients per GPU, 1 and 2 GPUs, 3 rounds alternating.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
WORK=/tmp/work VALUES=sha256 SMALL_C=${C:-768} SMALL_J=${J:-40} TRACE=${TRACE:-1} \
  ENV_A="ZKPIPE_CUDA_HOST_WAIT=spin" SET_A="tail.always_spread=true" \
  ENV_B="ZKPIPE_CUDA_HOST_WAIT=spin" \
  timeout ${LIMIT:-480} lab/exp042/scaling.sh $o/ab /tmp/bin /tmp/bin ${ROUNDS:-3} "${GPUS:-1 2}" "spread alone" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/ab/*trace.json; do [ -f "$f" ] && python3 lab/exp042/waterfall.py "$f" > "$f.summary.txt" 2>&1 && rm "$f"; done
for f in $o/ab/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
