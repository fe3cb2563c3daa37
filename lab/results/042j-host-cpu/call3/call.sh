#!/usr/bin/env bash
# 042j call 3 (2 x H200): main (1be3ba5) against final (1eee89d + the global pool named),
# SHA-256 values, 128 clients per GPU x 100 jobs, 3 rounds, 1 and 2 GPUs (one load tool
# for both), each daemon's accepts summarised from its log; then final on 2 GPUs with the
# default pools (A) against the reduce and device pools trimmed to 4 and 8 threads (B).
set -uo pipefail
mkdir -p /tmp/a /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/main/zkpipe.xz > /tmp/a/zkpipe; xz -dc .carry/new/zkpipe.xz > /tmp/b/zkpipe
xz -dc .carry/main/zkpipe-bench.xz > /tmp/b/zkpipe-bench; cp /tmp/b/zkpipe-bench /tmp/a/
chmod +x /tmp/a/* /tmp/b/*
WORK=/tmp/work VALUES=sha256 SMALL_C=128 SMALL_J=100 timeout 290 lab/exp042/scaling.sh "$OUT/r/ab" /tmp/a /tmp/b 3 "1 2" "main final" > "$OUT/r/ab.log" 2>&1
echo "ab rc=$?" >> "$OUT/r/steps.txt"
python3 lab/exp042/accepts.py "$OUT"/r/ab/*serve.log > "$OUT/r/ab/accepts.txt" 2>&1
WORK=/tmp/work VALUES=sha256 SMALL_C=128 SMALL_J=60 SET_B="reduce.threads=4 device.threads=8" timeout 150 lab/exp042/scaling.sh "$OUT/r/pools" /tmp/b /tmp/b 3 2 "pools32 pools4-8" > "$OUT/r/pools.log" 2>&1
echo "pools rc=$?" >> "$OUT/r/steps.txt"
python3 lab/exp042/accepts.py "$OUT"/r/pools/*serve.log > "$OUT/r/pools/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve.log; do tail -c 8000 "$f" > "$f.tail"; done
tar -C "$OUT" --exclude="*serve.log" -czf "$OUT/c3.tgz" r && rm -rf "$OUT/r"
