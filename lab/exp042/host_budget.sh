#!/usr/bin/env bash
# Issue 42's per-proof host budget: where a proof's CPU time goes in the daemon, by thread
# group, and its wall time by step (the waterfall), for one or two binaries in turn.
#
#   lab/exp042/host_budget.sh OUT_DIR BIN [BIN_B] [LABELS="before after"]
#
# BIN(s): folders holding `zkpipe` and `zkpipe-bench`. One GPU (CUDA_VISIBLE_DEVICES=0;
# BACKEND=cpu for a dry run). Keys as in scaling.sh (2^14; BIG=1 adds the 2^22 key).
# Per binary and workload: a fresh daemon, the keys preloaded, per-thread CPU time
# snapshotted (thread_cpu.py) around `zkpipe-bench loadtest --trace`:
#   small: 2^14, 1 partition, SMALL_C (64) clients x SMALL_J (40) jobs
#   big:   2^22, 10 partitions, BIG_C (16) clients x 2 jobs
# Writes OUT_DIR/<label>-<cell>.{txt,json,trace.json,cpu.md} and the serve logs.
set -euo pipefail
out=${1:?output dir}
bins=("$(realpath "${2:?bin}")"); [ -n "${3:-}" ] && bins+=("$(realpath "$3")")
read -r -a labels <<< "${4:-before after}"
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
work=$(mktemp -d)
trap 'pkill -f "zkpipe serve" 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
machine_info "$out/device.txt"
sizes=(14); [ "${BIG:-0}" = 1 ] && sizes+=(22)
log "dev keys ${sizes[*]}"
dev_keys "${bins[0]}/zkpipe" "${sizes[@]}"
daemon_config 50951 9964
cell() { # label bin name key wtns clients jobs partitions
  local label=$1 bin=$2 name=$3 key=$4 wtns=$5 c=$6 j=$7 p=$8
  local tag=$label-$name
  rm -rf "$work/zkpipe-state"
  (cd "$work" && CUDA_VISIBLE_DEVICES=0 exec "$bin/zkpipe" serve --config zkpipe.toml --backend "${BACKEND:-cuda}") \
    > "$out/$tag-serve.log" 2>&1 &
  local pid=$!
  for _ in $(seq 300); do grep -q serving "$out/$tag-serve.log" && break; sleep 0.2; done
  "$bin/zkpipe" preload "$key" > /dev/null
  # One unmeasured round: pools, buffers and the key's device copy are warm after it.
  "$bin/zkpipe-bench" loadtest "$key" "$wtns" -c "$c" -j 1 -p "$p" > /dev/null 2>&1
  python3 "$here/thread_cpu.py" snapshot "$pid" > "$work/before.json"
  local t0; t0=$(date +%s.%N)
  timeout 300 "$bin/zkpipe-bench" loadtest "$key" "$wtns" -c "$c" -j "$j" -p "$p" \
    --json "$out/$tag.json" --trace "$out/$tag.trace.json" > "$out/$tag.txt" 2>&1
  local wall; wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
  python3 "$here/thread_cpu.py" snapshot "$pid" > "$work/after.json"
  python3 "$here/thread_cpu.py" diff "$work/before.json" "$work/after.json" $((c * j * p)) "$wall" > "$out/$tag.cpu.md"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  log "$tag: $(grep -m1 'proofs/s' "$out/$tag.txt" || head -1 "$out/$tag.txt")"
}
for i in "${!bins[@]}"; do
  cell "${labels[$i]}" "${bins[$i]}" small k14 "$work/w14.wtns" "${SMALL_C:-64}" "${SMALL_J:-40}" 1
  [ "${BIG:-0}" = 1 ] && cell "${labels[$i]}" "${bins[$i]}" big k22 "$work/w22.wtns" "${BIG_C:-16}" 2 10
done
