#!/usr/bin/env bash
# 042k call 6 (2 x H200): a batched pass of up to 32 proofs (A, the default) vs up to 64
# (B, ZKPIPE_CUDA_BATCH=64), one daemon on 1 and 2 GPUs; this tree's LAB build, SHA-256
# values, 256 clients per GPU x 40 jobs, 3 rounds, pass trace on both sides.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/batch/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
nvidia-smi dmon -s puc -d 1 -o T > "$OUT/r/dmon.txt" 2>&1 &
dmon=$!
WORK=/tmp/work VALUES=sha256 SMALL_C=256 SMALL_J=40 ENV_A="ZKPIPE_CUDA_PASS_TRACE=1" \
  ENV_B="ZKPIPE_CUDA_PASS_TRACE=1 ZKPIPE_CUDA_BATCH=64" \
  timeout 300 lab/exp042/scaling.sh "$OUT/r/batch" /tmp/b /tmp/b 3 "1 2" "b32 b64" > "$OUT/r/batch.log" 2>&1
echo "batch rc=$?" >> "$OUT/r/steps.txt"
kill $dmon
python3 lab/exp042/passes.py "$OUT"/r/batch/b32-*serve.log > "$OUT/r/batch/passes.txt" 2>&1
MIN_K=48 MAX_K=64 python3 lab/exp042/passes.py "$OUT"/r/batch/b64-*serve.log >> "$OUT/r/batch/passes.txt" 2>&1
python3 lab/exp042/accepts.py "$OUT"/r/batch/*serve.log > "$OUT/r/batch/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/k6.tgz" r && rm -rf "$OUT/r"
