#!/usr/bin/env bash
# 042k call 2 (2 x H200): CUDA host wait auto (spin here) vs yield, 1 and 2 GPUs; then
# auto vs block on 2 GPUs. cached (9dbde18), SHA-256 values, 192 clients per GPU x 60 jobs.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/cached/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
nvidia-smi dmon -s puc -d 1 -o T > "$OUT/r/dmon.txt" 2>&1 &
dmon=$!
WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 ENV_B="ZKPIPE_CUDA_HOST_WAIT=yield" \
  timeout 200 lab/exp042/scaling.sh "$OUT/r/yield" /tmp/b /tmp/b 2 "1 2" "auto yield" > "$OUT/r/yield.log" 2>&1
echo "yield rc=$?" >> "$OUT/r/steps.txt"
WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 ENV_B="ZKPIPE_CUDA_HOST_WAIT=block" \
  timeout 150 lab/exp042/scaling.sh "$OUT/r/block" /tmp/b /tmp/b 3 "2" "auto block" > "$OUT/r/block.log" 2>&1
echo "block rc=$?" >> "$OUT/r/steps.txt"
kill $dmon
for f in "$OUT"/r/*/*serve.log; do tail -c 8000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/k2.tgz" r && rm -rf "$OUT/r"
