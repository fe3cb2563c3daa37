#!/usr/bin/env bash
# Compile a ~60k-constraint (Groth16 domain 2^16) benchmark circuit and compute its witness.
#
#   [CIRCUIT=name] [INPUT=file.json] bash lab/circuits/build.sh [bn128|bls12381] [OUT_DIR]
#
# CIRCUIT picks lab/circuits/<name>.circom (default poseidon_chain_64k):
#   poseidon_chain_64k   Poseidon(2) hash chain, 60,000 constraints, witness of full-size field elements
#   sha256_512           circomlib Sha256(512), two compression blocks, witness mostly 0s and 1s
# INPUT defaults to lab/circuits/<name>.input.json when that exists, else to
# lab/circuits/input.json (the Poseidon chains' shared input).
# CURVE defaults to bn128; OUT_DIR defaults to lab/work/<curve>/ for the default circuit (as
# before this script took CIRCUIT) and to lab/work/<name>/<curve>/ for any other (git-ignored),
# so building one circuit never overwrites another's files.
# Writes OUT_DIR/circuit.r1cs and OUT_DIR/witness.wtns (plus r1cs-info.txt).
# No trusted setup is run: the proving key is made by zkpipe's own dev setup.
#
# Uses the pinned toolchain in tests/fixtures/node_modules (npm ci there if missing).
set -euo pipefail

DEFAULT_CIRCUIT=poseidon_chain_64k
CIRCUIT="${CIRCUIT:-$DEFAULT_CIRCUIT}"
CURVE="${1:-bn128}"
usage() {
    echo "usage: [CIRCUIT=name] [INPUT=file.json] $0 [bn128|bls12381] [OUT_DIR]" >&2
    echo "       name: lab/circuits/<name>.circom with a main component (poseidon_chain_64k, sha256_512, ...)" >&2
    exit 2
}
case "$CURVE" in
    bn128 | bls12381) ;;
    *) usage ;;
esac
# A bare name: circom2 (WASI) only sees plain relative paths under the repo root, see below.
[[ "$CIRCUIT" =~ ^[A-Za-z0-9_]+$ ]] || usage

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
[[ -f "$HERE/$CIRCUIT.circom" ]] || { echo "no lab/circuits/$CIRCUIT.circom" >&2; usage; }

# Resolve OUT_DIR relative to the caller's cwd before we cd anywhere.
if [[ $# -ge 2 ]]; then
    mkdir -p "$2"
    OUT="$(cd "$2" && pwd)"
else
    if [[ "$CIRCUIT" == "$DEFAULT_CIRCUIT" ]]; then
        OUT="$ROOT/lab/work/$CURVE"
    else
        OUT="$ROOT/lab/work/$CIRCUIT/$CURVE"
    fi
    mkdir -p "$OUT"
fi
# INPUT may be given relative to the caller's cwd too; it is only read by snarkjs (plain node),
# so an absolute path is fine.
if [[ -n "${INPUT:-}" ]]; then
    [[ -f "$INPUT" ]] || { echo "no input file $INPUT" >&2; exit 2; }
    INPUT="$(cd "$(dirname "$INPUT")" && pwd)/$(basename "$INPUT")"
fi

# circom2 is a WASI build: run it from the repo root with plain relative paths
# (no "..", no absolute paths), compiling into a git-ignored build dir.
cd "$ROOT"
FIX=tests/fixtures
if [[ -z "${INPUT:-}" ]]; then
    INPUT=lab/circuits/input.json
    [[ ! -f "lab/circuits/$CIRCUIT.input.json" ]] || INPUT="lab/circuits/$CIRCUIT.input.json"
fi
# One build dir per circuit and curve (the default circuit keeps its old one).
if [[ "$CIRCUIT" == "$DEFAULT_CIRCUIT" ]]; then
    BUILD="lab/work/.build/$CURVE"
else
    BUILD="lab/work/.build/$CIRCUIT-$CURVE"
fi

deps_ok() {
    (cd "$FIX" && node -e '
        const want = require("./package.json").dependencies;
        for (const [name, ver] of Object.entries(want)) {
            let got;
            try { got = require(`./node_modules/${name}/package.json`).version; } catch (e) { process.exit(1); }
            if (got !== ver) process.exit(1);
        }' 2>/dev/null)
}
if ! deps_ok; then
    echo "== npm ci in $FIX"
    (cd "$FIX" && npm ci --no-audit --no-fund)
fi

SNARKJS=(node "$FIX/node_modules/snarkjs/build/cli.cjs")
CIRCOM=(node "$FIX/node_modules/circom2/cli.js")

timed() {
    local label="$1"
    shift
    local t0=$SECONDS
    "$@"
    echo "   ($label: $((SECONDS - t0))s)"
}

rm -rf "$BUILD"
mkdir -p "$BUILD"

echo "== compile $CIRCUIT.circom (prime $CURVE)"
timed compile "${CIRCOM[@]}" "lab/circuits/$CIRCUIT.circom" --r1cs --wasm --O2 --prime "$CURVE" \
    -o "$BUILD" -l "$FIX/node_modules"

echo "== witness (input $INPUT)"
timed "wtns calculate" "${SNARKJS[@]}" wtns calculate "$BUILD/${CIRCUIT}_js/$CIRCUIT.wasm" \
    "$INPUT" "$BUILD/witness.wtns"
if [[ "${SKIP_CHECK:-0}" != 1 ]]; then
    # snarkjs colours its log lines even when not on a tty: strip ANSI codes.
    t0=$SECONDS
    "${SNARKJS[@]}" wtns check "$BUILD/$CIRCUIT.r1cs" "$BUILD/witness.wtns" \
        >"$BUILD/wtns-check.log" 2>&1 || { cat "$BUILD/wtns-check.log" >&2; exit 1; }
    echo "   (wtns check: $((SECONDS - t0))s)"
    grep -q 'WITNESS IS CORRECT' "$BUILD/wtns-check.log" || { cat "$BUILD/wtns-check.log" >&2; exit 1; }
    echo "   witness satisfies all constraints (snarkjs wtns check; SKIP_CHECK=1 to skip)"
fi

cp "$BUILD/$CIRCUIT.r1cs" "$OUT/circuit.r1cs"
cp "$BUILD/witness.wtns" "$OUT/witness.wtns"
"${SNARKJS[@]}" r1cs info "$OUT/circuit.r1cs" 2>&1 | sed 's/\x1b\[[0-9;]*m//g; s/^.*snarkJS: //' >"$OUT/r1cs-info.txt"
cat "$OUT/r1cs-info.txt"
echo "== wrote $OUT/circuit.r1cs and $OUT/witness.wtns"
