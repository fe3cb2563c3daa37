#!/usr/bin/env bash
# stop 62 call 2 (2 x H200): 10-partition 2^22 jobs (16 clients x 2 jobs): one GPU once,
# then two GPUs with witnesses synced (the default) against server.witness_sync=false,
# interleaved, 3 rounds; nvidia-smi every 2 s.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
[ -x /tmp/b/zkpipe ] || { xz -dc .carry/l/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench; chmod +x /tmp/b/*; }
( while sleep 2; do nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits | tr '\n' ' '; echo; done ) > "$OUT/r/smi.txt" 2>&1 &
WORK=/tmp/work SETUP_ARGS="--backend cuda" BIG=1 SMALL=0 BIG_J=2 \
  timeout 150 lab/exp042/scaling.sh "$OUT/r/g1" /tmp/b "" 1 "1" "sync" > "$OUT/r/g1.log" 2>&1
echo "g1 rc=$?" >> "$OUT/r/steps.txt"
WORK=/tmp/work BIG=1 SMALL=0 BIG_J=2 SET_B="server.witness_sync=false" \
  timeout 400 lab/exp042/scaling.sh "$OUT/r/g2" /tmp/b /tmp/b 3 "2" "sync nosync" > "$OUT/r/g2.log" 2>&1
echo "g2 rc=$?" >> "$OUT/r/steps.txt"
kill %1
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/c2.tgz" r && rm -rf "$OUT/r"
