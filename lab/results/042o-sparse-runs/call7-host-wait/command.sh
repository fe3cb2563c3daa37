#!/usr/bin/env bash
# Device call (lab 042o call 7, 2 x H200): CUDA's host wait auto (A) vs yield / block (B),
# two GPUs, 384 clients per GPU x 40 jobs, 3 rounds each, state on disk.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
for w in ${WAITS:-yield block}; do
  WORK=/tmp/work VALUES=sha256 SMALL_C=384 SMALL_J=40 ENV_B="ZKPIPE_CUDA_HOST_WAIT=$w" \
    timeout 280 lab/exp042/scaling.sh $o/$w${TAG:-} /tmp/bin /tmp/bin ${ROUNDS:-3} "${GPUS:-2}" "auto $w" > $o/scaling-$w${TAG:-}.log 2>&1
  echo "rc=$?" >> $o/scaling-$w${TAG:-}.log
  rm -f $o/$w${TAG:-}/*serve.log
done
cd $OUT && tar czf r.tgz r && rm -rf r
