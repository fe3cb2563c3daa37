#!/usr/bin/env bash
# Issue 42 item 2 on the GPU machine: accepting big streamed jobs and the daemon's memory,
# two binaries interleaved, one GPU (lab/experiments/042f-staged-witnesses.md).
#
#   lab/exp042/staged.sh OUT_DIR BIN_A BIN_B [ROUNDS=2] [LABELS="before after"]
#
# BIN_A/BIN_B are folders holding `zkpipe` and `zkpipe-bench`. A 2^22 BN254 dev key and
# its 128 MiB witness are made once with BIN_A (WORK=DIR keeps them for the next call).
# Each cell: a fresh state directory, `zkpipe serve --backend cuda` (trusted keys, default
# config otherwise), k22 preloaded, the daemon's VmRSS/RssAnon/RssFile sampled every
# 0.2 s, then (K, BACKEND: another key size or backend, to try the script on a small key)
#   one: ONE_JOBS (default 3) jobs of 10 × 128 MiB (1.28 GB), one at a time, each timed
#        from the start of `zkpipe submit --stream always` to its job id (on loopback);
#   load: `zkpipe-bench loadtest` of C clients (default 16) × 2 jobs of 10 partitions.
# Writes OUT_DIR/<label>-r<R>-{one,load}.txt, the RSS samples (<label>-r<R>.rss: ms, VmRSS,
# RssAnon, RssFile in kB), serve logs, and summary.txt (one line per cell).
set -euo pipefail
out=${1:?output dir}
bins=("$(realpath "${2:?bin A}")" "$(realpath "${3:?bin B}")")
rounds=${4:-2}
read -r -a labels <<< "${5:-before after}"
mkdir -p "$out"
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
work_dir
machine_info "$out/device.txt"
log "dev key 2^${K:-22}"
k=${K:-22}
dev_keys "${bins[0]}/zkpipe" "$k"
witnesses=(); for _ in $(seq 10); do witnesses+=("$work/w$k.wtns"); done
summary=$out/summary.txt
: > "$summary"
for r in $(seq "$rounds"); do
  for i in 0 1; do
    bin=${bins[$i]} cell=${labels[$i]}-r$r
    rm -rf "$work/zkpipe-state"
    daemon_config 50861 9874
    export ZKPIPE_SERVER=http://127.0.0.1:50861
    (cd "$work" && exec "$bin/zkpipe" serve --config zkpipe.toml --backend "${BACKEND:-cuda}") > "$out/$cell-serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do grep -q serving "$out/$cell-serve.log" && break; sleep 0.2; done
    "$bin/zkpipe" preload "k$k" > /dev/null
    ( t0=$(date +%s%3N)
      while kill -0 "$pid" 2>/dev/null; do
        awk -v t=$(( $(date +%s%3N) - t0 )) '/VmRSS/{r=$2} /RssAnon/{a=$2} /RssFile/{f=$2} END{print t, r, a, f}' \
          "/proc/$pid/status" 2>/dev/null || true
        sleep 0.2
      done ) > "$out/$cell.rss" &
    sampler=$!
    : > "$out/$cell-one.txt"
    for j in $(seq "${ONE_JOBS:-3}"); do
      t0=$(date +%s%N)
      id=$("$bin/zkpipe" submit "k$k" "${witnesses[@]}" --stream always)
      ms=$(( ($(date +%s%N) - t0) / 1000000 ))
      echo "job $id accepted in $ms ms" >> "$out/$cell-one.txt"
      "$bin/zkpipe" await "$id" --out "$work/proofs" > /dev/null 2>&1; rm -rf "$work/proofs"
    done
    timeout 400 "$bin/zkpipe-bench" loadtest "k$k" "$work/w$k.wtns" -c "${C:-16}" -j 2 -p 10 \
      --stream always --json "$out/$cell-load.json" > "$out/$cell-load.txt" 2>&1 || echo "$cell load: FAILED" >> "$summary"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    peak=$(sort -n -k2 "$out/$cell.rss" | tail -1)
    anon=$(sort -n -k3 "$out/$cell.rss" | tail -1)
    echo "$cell: one-job accepts [$(grep -o '[0-9]* ms' "$out/$cell-one.txt" | tr '\n' ' ')] | load: $(head -1 "$out/$cell-load.txt"); $(sed -n 3p "$out/$cell-load.txt") | peak VmRSS (t rss anon file kB): $peak | peak anon: $anon" | tee -a "$summary"
  done
done
