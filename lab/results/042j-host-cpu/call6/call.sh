#!/usr/bin/env bash
# 042j call 6 (2 x H200, a fresh machine): cached (9dbde18) alone, SHA-256 values, 192 clients per GPU x 60
# jobs, 2 rounds, 1 and 2 GPUs: do more clients fill two GPUs' passes now?
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/cached/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 timeout 130 lab/exp042/scaling.sh "$OUT/r/c192" /tmp/b "" 2 "1 2" cached > "$OUT/r/c192.log" 2>&1
echo "c192 rc=$?" >> "$OUT/r/steps.txt"
python3 lab/exp042/accepts.py "$OUT"/r/c192/*serve.log > "$OUT/r/c192/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve.log; do tail -c 8000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/c5.tgz" r && rm -rf "$OUT/r"
