#!/usr/bin/env bash
# Build the witness-synthesis benchmark circuits of experiment 016 (issue 15).
#
#   bash lab/circuits/build_witness_bench.sh [SIZE ...]      SIZE in 14 16 20 (default: all three)
#
# For each size k writes lab/work/witness/2e<k>/ (git-ignored):
#   circuit.r1cs  circuit.wasm             circom 2.2.3 (circom2 WASI build), --O2, bn128
#   circuit  circuit.dat                   circom's native generator (--c), linked -static so it
#                                          can be carried to another machine (needs circuit.dat beside it)
#   input.json  witness.wtns               snarkjs 0.7.6 `wtns calculate` (the reference witness)
#   graph.bin                              iden3 circom-witnesscalc graph, only if BUILD_CIRCUIT
#                                          points at a build-circuit binary (see lab/experiments/016)
#   build.txt                              compile times and sizes (key=value lines)
# and appends one line per size to lab/work/witness/build.csv.
#
# Environment: XZ=1 also records `xz -9` sizes of r1cs+wasm+native(+dat) (slow at 2^20);
# SKIP_CHECK=1 skips `snarkjs wtns check`; BUILD_CIRCUIT=/path/to/build-circuit;
# CIRCOM_BIN=/path/to/native/circom instead of circom2 (WASI).
# Installs g++ nasm libgmp-dev nlohmann-json3-dev with apt-get when missing and root.
set -euo pipefail

