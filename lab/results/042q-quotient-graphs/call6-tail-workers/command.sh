#!/usr/bin/env bash
# Device call (lab 042q call 6, 2 x H200): at 768 clients per GPU the tail waits on two
# GPUs (tail_wait 6 -> 28 ms mean, its 8 workers ~7.7 threads busy). Default (8 tail
# workers) against 16, same binary, 1 and 2 GPUs, 2 rounds, waterfalls kept.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
WORK=/tmp/work VALUES=sha256 SMALL_C=${C:-768} SMALL_J=${J:-40} TRACE=${TRACE:-1} \
  ENV_A="ZKPIPE_CUDA_PASS_TRACE=1" ENV_B="ZKPIPE_CUDA_PASS_TRACE=1" SET_B="${SETB:-tail.workers=16}" \
  timeout ${LIMIT:-330} lab/exp042/scaling.sh $o/ab /tmp/bin /tmp/bin ${ROUNDS:-2} "${GPUS:-1 2}" "${LABELS:-w8 w16}" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/ab/*serve.log; do [ -f "$f" ] && MIN_K=48 MAX_K=64 python3 lab/exp042/passes.py "$f" >> $o/passes.txt 2>&1; done
for f in $o/ab/*trace.json; do [ -f "$f" ] && python3 lab/exp042/waterfall.py "$f" > "$f.summary.txt" 2>&1 && xz -T2 "$f"; done
for f in $o/ab/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
