#!/usr/bin/env bash
# Experiment 001: reduce-stage row scheduling (static ranges vs claimed chunks).
#
#   lab/exp001_chunking.sh THREADS OUT_PREFIX [ZKPIPE] (zkpipe-bench beside it)
#   e.g. lab/exp001_chunking.sh 1,2 lab/results/exp001-devbox
#        lab/exp001_chunking.sh 4,8,16 "$OUT/exp001-gpuhost" .carry/zkpipe   (GPU machine)
#
# Workload: `zkpipe synth --domain 2^20` (inhomogeneous rows, BN254), key from setup --dev.
# Writes OUT_PREFIX.md (tables, verdicts) and OUT_PREFIX.json (every run).
set -euo pipefail
threads=${1:?threads list, e.g. 1,2}
out=${2:?output prefix}
zkpipe=${3:-target/release/zkpipe}
# The lab's binary is zkpipe-bench, beside zkpipe (cargo and scripts/build-cuda.sh build both there).
bench=$(dirname "$zkpipe")/zkpipe-bench
work=${WORK:-lab/work/synth20}
mkdir -p "$work" "$(dirname "$out")"
if [ ! -f "$work/c.zkey" ]; then
  "$zkpipe" synth --domain '2^20' --public 4 --seed 1 "$work/c.r1cs" "$work/c.wtns" --force
  "$zkpipe" setup --dev --seed 1 "$work/c.r1cs" "$work/c.zkey" --force
fi
{
  echo "# experiment 001 raw output: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo
  echo "command: \`$bench bench $work/c.zkey $work/c.wtns --trusted-key --only reduce --threads $threads --runs 9 --warmup 2 --compare static dynamic:4 dynamic:16 dynamic:64 dynamic:256 stealing:64\`"
  echo
  "$bench" bench "$work/c.zkey" "$work/c.wtns" --trusted-key --only reduce --threads "$threads" \
    --runs 9 --warmup 2 --compare static dynamic:4 dynamic:16 dynamic:64 dynamic:256 stealing:64 \
    --json "$out.json"
} > "$out.md"
sed -n '/^## summary/,$p' "$out.md"
