#!/usr/bin/env bash
# Issue 4's proof benchmarks on the GPU machine: one BN254 proof with the key resident,
# per stage, on the GPU and on the CPU backend (all cores), for dev keys of 2^k constraints.
#
#   lab/gpu.sh OUT_PREFIX [BIN_DIR=target/cuda/release] [SIZES="16 20 22"]
#
# Workload: `zkpipe synth --domain 2^k --public 4 --seed 1`, `setup --dev --seed 1`
# (made there, not copied). GPU: 7 runs after 2 warm-ups; CPU: 5 runs after 1.
# Writes OUT_PREFIX-{cuda,cpu}-2e<k>.{md,json}. GPU runs for every size come first.
set -euo pipefail
out=${1:?output prefix}
bin=${2:-target/cuda/release}
sizes=${3:-16 20 22}
mkdir -p "$(dirname "$out")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out-device.txt"
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >> "$out-device.txt"
for k in $sizes; do
  "$bin/zkpipe" synth --domain "2^$k" --public 4 --seed 1 "$work/c$k.r1cs" "$work/c$k.wtns" 2>/dev/null
  "$bin/zkpipe" setup --dev --seed 1 "$work/c$k.r1cs" "$work/c$k.zkey" 2>/dev/null
  "$bin/zkpipe-bench" bench "$work/c$k.zkey" "$work/c$k.wtns" --backend cuda --trusted-key \
    --runs 7 --warmup 2 --json "$out-cuda-2e$k.json" > "$out-cuda-2e$k.md"
  grep "prove total" "$out-cuda-2e$k.md" | sed "s/^/cuda 2^$k /"
done
for k in $sizes; do
  "$bin/zkpipe-bench" bench "$work/c$k.zkey" "$work/c$k.wtns" --backend cpu --trusted-key \
    --runs 5 --warmup 1 --json "$out-cpu-2e$k.json" > "$out-cpu-2e$k.md"
  grep "prove total" "$out-cpu-2e$k.md" | sed "s/^/cpu 2^$k /"
done
