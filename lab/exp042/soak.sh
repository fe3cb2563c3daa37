#!/usr/bin/env bash
# Issue 42's soak: one daemon at full rate for a while, its RSS and latency sampled per
# slice, so that growth shows (retention bounds, buffers, the trace ring, the job store).
#
#   lab/exp042/soak.sh OUT_DIR BIN [MINUTES=30] [GPUS=1]
#
# BIN: a folder holding `zkpipe` and `zkpipe-bench` (scripts/build-cuda.sh). The 2^14 dev
# key (lab/lib/harness.sh), default config, trusted keys (the self-check on); slices of
# `zkpipe-bench loadtest` (SOAK_C clients, default 64 per GPU, x SOAK_J jobs, default 100)
# back to back until MINUTES pass. Writes OUT_DIR/slices.tsv (one line a slice: seconds
# since the start, proofs/s, job latency p50/p99 ms, failed jobs, daemon RSS MiB, state
# directory MiB), each slice's loadtest output, and the serve log.
set -euo pipefail
out=${1:?output dir}
bin=$(realpath "${2:?bin}")
minutes=${3:-30}
gpus=${4:-1}
mkdir -p "$out"
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
work_dir
machine_info "$out/device.txt"
dev_keys "$bin/zkpipe" 14
daemon_config 50861 9874
rm -rf "$work/zkpipe-state"
(cd "$work" && CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1))) exec "$bin/zkpipe" serve --config zkpipe.toml --backend "${BACKEND:-cuda}") \
  > "$out/serve.log" 2>&1 &
pid=$!
for _ in $(seq 300); do grep -q serving "$out/serve.log" && break; sleep 0.2; done
"$bin/zkpipe" preload k14 > /dev/null
c=$(( ${SOAK_C:-64} * gpus ))
printf 'seconds\tproofs_per_s\tp50_ms\tp99_ms\tfailed\trss_mib\tstate_mib\n' > "$out/slices.tsv"
start=$(date +%s)
i=0
while [ $(( $(date +%s) - start )) -lt $(( minutes * 60 )) ]; do
  i=$((i + 1))
  timeout 300 "$bin/zkpipe-bench" loadtest k14 "$work/w14.wtns" -c "$c" -j "${SOAK_J:-100}" -p 1 \
    --json "$out/slice-$i.json" > "$out/slice-$i.txt" 2>&1 || true
  rss=$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")
  state=$(du -sm "$work/zkpipe-state" | cut -f1)
  python3 - "$out/slice-$i.json" "$(( $(date +%s) - start ))" "$rss" "$state" >> "$out/slices.tsv" <<'PY'
import json, sys
path, t, rss, state = sys.argv[1:]
try:
    d = json.load(open(path))
    l = d["job_latency_ms"]
    print(f"{t}\t{d['proofs_per_second']:.0f}\t{l['p50']:.1f}\t{l['p99']:.1f}\t{d['failed_jobs']}\t{rss}\t{state}")
except (OSError, ValueError, KeyError):
    print(f"{t}\tFAILED\t-\t-\t-\t{rss}\t{state}")
PY
  tail -1 "$out/slices.tsv"
done
kill "$pid"; wait "$pid" 2>/dev/null || true
