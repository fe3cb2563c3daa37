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
#    `zkpipe verify` against snarkjs's own verification_key.json; then again streamed
#    (--device-limit 20MiB: the key's points stay in host memory and cross in chunks).
# 3. Dev keys (synth + setup --dev) of 2^SIZE constraints: proved on the GPU, verified
#    against the exported verification key; then streamed under a device limit that
#    leaves room for a few chunks (2^16: 44MiB, 2^20: 512MiB, 2^22: 2GiB).
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

# prove_verify NAME ZKEY WTNS VK RESIDENCY [prove flags...]: proves on the GPU, checks that
# --timings names the residency asked for (in-core or streamed), verifies with VK.
prove_verify() {
  local name=$1 zkey=$2 wtns=$3 vk=$4 want=$5; shift 5
  if "$bin/zkpipe" prove --backend cuda --timings "$@" "$zkey" "$wtns" \
       "$work/proof.json" "$work/public.json" 2> "$work/log" &&
     grep -q "residency *$want" "$work/log" &&
     "$bin/zkpipe" verify "$vk" "$work/public.json" "$work/proof.json" >> "$work/log" 2>&1; then
    echo "$name: proved on the GPU ($want), verified: OK"
  else
    echo "$name: FAILED ($want): $(tail -1 "$work/log")"; return 1
  fi
}

echo "== 2. fixtures"
: > "$out/fixtures.txt"
for dir in tests/fixtures/*/*/; do
  [ -f "$dir/circuit.zkey" ] || continue
  name=${dir#tests/fixtures/}; name=${name%/}
  for mode in in-core streamed; do
    flags=(); [ $mode = streamed ] && flags=(--device-limit 20MiB)
    prove_verify "$name" "$dir/circuit.zkey" "$dir/witness.wtns" "$dir/verification_key.json" \
      $mode "${flags[@]}" | tee -a "$out/fixtures.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || fail=1
  done
done

echo "== 3. dev keys"
: > "$out/devkeys.txt"
for k in $sizes; do
  w=$work/dev$k; mkdir -p "$w"
  "$bin/zkpipe" synth --domain "2^$k" --public 4 --seed 1 "$w/c.r1cs" "$w/c.wtns" 2>/dev/null
  "$bin/zkpipe" setup --dev --seed 1 "$w/c.r1cs" "$w/c.zkey" 2>/dev/null
  "$bin/zkpipe" export-vk "$w/c.zkey" "$w/vk.json"
  case $k in 16) limit=44MiB ;; 20) limit=512MiB ;; *) limit=2GiB ;; esac
  for mode in in-core streamed; do
    flags=(--trusted-key); [ $mode = streamed ] && flags+=(--device-limit $limit)
    prove_verify "dev key 2^$k (BN254)" "$w/c.zkey" "$w/c.wtns" "$w/vk.json" $mode \
      "${flags[@]}" | tee -a "$out/devkeys.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || fail=1
    sed 's/^/    /' "$work/log" >> "$out/devkeys.txt"
  done
  rm -f "$w/c.zkey"
done
if [ $fail = 0 ]; then echo "GPU CHECK: ALL OK" | tee "$out/verdict.txt"; else echo "GPU CHECK: FAILURES" | tee "$out/verdict.txt"; fi
exit $fail
