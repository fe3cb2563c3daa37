#!/usr/bin/env bash
# 042l call 3 (2 x H200), this change alone. (1) 2 GPUs, state on disk (A) vs in /dev/shm
# (B): does the store still hold two GPUs? 192 clients per GPU x 60 jobs, 3 rounds.
# (2) passes of up to 64 (A) vs 128 (B, ZKPIPE_CUDA_BATCH=128), 1 and 2 GPUs, 256 clients
# per GPU x 40 jobs, 3 rounds.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/l/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 STATE_B=/dev/shm/zkpipe-state \
  timeout 200 lab/exp042/scaling.sh "$OUT/r/shm" /tmp/b /tmp/b 3 "2" "disk shm" > "$OUT/r/shm.log" 2>&1
echo "shm rc=$?" >> "$OUT/r/steps.txt"
WORK=/tmp/work VALUES=sha256 SMALL_C=256 SMALL_J=40 ENV_B="ZKPIPE_CUDA_BATCH=128" \
  timeout 300 lab/exp042/scaling.sh "$OUT/r/b128" /tmp/b /tmp/b 3 "1 2" "b64 b128" > "$OUT/r/b128.log" 2>&1
echo "b128 rc=$?" >> "$OUT/r/steps.txt"
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/l3.tgz" r && rm -rf "$OUT/r"
