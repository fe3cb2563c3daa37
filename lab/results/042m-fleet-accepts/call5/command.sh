#!/usr/bin/env bash
# stop 62 call 5 (2 x H200): 10-partition 2^22 jobs (16 clients x 2 jobs), witnesses
# synced (the default) against server.witness_sync=false, one GPU and two, interleaved:
# one round of all four cells, then a second round of the one-GPU pair.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/n/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
WORK=/tmp/work SETUP_ARGS="--backend cuda" BIG=1 SMALL=0 BIG_J=2 SET_B="server.witness_sync=false" \
  timeout 300 lab/exp042/scaling.sh "$OUT/r/both" /tmp/b /tmp/b 1 "1 2" "sync nosync" > "$OUT/r/both.log" 2>&1
echo "both rc=$?" >> "$OUT/r/steps.txt"
WORK=/tmp/work BIG=1 SMALL=0 BIG_J=2 SET_B="server.witness_sync=false" \
  timeout 160 lab/exp042/scaling.sh "$OUT/r/g1" /tmp/b /tmp/b 1 "1" "sync nosync" > "$OUT/r/g1.log" 2>&1
echo "g1 rc=$?" >> "$OUT/r/steps.txt"
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/c5.tgz" r && rm -rf "$OUT/r"
