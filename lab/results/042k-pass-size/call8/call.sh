#!/usr/bin/env bash
# 042k call 8 (2 x H200): call 6 again on another host, at call 7 of 042j's load: up to 32
# (A) vs 64 (B) proofs a pass, 1 and 2 GPUs, 192 clients per GPU x 60 jobs, 3 rounds.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/batch/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 ENV_A="ZKPIPE_CUDA_BATCH=32" ENV_B="ZKPIPE_CUDA_BATCH=64" \
  timeout 250 lab/exp042/scaling.sh "$OUT/r/c192" /tmp/b /tmp/b 3 "1 2" "b32 b64" > "$OUT/r/c192.log" 2>&1
echo "c192 rc=$?" >> "$OUT/r/steps.txt"
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/k8.tgz" r && rm -rf "$OUT/r"
