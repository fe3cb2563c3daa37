#!/usr/bin/env bash
# Issue 43, the pinned tier on a GPU machine (lab/experiments/043c-pinned-tier.md):
#
#   lab/exp043/pinned.sh OUT BIN_DIR [LOGS="22"] [ROUNDS=3] [LIMIT=4GiB] [BATCHES="1 2"]
#
# For each 2^LOG BN254 dev key (made here with synth + setup --dev unless WORK holds it),
# `zkpipe-bench bench` in three modes, interleaved, ROUNDS rounds of 1 warm-up + 3 runs:
#   in-core   no device limit;
#   streamed  --device-limit LIMIT, chunks packed into staging buffers on every walk (warm);
#   pinned    the same, and --pin: the key's points packed once into pinned memory first.
# The bench lines go to OUT/pinned-LOG.txt. BIN_DIR holds scripts/build-cuda.sh's
# zkpipe and zkpipe-bench.
set -euo pipefail
out=${1:?output dir}; bin=${2:?binary dir}
logs=${3:-22}; rounds=${4:-3}; limit=${5:-4GiB}; batches=${6:-1 2}
mkdir -p "$out"
work=${WORK:-$(mktemp -d)}; mkdir -p "$work"
for k in $logs; do
  w=$work/dev$k; mkdir -p "$w"; log=$out/pinned-$k.txt
  if [ ! -f "$w/c.zkey" ]; then
    /usr/bin/time -f "synth+setup 2^$k: %e s, %M KiB" bash -c \
      "'$bin/zkpipe' synth --domain '2^$k' --public 4 --seed 1 '$w/c.r1cs' '$w/c.wtns' 2>/dev/null &&
       '$bin/zkpipe' setup --dev --seed 1 '$w/c.r1cs' '$w/c.zkey' 2>/dev/null" 2>> "$log"
  fi
  for r in $(seq "$rounds"); do
    for mode in in-core streamed pinned; do
      for batch in $batches; do
        flags=(--trusted-key --backend cuda --runs 3 --warmup 1 --batch "$batch")
        [ "$mode" != in-core ] && flags+=(--device-limit "$limit")
        [ "$mode" = pinned ] && flags+=(--pin)
        echo "== 2^$k round $r $mode batch $batch" >> "$log"
        timeout 300 "$bin/zkpipe-bench" bench "${flags[@]}" "$w/c.zkey" "$w/c.wtns" \
          >> "$log" 2>&1 || echo "FAILED rc=$?" >> "$log"
      done
    done
  done
done
