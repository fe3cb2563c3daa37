#!/usr/bin/env bash
# 042k call 4 (2 x H200): one daemon on 1 and 2 GPUs, glibc (sys) vs mimalloc
# (ZKPIPE_ALLOCATOR), and two daemons of one GPU each (SPLIT=1, clients spread), round by
# round; cached (9dbde18), SHA-256 values, 192 clients per GPU x 60 jobs, 3 rounds.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/cached/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
nvidia-smi dmon -s puc -d 1 -o T > "$OUT/r/dmon.txt" 2>&1 &
dmon=$!
for r in 1 2 3; do
  WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 ENV_B="ZKPIPE_ALLOCATOR=mimalloc" \
    timeout 100 lab/exp042/scaling.sh "$OUT/r/one-r$r" /tmp/b /tmp/b 1 "1 2" "sys mimalloc" > "$OUT/r/one-r$r.log" 2>&1
  echo "one r$r rc=$?" >> "$OUT/r/steps.txt"
  WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 SPLIT=1 \
    timeout 50 lab/exp042/scaling.sh "$OUT/r/split-r$r" /tmp/b "" 1 "2" "split" > "$OUT/r/split-r$r.log" 2>&1
  echo "split r$r rc=$?" >> "$OUT/r/steps.txt"
done
kill $dmon
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/k4.tgz" r && rm -rf "$OUT/r"
