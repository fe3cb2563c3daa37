#!/usr/bin/env bash
# 042k call 1 (2 x H200): where a batched pass's wall time goes on one GPU and on two.
# cached (9dbde18) alone, SHA-256 values, 192 clients per GPU x 60 jobs, 2 rounds, 1 and 2
# GPUs, with ZKPIPE_CUDA_PASS_TRACE=1 (trace) and without (plain); nvidia-smi dmon throughout.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/cached/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
{ nvidia-smi topo -m; lscpu; numactl -H 2>&1 | head -20; nvidia-smi -q | grep -iE "link (gen|width)|bus id|numa" ; } > "$OUT/r/topo.txt" 2>&1
nvidia-smi dmon -s puc -d 1 -o T > "$OUT/r/dmon.txt" 2>&1 &
dmon=$!
WORK=/tmp/work VALUES=sha256 SMALL_C=192 SMALL_J=60 ENV_A="ZKPIPE_CUDA_PASS_TRACE=1" \
  timeout 240 lab/exp042/scaling.sh "$OUT/r/trace" /tmp/b /tmp/b 2 "1 2" "trace plain" > "$OUT/r/trace.log" 2>&1
echo "trace rc=$?" >> "$OUT/r/steps.txt"
kill $dmon
python3 lab/exp042/passes.py "$OUT"/r/trace/trace-*serve.log > "$OUT/r/trace/passes.txt" 2>&1
python3 lab/exp042/accepts.py "$OUT"/r/trace/*serve.log > "$OUT/r/trace/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve.log; do grep "pass trace" "$f" | xz -9 > "$f.passes.xz"; tail -c 8000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/k1.tgz" r && rm -rf "$OUT/r"
