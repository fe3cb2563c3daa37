#!/usr/bin/env bash
# The whole test suite: installs the pinned reference client (snarkjs, from
# tests/fixtures/package-lock.json) used for cross-verification, then runs every test.
# Release mode: field arithmetic is tens of times slower unoptimized.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-snarkjs.sh

echo "== cargo test --release --workspace"
cargo test --release --workspace --locked
