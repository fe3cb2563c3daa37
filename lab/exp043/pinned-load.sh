#!/usr/bin/env bash
# Issue 43, the pinned tier under load (lab/experiments/043c-pinned-tier.md): a daemon on
# one GPU with a 2^LOG BN254 dev key streamed under --device-limit LIMIT, preloaded, then
# `zkpipe-bench loadtest` with C clients × J jobs of P partitions, memory.pinned_limit 0
# (warm: chunks packed on every walk) against "auto" (pinned), interleaved, ROUNDS rounds.
#
#   lab/exp043/pinned-load.sh OUT BIN_DIR [LOG=22] [ROUNDS=3] [LIMIT=4GiB] [C=4] [J=3] [P=2]
#
# Per cell: OUT/LOG-rROUND-MODE.json (loadtest's summary) and the daemon's log lines.
# LOAD_TIMEOUT (seconds, default 300) bounds each loadtest.
set -euo pipefail
out=${1:?output dir}; bin=${2:?binary dir}
k=${3:-22}; rounds=${4:-3}; limit=${5:-4GiB}; c=${6:-4}; j=${7:-3}; p=${8:-2}
mkdir -p "$out"
work=${WORK:-$(mktemp -d)}; w=$work/dev$k; mkdir -p "$w/keys"
if [ ! -f "$w/keys/dev.zkey" ]; then
  /usr/bin/time -f "synth+setup 2^$k: %e s, %M KiB" bash -c \
    "'$bin/zkpipe' synth --domain '2^$k' --public 4 --seed 1 '$w/c.r1cs' '$w/c.wtns' 2>/dev/null &&
     '$bin/zkpipe' setup --dev --seed 1 '$w/c.r1cs' '$w/keys/dev.zkey' 2>/dev/null" 2>> "$out/setup.txt"
fi
for r in $(seq "$rounds"); do
  for mode in warm pinned; do
    pinned=0; [ "$mode" = pinned ] && pinned='"auto"'
    cell=$out/$k-r$r-$mode
    printf '[keys]\ndir = "%s/keys"\nchecks = "trusted"\n[memory]\ndevice_limit = "%s"\npinned_limit = %s\n' \
      "$w" "$limit" "$pinned" > "$w/zkpipe.toml"
    (cd "$w" && exec "$bin/zkpipe" serve --backend cuda --config zkpipe.toml > "$cell.serve.out" 2> "$cell.serve.log") &
    pid=$!
    for _ in $(seq 100); do grep -q serving "$cell.serve.out" 2>/dev/null && break; sleep 0.1; done
    timeout 120 "$bin/zkpipe" preload dev > "$cell.preload.txt" 2>&1 || echo "preload FAILED" >> "$cell.preload.txt"
    timeout "${LOAD_TIMEOUT:-300}" "$bin/zkpipe-bench" loadtest dev "$w/c.wtns" -c "$c" -j "$j" -p "$p" \
      --json "$cell.json" > "$cell.txt" 2>&1 || echo "loadtest FAILED rc=$?" >> "$cell.txt"
    timeout 10 "$bin/zkpipe" status >> "$cell.txt" 2>&1 || true
    kill "$pid"; wait "$pid" 2>/dev/null || true
    grep -E "key (bound|pinned)|ERROR" "$cell.serve.log" | cut -c1-300 >> "$cell.txt" || true
    rm -f "$cell.serve.log"
  done
done
