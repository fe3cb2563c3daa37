#!/usr/bin/env bash
# The whole test suite: installs the pinned reference client (snarkjs, from
# tests/fixtures/package-lock.json) used for cross-verification, then runs every test.
# Release mode: field arithmetic is tens of times slower unoptimized.
set -euo pipefail
cd "$(dirname "$0")/.."

fixtures=tests/fixtures
if [ ! -x "$fixtures/node_modules/.bin/snarkjs" ] \
   || [ "$fixtures/package-lock.json" -nt "$fixtures/node_modules/.package-lock.json" ]; then
  echo "== installing snarkjs/circom2 (npm ci in $fixtures)"
  npm ci --prefix "$fixtures" --no-audit --no-fund --loglevel=error
fi

echo "== cargo test --release --workspace"
cargo test --release --workspace --locked
