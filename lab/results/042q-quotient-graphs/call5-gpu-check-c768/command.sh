#!/usr/bin/env bash
# Device call (lab 042q call 5, 2 x H200): scripts/gpu-check.sh with the final build
# (kernels incl. the one-call reduce + quotient, fixtures in-core and streamed verified
# against snarkjs's keys, dev keys), then the daemon at 768 clients per GPU, 1 and 2 GPUs,
# 2 rounds, waterfalls kept.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
if [ "${CHECK:-1}" = 1 ]; then
  timeout ${CHECK_LIMIT:-330} scripts/gpu-check.sh $o/check /tmp/bin "${SIZES:-16 20}" ${MAX_LOG:-20} > $o/check.log 2>&1
  echo "rc=$?" >> $o/check.log
fi
WORK=/tmp/work VALUES=sha256 SMALL_C=${C:-768} SMALL_J=${J:-40} TRACE=${TRACE:-1} \
  ENV_A="ZKPIPE_CUDA_PASS_TRACE=1" \
  timeout ${LIMIT:-200} lab/exp042/scaling.sh $o/c768 /tmp/bin "" ${ROUNDS:-2} "${GPUS:-1 2}" "graph" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/c768/*serve.log; do [ -f "$f" ] && MIN_K=48 MAX_K=64 python3 lab/exp042/passes.py "$f" >> $o/passes.txt 2>&1; done
for f in $o/c768/*trace.json; do [ -f "$f" ] && python3 lab/exp042/waterfall.py "$f" > "$f.summary.txt" 2>&1 && xz -T2 "$f"; done
for f in $o/c768/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
