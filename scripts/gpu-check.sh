#!/usr/bin/env bash
# Issue 4's acceptance check, run on the GPU machine with the binaries that
# scripts/build-cuda.sh built (copy them there; the machine needs no Rust):
#
#   scripts/gpu-check.sh OUT_DIR [BIN_DIR=target/cuda/release] [SIZES="16 20 22"] [MAX_LOG=22]
#
# 1. zkpipe-gpu-check: G1 and G2 MSMs, the batched MSM, the quotient NTTs and the GPU
#    reduce against the CPU, bit for bit, on random inputs of 2^10..2^MAX_LOG with edge
#    cases, then their timings; and dev keys bound through CudaDevices (CudaBound) against
#    the CPU's CpuBound, verb by verb and pass by pass, with proofs self-checked.
# 2. Every bundled fixture proved with --backend cuda, and the proof verified by
#    `zkpipe verify` against snarkjs's own verification_key.json.
# 3. Dev keys (synth + setup --dev) of 2^SIZE constraints: proved on the GPU, verified
#    against the exported verification key.
# Writes OUT_DIR/{gpu-check,fixtures,devkeys}.txt; exits non-zero on any failure.
set -euo pipefail
out=${1:?output dir}
bin=${2:-target/cuda/release}
sizes=${3:-16 20 22}
max_log=${4:-22}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/device.txt" || true
echo "== 1. kernels against the CPU"
"$bin/zkpipe-gpu-check" "$max_log" 7 24 | tee "$out/gpu-check.txt" || fail=1

echo "== 2. fixtures"
: > "$out/fixtures.txt"
for dir in tests/fixtures/*/*/; do
  [ -f "$dir/circuit.zkey" ] || continue
  name=${dir#tests/fixtures/}; name=${name%/}
  if "$bin/zkpipe" prove --backend cuda --timings "$dir/circuit.zkey" "$dir/witness.wtns" \
       "$work/proof.json" "$work/public.json" 2> "$work/log" &&
     "$bin/zkpipe" verify "$dir/verification_key.json" "$work/public.json" "$work/proof.json" >> "$work/log" 2>&1; then
    echo "$name: proved on the GPU, verified with snarkjs's vk: OK" | tee -a "$out/fixtures.txt"
  else
    echo "$name: FAILED: $(tail -1 "$work/log")" | tee -a "$out/fixtures.txt"; fail=1
  fi
done

echo "== 3. dev keys"
: > "$out/devkeys.txt"
for k in $sizes; do
  w=$work/dev$k; mkdir -p "$w"
  "$bin/zkpipe" synth --domain "2^$k" --public 4 --seed 1 "$w/c.r1cs" "$w/c.wtns" 2>/dev/null
  "$bin/zkpipe" setup --dev --seed 1 "$w/c.r1cs" "$w/c.zkey" 2>/dev/null
  "$bin/zkpipe" export-vk "$w/c.zkey" "$w/vk.json"
  if "$bin/zkpipe" prove --backend cuda --trusted-key --timings "$w/c.zkey" "$w/c.wtns" \
       "$w/proof.json" "$w/public.json" 2> "$w/log" &&
     "$bin/zkpipe" verify "$w/vk.json" "$w/public.json" "$w/proof.json" >> "$w/log" 2>&1; then
    echo "dev key 2^$k (BN254): proved on the GPU, verified: OK" | tee -a "$out/devkeys.txt"
    sed 's/^/    /' "$w/log" >> "$out/devkeys.txt"
  else
    echo "dev key 2^$k: FAILED: $(tail -1 "$w/log")" | tee -a "$out/devkeys.txt"; fail=1
  fi
  rm -f "$w/c.zkey"
done
if [ $fail = 0 ]; then echo "GPU CHECK: ALL OK" | tee "$out/verdict.txt"; else echo "GPU CHECK: FAILURES" | tee "$out/verdict.txt"; fi
exit $fail
