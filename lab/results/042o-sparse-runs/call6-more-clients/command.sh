#!/usr/bin/env bash
# Device call (lab 042o call 6, 2 x H200): the default build's small-proof rate at more
# clients (384 per GPU), state on disk (A) vs in /dev/shm (B), 1 and 2 GPUs, 2 rounds.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
WORK=/tmp/work VALUES=sha256 SMALL_C=${C:-384} SMALL_J=${J:-40} STATE_B=/dev/shm/zkpipe-state \
  ENV_A="ZKPIPE_CUDA_PASS_TRACE=1" ENV_B="ZKPIPE_CUDA_PASS_TRACE=1" \
  timeout ${LIMIT:-500} lab/exp042/scaling.sh $o/c384 /tmp/bin /tmp/bin ${ROUNDS:-2} "${GPUS:-1 2}" "disk shm" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/c384/*serve.log; do [ -f "$f" ] && MIN_K=48 MAX_K=64 python3 lab/exp042/passes.py "$f" >> $o/passes.txt 2>&1; done
for f in $o/c384/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
