#!/usr/bin/env bash
# 042l call 2 (2 x H200): 10-partition jobs of a 2^22 key from witnesses (1.28 GB a job),
# 16 clients x 2 jobs, this change alone, 1 and 2 GPUs, 3 rounds (the key made on the GPU).
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/l/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
( while sleep 2; do nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits | tr '\n' ' '; echo; done ) > "$OUT/r/smi.txt" 2>&1 &
WORK=/tmp/work SETUP_ARGS="--backend cuda" BIG=1 SMALL=0 \
  timeout 540 lab/exp042/scaling.sh "$OUT/r/big" /tmp/b "" 3 "1 2" "after" > "$OUT/r/big.log" 2>&1
echo "big rc=$?" >> "$OUT/r/steps.txt"
kill %1
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/l2.tgz" r && rm -rf "$OUT/r"
