#!/usr/bin/env bash
# 042k call 9 (2 x H200): is the ~3,100 proofs/s ceiling of two GPUs the disk? Up to 64
# proofs a pass on both sides, state on the host's disk (A) vs /dev/shm (B), 2 GPUs,
# 192 clients per GPU x 60 jobs, 2 rounds.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/batch/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 ENV_A="ZKPIPE_CUDA_BATCH=64" ENV_B="ZKPIPE_CUDA_BATCH=64" \
  STATE_B=/dev/shm/zkpipe-state timeout 150 lab/exp042/scaling.sh "$OUT/r/shm" /tmp/b /tmp/b 2 "2" "disk shm" > "$OUT/r/shm.log" 2>&1
echo "shm rc=$?" >> "$OUT/r/steps.txt"
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/k9.tgz" r && rm -rf "$OUT/r"
