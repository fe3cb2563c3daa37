#!/usr/bin/env bash
# Setup and CPU prove time at 2^16, 2^18, 2^20 on this machine (issue 3's recorded numbers).
#
#   lab/scaling.sh OUT_PREFIX [ZKPIPE] [SIZES] (zkpipe-bench beside ZKPIPE)
#   e.g. lab/scaling.sh lab/results/devbox
#
# Workload: `zkpipe synth --domain 2^k --public 4 --seed 1` (BN254), `setup --dev --seed 1`.
# Writes OUT_PREFIX-setup.md and OUT_PREFIX-prove-2e<k>.{md,json}.
set -euo pipefail
out=${1:?output prefix}
zkpipe=${2:-target/release/zkpipe}
# The lab's binary is zkpipe-bench, beside zkpipe (cargo and scripts/build-cuda.sh build both there).
bench=$(dirname "$zkpipe")/zkpipe-bench
sizes=${3:-16 18 20}
mkdir -p "$(dirname "$out")"
{
  echo "# setup --dev scaling: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo
  echo "| domain | constraints | terms | setup s | peak RSS MiB | zkey MiB |"
  echo "|---|---:|---:|---:|---:|---:|"
} > "$out-setup.md"
for k in $sizes; do
  w=lab/work/synth$k
  mkdir -p "$w"
  "$zkpipe" synth --domain "2^$k" --public 4 --seed 1 "$w/c.r1cs" "$w/c.wtns" --force 2> "$w/synth.log"
  /usr/bin/time -v "$zkpipe" setup --dev --seed 1 "$w/c.r1cs" "$w/c.zkey" --force 2> "$w/setup.log"
  secs=$(grep -oP 'Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): \K\S+' "$w/setup.log" | awk -F: '{ s=0; for (i=1;i<=NF;i++) s=s*60+$i; print s }')
  rss=$(grep -oP 'Maximum resident set size \(kbytes\): \K\d+' "$w/setup.log")
  terms=$(grep -oP '\d+(?= terms)' "$w/synth.log")
  echo "| 2^$k | $(( (1<<k) - 5 )) | $terms | $secs | $(( rss / 1024 )) | $(( $(stat -c %s "$w/c.zkey") >> 20 )) |" >> "$out-setup.md"
  runs=5
  "$bench" bench "$w/c.zkey" "$w/c.wtns" --trusted-key --runs $runs --warmup 1 \
    --json "$out-prove-2e$k.json" --plot "$out-prove-2e$k.svg" > "$out-prove-2e$k.md"
  grep -E "prove total" "$out-prove-2e$k.md" | sed "s/^/2^$k /"
done
cat "$out-setup.md"
