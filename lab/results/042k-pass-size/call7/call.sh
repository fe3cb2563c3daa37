#!/usr/bin/env bash
# 042k call 7 (2 x H200): the pass size at the load the default was tuned at and above:
# up to 32 (A) vs 64 (B) proofs a pass, 1 GPU, 64 clients x 100 jobs, 3 rounds; then 64
# (A) vs 128 (B), 1 GPU, 512 clients x 30 jobs, 2 rounds. Call 6's LAB build, SHA-256 values.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/batch/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
WORK=/tmp/work VALUES=sha256 SMALL_C=64 SMALL_J=100 ENV_B="ZKPIPE_CUDA_BATCH=64" \
  timeout 150 lab/exp042/scaling.sh "$OUT/r/c64" /tmp/b /tmp/b 3 "1" "b32 b64" > "$OUT/r/c64.log" 2>&1
echo "c64 rc=$?" >> "$OUT/r/steps.txt"
WORK=/tmp/work VALUES=sha256 SMALL_C=512 SMALL_J=30 ENV_A="ZKPIPE_CUDA_BATCH=64 ZKPIPE_CUDA_PASS_TRACE=1" \
  ENV_B="ZKPIPE_CUDA_BATCH=128 ZKPIPE_CUDA_PASS_TRACE=1" \
  timeout 150 lab/exp042/scaling.sh "$OUT/r/c512" /tmp/b /tmp/b 2 "1" "b64 b128" > "$OUT/r/c512.log" 2>&1
echo "c512 rc=$?" >> "$OUT/r/steps.txt"
MIN_K=48 MAX_K=64 python3 lab/exp042/passes.py "$OUT"/r/c512/b64-*serve.log > "$OUT/r/c512/passes.txt" 2>&1
MIN_K=96 MAX_K=128 python3 lab/exp042/passes.py "$OUT"/r/c512/b128-*serve.log >> "$OUT/r/c512/passes.txt" 2>&1
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/k7.tgz" r && rm -rf "$OUT/r"
