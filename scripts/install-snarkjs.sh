#!/usr/bin/env bash
# Installs the pinned reference client (snarkjs, circom2) and the EVM test toolchain (solc,
# @ethereumjs/vm) from tests/fixtures/package-lock.json
# into tests/fixtures/node_modules, unless it is there and up to date.
set -euo pipefail
cd "$(dirname "$0")/.."

fixtures=tests/fixtures
if [ ! -x "$fixtures/node_modules/.bin/snarkjs" ] \
   || [ ! -d "$fixtures/node_modules/solc" ] || [ ! -d "$fixtures/node_modules/@ethereumjs/vm" ] \
   || [ "$fixtures/package-lock.json" -nt "$fixtures/node_modules/.package-lock.json" ]; then
  echo "== installing snarkjs/circom2/solc/@ethereumjs (npm ci in $fixtures)"
  npm ci --prefix "$fixtures" --no-audit --no-fund --loglevel=error
fi
