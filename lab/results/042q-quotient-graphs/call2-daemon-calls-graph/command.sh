#!/usr/bin/env bash
# Device call (lab 042q call 2, 2 x H200): the daemon's small-proof rate, the reduce and
# quotient launched as before (calls) against one graph (the default), same binary, 1 and
# 2 GPUs, 384 clients per GPU, 3 rounds.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
WORK=/tmp/work VALUES=sha256 SMALL_C=${C:-384} SMALL_J=${J:-40} \
  ENV_A="ZKPIPE_CUDA_QUOTIENT_LAUNCH=calls ZKPIPE_CUDA_PASS_TRACE=1" ENV_B="ZKPIPE_CUDA_PASS_TRACE=1" \
  timeout ${LIMIT:-560} lab/exp042/scaling.sh $o/ab /tmp/bin /tmp/bin ${ROUNDS:-3} "${GPUS:-1 2}" "calls graph" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/ab/*serve.log; do [ -f "$f" ] && MIN_K=48 MAX_K=64 python3 lab/exp042/passes.py "$f" >> $o/passes.txt 2>&1; done
for f in $o/ab/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
