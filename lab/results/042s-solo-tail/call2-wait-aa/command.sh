#!/usr/bin/env bash
# Device call (lab 042s call 2, 2 x H200): CUDA's host wait on two GPUs, spin (the old
# default) against auto (now block on several GPUs); tail alone (the new default) on both,
# 768 clients per GPU, 3 rounds alternating.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
WORK=/tmp/work VALUES=sha256 SMALL_C=${C:-768} SMALL_J=${J:-40} TRACE=${TRACE:-1} \
  ENV_A="ZKPIPE_CUDA_HOST_WAIT=spin" \
  timeout ${LIMIT:-400} lab/exp042/scaling.sh $o/wait /tmp/bin /tmp/bin ${ROUNDS:-3} "${GPUS:-2}" "spin auto" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/wait/*trace.json; do [ -f "$f" ] && python3 lab/exp042/waterfall.py "$f" > "$f.summary.txt" 2>&1 && rm "$f"; done
for f in $o/wait/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
