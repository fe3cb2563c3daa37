#!/usr/bin/env bash
# The main job: build zkpipe, prove the bundled example circuits (Poseidon, BN254 and
# BLS12-381), and verify each proof with zkpipe and with snarkjs (installed from the
# lockfile where npm is available).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked --bin zkpipe
if command -v npm > /dev/null; then
  scripts/install-snarkjs.sh
fi
zkpipe=target/release/zkpipe
snarkjs=tests/fixtures/node_modules/.bin/snarkjs
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for curve in bn254 bls12-381; do
  dir=tests/fixtures/$curve/poseidon
  echo "== $curve: prove $dir"
  "$zkpipe" prove "$dir/circuit.zkey" "$dir/witness.wtns" "$out/proof.json" "$out/public.json" --timings
  echo "== $curve: zkpipe verify"
  "$zkpipe" verify "$dir/verification_key.json" "$out/public.json" "$out/proof.json"
  if [ -x "$snarkjs" ]; then
    echo "== $curve: snarkjs groth16 verify"
    "$snarkjs" groth16 verify "$dir/verification_key.json" "$out/public.json" "$out/proof.json"
  else
    echo "(snarkjs not installed: no npm on this machine; skipping the snarkjs check)"
  fi
done
echo "== all proofs verified"
