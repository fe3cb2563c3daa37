#!/usr/bin/env bash
# Issue 5's measurements on the GPU machine: the daemon with its device stage on the GPUs.
#
#   lab/engine_gpu.sh OUT_DIR [BIN_DIR=target/cuda/release] [CLIENTS_BIG="1 4 16"] [CLIENTS_SMALL="1 16 64"] [REPEATS=3]
#
# Workloads (made there): a 2^20-constraint BN254 dev key with 4-partition jobs, and a
# 2^14 one with 1-partition jobs; `zkpipe-bench loadtest` against `zkpipe serve --backend cuda`
# (every visible GPU; CUDA_VISIBLE_DEVICES picks). An empty CLIENTS list skips a workload.
# Each configuration runs REPEATS times, interleaved (round r runs every c once).
# Writes OUT_DIR/{big,small}-c<C>-r<R>.{txt,json}, a trace of round 1 of each 2^20 run with
# c >= 4 (big-c<C>.trace.json), serve.log, status.txt, and gpu-memory.csv (nvidia-smi
# samples of every GPU's used memory, 5 per second, the driver's view). ENGINE_TOML, if
# set, is appended to the daemon's config (e.g. per-stage threads).
set -euo pipefail
out=${1:?output dir}
bin=${2:-target/cuda/release}
big=${3-1 4 16}
small=${4-1 16 64}
repeats=${5:-3}
mkdir -p "$out"
work=$(mktemp -d)
# shellcheck source=lib/harness.sh
. "$(dirname "$0")/lib/harness.sh"
keys=(); [ -n "$big" ] && keys+=(20); [ -n "$small" ] && keys+=(14)
dev_keys "$bin/zkpipe" "${keys[@]}"
daemon_config 50651 9664 "${ENGINE_TOML:-}"
"$bin/zkpipe" serve --config "$work/zkpipe.toml" --backend cuda > "$out/serve.log" 2>&1 &
pid=$!
nvidia-smi --query-gpu=timestamp,index,memory.used --format=csv,noheader -lms 200 > "$out/gpu-memory.csv" 2>/dev/null &
smi=$!
trap 'kill $pid $smi 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q serving "$out/serve.log" && break; sleep 0.2; done
for k in "${keys[@]}"; do "$bin/zkpipe" preload "k$k"; done
for r in $(seq "$repeats"); do
  for c in $big; do
    jobs=$(( c >= 16 ? 2 : 8 ))
    trace=(); [ "$r" = 1 ] && [ "$c" -ge 4 ] && trace=(--trace "$out/big-c$c.trace.json")
    "$bin/zkpipe-bench" loadtest k20 "$work/w20.wtns" -c "$c" -j "$jobs" -p 4 --json "$out/big-c$c-r$r.json" "${trace[@]}" > "$out/big-c$c-r$r.txt"
    echo "2^20 x4 partitions, c=$c, round $r:"; cat "$out/big-c$c-r$r.txt"
  done
  for c in $small; do
    jobs=$(( c >= 64 ? 8 : (c >= 16 ? 16 : 64) ))
    "$bin/zkpipe-bench" loadtest k14 "$work/w14.wtns" -c "$c" -j "$jobs" -p 1 --json "$out/small-c$c-r$r.json" > "$out/small-c$c-r$r.txt"
    echo "2^14, c=$c, round $r:"; cat "$out/small-c$c-r$r.txt"
  done
done
"$bin/zkpipe" status > "$out/status.txt" || true
