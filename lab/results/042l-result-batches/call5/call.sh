#!/usr/bin/env bash
# 042l call 5 (2 x H200): a staged witness's writeback started every 16 MiB as it arrives
# (B) against none until its final sync (A, call 1's binary), 10-partition 2^22 jobs from
# witnesses, 16 clients x 2 jobs, 2 GPUs, 3 rounds, interleaved.
set -uo pipefail
mkdir -p /tmp/a /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/l/zkpipe.xz > /tmp/a/zkpipe; xz -dc .carry/w/zkpipe.xz > /tmp/b/zkpipe
xz -dc .carry/final/zkpipe-bench.xz > /tmp/a/zkpipe-bench; cp /tmp/a/zkpipe-bench /tmp/b/
chmod +x /tmp/a/* /tmp/b/*
( while sleep 2; do nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits | tr '\n' ' '; grep -E "^(Dirty|Writeback):" /proc/meminfo | tr -s ' ' | tr '\n' ' '; echo; done ) > "$OUT/r/smi.txt" 2>&1 &
WORK=/tmp/work SETUP_ARGS="--backend cuda" BIG=1 SMALL=0 \
  timeout 420 lab/exp042/scaling.sh "$OUT/r/wb" /tmp/a /tmp/b 3 "2" "plain writeback" > "$OUT/r/wb.log" 2>&1
echo "wb rc=$?" >> "$OUT/r/steps.txt"
kill %1
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/l5.tgz" r && rm -rf "$OUT/r"
