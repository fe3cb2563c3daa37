#!/usr/bin/env bash
# Experiment 015 on the GPU machine: what the durable job store (issue 14) costs the
# daemon, against the binary before it, interleaved in one run on one machine.
#
#   lab/exp015_durable_jobs_ab.sh OUT_DIR BIN_A BIN_B [ROUNDS=3] [LABELS="memory durable"]
#
# BIN_A/BIN_B are folders holding `zkpipe` and `zkpipe-bench` (scripts/build-cuda.sh for
# the GPU). Keys are made once with BIN_A (`synth` + `setup --dev --seed 1`, BN254) of domain 2^SMALL and
# 2^BIG (environment; defaults 14 and 20). BACKEND (default cuda) is serve's --backend.
# Each round, for A then B: `zkpipe serve` on a fresh state directory, then loadtest
#   small64: 2^SMALL, c=64, 8 jobs per client, 1 partition   (per-job cost: one fsync each)
#   big4:    2^BIG x 4 partitions, c=4, 8 jobs per client     (2^20: 128 MiB of witnesses a job)
#   big16:   2^BIG x 4 partitions, c=16, 2 jobs per client
# Writes OUT_DIR/<label>-r<R>-<name>.{txt,json}, serve logs, the state directory's size
# after each round, and summary.txt (one line per measurement).
set -euo pipefail
out=${1:?output dir}
bins=("${2:?bin A}" "${3:?bin B}")
rounds=${4:-3}
read -r -a labels <<< "${5:-memory durable}"
small=${SMALL:-14} big=${BIG:-20} backend=${BACKEND:-cuda}
mkdir -p "$out"
work=$(mktemp -d)
trap 'pkill -f "zkpipe serve" 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=lib/harness.sh
. "$(dirname "$0")/lib/harness.sh"
machine_info "$out/device.txt"
dev_keys "${bins[0]}/zkpipe" "$small" "$big"
daemon_config 50751 9764
summary=$out/summary.txt
: > "$summary"
for r in $(seq "$rounds"); do
  for i in 0 1; do
    bin=${bins[$i]} label=${labels[$i]}
    rm -rf "$work/zkpipe-state"
    (cd "$work" && exec "$bin/zkpipe" serve --config zkpipe.toml --backend "$backend") > "$out/$label-r$r-serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 150); do grep -q serving "$out/$label-r$r-serve.log" && break; sleep 0.2; done
    "$bin/zkpipe" preload "k$small" && "$bin/zkpipe" preload "k$big"
    run() { # name key witness c jobs partitions
      "$bin/zkpipe-bench" loadtest "$2" "$work/$3" -c "$4" -j "$5" -p "$6" --json "$out/$label-r$r-$1.json" > "$out/$label-r$r-$1.txt"
      echo "$label r$r $1: $(tr '\n' ' ' < "$out/$label-r$r-$1.txt")" | tee -a "$summary"
    }
    run small64 "k$small" "w$small.wtns" 64 8 1
    run big4 "k$big" "w$big.wtns" 4 8 4
    run big16 "k$big" "w$big.wtns" 16 2 4
    echo "$label r$r state dir: $(du -sh "$work/zkpipe-state" 2>/dev/null | cut -f1)" | tee -a "$summary"
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
done
