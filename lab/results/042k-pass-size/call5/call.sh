#!/usr/bin/env bash
# 042k call 5 (2 x H200): one core's speed while the daemon proves on 1 and on 2 GPUs
# (lab/exp042/probe.sh, PROBE=1) and the daemon's clock rate (perf stat); cached (9dbde18),
# SHA-256 values, 192 clients per GPU x 60 jobs, 3 rounds.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/cached/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
tar -C /tmp -xJf .carry/perfkit.tar.xz
/tmp/perfkit/run-perf stat -x, -e cycles,instructions,task-clock -- sleep 1 > "$OUT/r/perf-check.txt" 2>&1
WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 PROBE=1 PERF=/tmp/perfkit/run-perf \
  timeout 200 lab/exp042/scaling.sh "$OUT/r/probe" /tmp/b "" 3 "1 2" "cached" > "$OUT/r/probe.log" 2>&1
echo "probe rc=$?" >> "$OUT/r/steps.txt"
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/k5.tgz" r && rm -rf "$OUT/r"
