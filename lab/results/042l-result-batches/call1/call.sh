#!/usr/bin/env bash
# 042l call 1 (2 x H200): a tail batch's results in one store transaction, accept groups
# without a savepoint each. A = main before (35b0aff's proving: passes of up to 64 via
# ZKPIPE_CUDA_BATCH=64), B = this change. 1 and 2 GPUs, 192 clients per GPU x 60 jobs,
# state on disk (the default), 3 rounds.
set -uo pipefail
mkdir -p /tmp/a /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/batch/zkpipe.xz > /tmp/a/zkpipe; xz -dc .carry/l/zkpipe.xz > /tmp/b/zkpipe
xz -dc .carry/final/zkpipe-bench.xz > /tmp/a/zkpipe-bench; cp /tmp/a/zkpipe-bench /tmp/b/
chmod +x /tmp/a/* /tmp/b/*
WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 ENV_A="ZKPIPE_CUDA_BATCH=64" \
  timeout 330 lab/exp042/scaling.sh "$OUT/r/c192" /tmp/a /tmp/b 3 "1 2" "before after" > "$OUT/r/c192.log" 2>&1
echo "c192 rc=$?" >> "$OUT/r/steps.txt"
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/l1.tgz" r && rm -rf "$OUT/r"
