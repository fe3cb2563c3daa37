#!/usr/bin/env bash
# Experiment 014 on the GPU machine: the seams redesign (issue 13) against the code before
# it, two binaries of the same build flags, interleaved in one run on one machine.
#
#   lab/exp014_seams_ab.sh OUT_DIR BIN_A BIN_B [ROUNDS=3] [LABELS="before after"]
#
# BIN_A/BIN_B are folders holding `zkpipe` and `zkpipe-bench` built by
# scripts/build-cuda.sh. Keys are made there once with BIN_A (`synth` + `setup --dev --seed 1`, BN254): 2^16 and 2^20 for the
# warm single-proof bench, 2^14 and 2^20 for the daemon. Each round runs, for A then B:
#   bench --backend cuda --trusted-key --no-verify, 2^16 and 2^20 (12 runs after 3 warm-ups)
#   zkpipe serve --backend cuda, then loadtest: 2^14 c=64 (8 jobs per client, 1 partition),
#   2^20 x 4 partitions at c=4 (8 jobs per client) and c=16 (2 jobs per client)
# Writes OUT_DIR/<label>-r<R>-{bench16,bench20}.{md,json}, <label>-r<R>-{small64,big4,big16}.{txt,json},
# serve logs, and summary.txt (one line per measurement).
set -euo pipefail
out=${1:?output dir}
bins=("${2:?bin A}" "${3:?bin B}")
rounds=${4:-3}
read -r -a labels <<< "${5:-before after}"
mkdir -p "$out"
work=$(mktemp -d)
trap 'pkill -f "zkpipe serve" 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=lib/harness.sh
. "$(dirname "$0")/lib/harness.sh"
machine_info "$out/device.txt"
dev_keys "${bins[0]}/zkpipe" 14 16 20
daemon_config 50751 9764
summary=$out/summary.txt
: > "$summary"
for r in $(seq "$rounds"); do
  for i in 0 1; do
    bin=${bins[$i]} label=${labels[$i]}
    for k in 16 20; do
      "$bin/zkpipe-bench" bench "$work/keys/k$k.zkey" "$work/w$k.wtns" --backend cuda --trusted-key --no-verify \
        --runs 12 --warmup 3 --json "$out/$label-r$r-bench$k.json" > "$out/$label-r$r-bench$k.md" 2>&1
      echo "$label r$r bench 2^$k: $(grep 'prove total' "$out/$label-r$r-bench$k.md")" | tee -a "$summary"
    done
    (cd "$work" && exec "$bin/zkpipe" serve --config zkpipe.toml --backend cuda) > "$out/$label-r$r-serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 150); do grep -q serving "$out/$label-r$r-serve.log" && break; sleep 0.2; done
    "$bin/zkpipe" preload k14 && "$bin/zkpipe" preload k20
    run() { # name key witness c jobs partitions
      "$bin/zkpipe-bench" loadtest "$2" "$work/$3" -c "$4" -j "$5" -p "$6" --json "$out/$label-r$r-$1.json" > "$out/$label-r$r-$1.txt"
      echo "$label r$r $1: $(tr '\n' ' ' < "$out/$label-r$r-$1.txt")" | tee -a "$summary"
    }
    run small64 k14 w14.wtns 64 8 1
    run big4 k20 w20.wtns 4 8 4
    run big16 k20 w20.wtns 16 2 4
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
done