SIZES=("$@")
[[ ${#SIZES[@]} -gt 0 ]] || SIZES=(14 16 20)

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"
bash scripts/install-snarkjs.sh

# Native-generator toolchain.
missing=()
command -v g++ >/dev/null || missing+=(g++)
command -v nasm >/dev/null || missing+=(nasm)
[[ -e /usr/include/gmp.h || -n "$(ls /usr/include/*/gmp.h 2>/dev/null)" ]] || missing+=(libgmp-dev)
[[ -e /usr/include/nlohmann/json.hpp ]] || missing+=(nlohmann-json3-dev)
if [[ ${#missing[@]} -gt 0 ]]; then
    if [[ $(id -u) == 0 ]]; then
        echo "== apt-get install ${missing[*]}"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    else
        echo "missing packages: ${missing[*]} (run as root or install them)" >&2
        exit 1
    fi
fi

# circom2 is a WASI build: run it from the repo root with plain relative paths.
FIX=tests/fixtures
SNARKJS=(node "$FIX/node_modules/snarkjs/build/cli.cjs")
CIRCOM=(node "$FIX/node_modules/circom2/cli.js")
# CIRCOM_BIN: a native circom 2.2.3 (cargo build of iden3/circom v2.2.3) for 2^20, which the
# WASI build cannot compile (it runs out of its 4 GiB wasm32 memory).
[[ -z "${CIRCOM_BIN:-}" ]] || CIRCOM=("$CIRCOM_BIN")
WORK=lab/work/witness
mkdir -p "$WORK"
CSV="$WORK/build.csv"
[[ -s "$CSV" ]] || echo "size,constraints,compile_s,native_build_s,snarkjs_wtns_s,graph_build_s,r1cs_bytes,wasm_bytes,native_bytes,dat_bytes,graph_bytes,xz_r1cs_wasm_native_bytes,nproc,loadavg" >"$CSV"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
fsize() { if [[ -e "$1" ]]; then stat -c %s "$1"; else echo NA; fi; }

for k in "${SIZES[@]}"; do
    NAME="poseidon_chain_2e$k"
    SRC="lab/circuits/$NAME.circom"
    [[ -f "$SRC" ]] || { echo "no $SRC" >&2; exit 2; }
    BUILD="lab/work/.build/witness-2e$k"
    OUT="$WORK/2e$k"
    rm -rf "$BUILD" "$OUT"
    mkdir -p "$BUILD" "$OUT"
    load="$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "== 2^$k: compile $SRC (--r1cs --wasm --c --O2)   nproc=$(nproc) loadavg=$load"

    t0=$(now)
    "${CIRCOM[@]}" "$SRC" --r1cs --wasm --c --O2 -o "$BUILD" -l "$FIX/node_modules" | tee "$BUILD/compile.log"
    compile_s=$(secs "$t0" "$(now)")
    echo "   (circom compile: ${compile_s}s)"

    echo "== 2^$k: native generator (make, g++ -O3, static link)"
    t0=$(now)
    make -s -C "$BUILD/${NAME}_cpp" -j"$(nproc)" CC="g++ -static" >"$BUILD/make.log" 2>&1 \
        || { cat "$BUILD/make.log" >&2; exit 1; }
    native_s=$(secs "$t0" "$(now)")
    echo "   (native build: ${native_s}s)"

    cp "$BUILD/$NAME.r1cs" "$OUT/circuit.r1cs"
    cp "$BUILD/${NAME}_js/$NAME.wasm" "$OUT/circuit.wasm"
    cp "$BUILD/${NAME}_cpp/$NAME" "$OUT/circuit"
    cp "$BUILD/${NAME}_cpp/$NAME.dat" "$OUT/circuit.dat"
    cp lab/circuits/input.json "$OUT/input.json"
    file "$OUT/circuit" | grep -q 'statically linked' || echo "   WARNING: native generator is not statically linked"

    echo "== 2^$k: snarkjs wtns calculate"
    t0=$(now)
    "${SNARKJS[@]}" wtns calculate "$OUT/circuit.wasm" "$OUT/input.json" "$OUT/witness.wtns"
    wtns_s=$(secs "$t0" "$(now)")
    echo "   (snarkjs wtns calculate: ${wtns_s}s)"
    if [[ "${SKIP_CHECK:-0}" != 1 ]]; then
        "${SNARKJS[@]}" wtns check "$OUT/circuit.r1cs" "$OUT/witness.wtns" >"$BUILD/wtns-check.log" 2>&1 \
            || { cat "$BUILD/wtns-check.log" >&2; exit 1; }
        grep -q 'WITNESS IS CORRECT' "$BUILD/wtns-check.log" || { cat "$BUILD/wtns-check.log" >&2; exit 1; }
        echo "   witness satisfies all constraints (snarkjs wtns check)"
    fi
    # The native generator must agree with snarkjs byte for byte.
    (cd "$OUT" && ./circuit input.json "$ROOT/$BUILD/native.wtns")
    if cmp -s "$BUILD/native.wtns" "$OUT/witness.wtns"; then echo "   native witness == snarkjs witness"; \
    else echo "   WARNING: native witness differs from snarkjs's"; fi

    graph_s=NA
    if [[ -n "${BUILD_CIRCUIT:-}" ]]; then
        echo "== 2^$k: circom-witnesscalc build-circuit"
        t0=$(now)
        if "$BUILD_CIRCUIT" "$SRC" "$OUT/graph.bin" -l "$FIX/node_modules" >"$BUILD/graph.log" 2>&1; then
            rm -rf ir_log log_input_signals.txt  # build-circuit debug output in cwd
            graph_s=$(secs "$t0" "$(now)")
            echo "   (graph build: ${graph_s}s)"
        else
            echo "   build-circuit FAILED (see $BUILD/graph.log):"; tail -5 "$BUILD/graph.log"
            rm -f "$OUT/graph.bin"
        fi
    fi

    xz_bytes=NA
    if [[ "${XZ:-0}" == 1 ]]; then
        echo "== 2^$k: xz -9 of r1cs + wasm + native + dat"
        xz_bytes=$(tar -C "$OUT" -cf - circuit.r1cs circuit.wasm circuit circuit.dat | xz -9 -T"$(nproc)" | wc -c)
    fi

    constraints=$(grep -o 'non-linear constraints: [0-9]*' "$BUILD/compile.log" | grep -o '[0-9]*$' || echo NA)
    {
        echo "size=2^$k"
        echo "constraints=$constraints"
        echo "circom=${CIRCOM[*]}"
        echo "compile_s=$compile_s"
        echo "native_build_s=$native_s"
        echo "snarkjs_wtns_s=$wtns_s"
        echo "graph_build_s=$graph_s"
        echo "r1cs_bytes=$(fsize "$OUT/circuit.r1cs")"
        echo "wasm_bytes=$(fsize "$OUT/circuit.wasm")"
        echo "native_bytes=$(fsize "$OUT/circuit")"
        echo "dat_bytes=$(fsize "$OUT/circuit.dat")"
        echo "graph_bytes=$(fsize "$OUT/graph.bin")"
        echo "xz9_r1cs_wasm_native_dat_bytes=$xz_bytes"
        echo "nproc=$(nproc)"
        echo "loadavg_at_start=$load"
    } | tee "$OUT/build.txt"
    echo "2^$k,$constraints,$compile_s,$native_s,$wtns_s,$graph_s,$(fsize "$OUT/circuit.r1cs"),$(fsize "$OUT/circuit.wasm"),$(fsize "$OUT/circuit"),$(fsize "$OUT/circuit.dat"),$(fsize "$OUT/graph.bin"),$xz_bytes,$(nproc),$load" >>"$CSV"
done
echo "== done: $WORK"
