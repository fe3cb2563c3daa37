#!/usr/bin/env bash
# 042l call 4 (2 x H200): call 2's 10-partition 2^22 jobs, 16 clients x 4 jobs (twice the
# work after the same first-job wait), 1 and 2 GPUs, 2 rounds; nvidia-smi every 2 s.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/l/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
( while sleep 2; do nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits | tr '\n' ' '; echo; done ) > "$OUT/r/smi.txt" 2>&1 &
WORK=/tmp/work SETUP_ARGS="--backend cuda" BIG=1 SMALL=0 BIG_J=4 \
  timeout 520 lab/exp042/scaling.sh "$OUT/r/big4" /tmp/b "" 2 "1 2" "after" > "$OUT/r/big4.log" 2>&1
echo "big4 rc=$?" >> "$OUT/r/steps.txt"
kill %1
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/l4.tgz" r && rm -rf "$OUT/r"
