#!/usr/bin/env bash
# Experiment 042c: accepted jobs per second of the SQLite store, before and after the
# group commit, interleaved. Each argument pair is NAME=TEST_BINARY, a build of
# zkpipe-store's `suite` test binary (its #[ignore]d `throughput` timing program):
#   lab/exp042c/run.sh OUT_DIR ROUNDS before=/path/suite-old after=/path/suite-new
# Every round runs each binary once per witness size, the first binary rotating per round.
set -euo pipefail
out=$1; rounds=$2; shift 2
mkdir -p "$out"
bins=("$@")
n=${#bins[@]}
for r in $(seq 1 "$rounds"); do
  for size in 524288 1024; do
    for k in $(seq 0 $((n - 1))); do
      pair=${bins[$(((k + r) % n))]}
      name=${pair%%=*}; bin=${pair#*=}
      ZKPIPE_BENCH_CLIENTS=1,8,64 ZKPIPE_BENCH_JOBS=${JOBS:-256} ZKPIPE_BENCH_WITNESS=$size \
        "$bin" throughput --ignored --nocapture --test-threads 1 2>&1 \
        | grep -o 'cell .*' | sed "s/^/round=$r variant=$name /" | tee -a "$out/cells.txt"
    done
  done
done
python3 "$(dirname "$0")/summary.py" "$out/cells.txt" | tee "$out/summary.md"
