#!/usr/bin/env bash
# 042k call 3 (2 x H200): the daemon's threads as they are (A) vs all but the device's at
# nice 5 (B, lab/exp042/renice.sh once the key is preloaded); cached (9dbde18), SHA-256
# values, 192 clients per GPU x 60 jobs, 3 rounds, 1 and 2 GPUs.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/cached/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
nvidia-smi dmon -s puc -d 1 -o T > "$OUT/r/dmon.txt" 2>&1 &
dmon=$!
WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 HOOK_B="lab/exp042/renice.sh 5" \
  timeout 280 lab/exp042/scaling.sh "$OUT/r/nice" /tmp/b /tmp/b 3 "1 2" "nice0 nice5" > "$OUT/r/nice.log" 2>&1
echo "nice rc=$?" >> "$OUT/r/steps.txt"
kill $dmon
for f in "$OUT"/r/*/*serve.log; do tail -c 8000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/k3.tgz" r && rm -rf "$OUT/r"
