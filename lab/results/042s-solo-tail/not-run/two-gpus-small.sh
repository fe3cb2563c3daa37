#!/usr/bin/env bash
# Device call (lab 042s call 8, 2 x H200): small proofs, the old tail and host wait
# (tail.always_spread = true, ZKPIPE_CUDA_HOST_WAIT=spin) against the new defaults (tail
# alone while others wait; auto = block at <=16 cores a GPU, so spin on one GPU of this
# 32-core host and block on two), same binary, 768 clients per GPU, 1 and 2 GPUs, 3 rounds.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
WORK=/tmp/work VALUES=sha256 SMALL_C=${C:-768} SMALL_J=${J:-40} TRACE=${TRACE:-1} \
  SET_A="tail.always_spread=true" ENV_A="ZKPIPE_CUDA_HOST_WAIT=spin" \
  timeout ${LIMIT:-480} lab/exp042/scaling.sh $o/ab /tmp/bin /tmp/bin ${ROUNDS:-3} "${GPUS:-1 2}" "before after" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/ab/*trace.json; do [ -f "$f" ] && python3 lab/exp042/waterfall.py "$f" > "$f.summary.txt" 2>&1 && rm "$f"; done
for f in $o/ab/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
