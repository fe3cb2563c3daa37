#!/usr/bin/env bash
# The whole test suite: installs the pinned reference client (snarkjs, from
# tests/fixtures/package-lock.json) used for cross-verification and, when missing,
# PostgreSQL's server binaries (the fleet tests start a server of their own), then runs
# every test.
# Optimized (the `ci` profile): field arithmetic is tens of times slower unoptimized.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-snarkjs.sh
scripts/install-postgres.sh

# The checked-key cache of this run only: tests make keys from fixed seeds, and one run's
# records must not make the next run's keys load unchecked (nor land in ~/.cache).
ZKPIPE_KEY_CACHE=$(mktemp -d)
export ZKPIPE_KEY_CACHE
# Every run's output, for the total at the end.
LOG=$(mktemp)
trap 'rm -rf "$ZKPIPE_KEY_CACHE" "$LOG"' EXIT

# The `ci` profile (Cargo.toml): release arithmetic, less optimisation and no debug info
# where the tests spend little time. Examples are left to clippy (.ci/run checks every
# target); the doc tests run on their own, as the target flags leave them out. A failed
# run stops the script (as `set -e` would), after the total.
echo "== cargo test --profile ci --workspace"
status=0
cargo test --profile ci --workspace --locked --lib --bins --tests 2>&1 | tee -a "$LOG" || status=$?
if [ "$status" -eq 0 ]; then
    cargo test --profile ci --workspace --locked --doc 2>&1 | tee -a "$LOG" || status=$?
fi

# The last line: every `test result:` line summed (the runs end on the doc tests' block,
# often "0 passed", which says nothing about the whole).
awk '/^test result:/ {
        for (i = 2; i <= NF; i++) {
            if ($i ~ /^passed;?$/) passed += $(i - 1)
            if ($i ~ /^failed;?$/) failed += $(i - 1)
        }
    }
    END { printf "%d passed, %d failed\n", passed, failed }' "$LOG"
exit "$status"
