#!/usr/bin/env bash
# Experiment 016 (issue 15, witness synthesis): whole-process wall time of each witness
# calculator on the Poseidon-chain circuits of lab/circuits/build_witness_bench.sh, and
# fullprove (witness + Groth16 proof) at 2^14. Every output is compared byte for byte with
# snarkjs's witness (`cmp`).
#
#   bash lab/exp016_witness_calculators.sh [ROUNDS]           (default 5)
#
# Calculators (a missing one prints a "not available" row, never a number):
#   snarkjs       node .../snarkjs/build/cli.cjs wtns calculate circuit.wasm input.json out.wtns
#   native        ./circuit input.json out.wtns                 (circom --c, static)
#   graph         calc-witness graph.bin input.json out.wtns    (iden3 circom-witnesscalc 0.3.0)
#   zkpipe-wasm   $ZKPIPE wtns calculate circuit.wasm input.json out.wtns
#   zkpipe-native $ZKPIPE wtns calculate circuit input.json out.wtns
#   zkpipe-wasm-cold  the same with ZKPIPE_WASM_CACHE=off: compiles the module every time
# zkpipe-wasm and zkpipe fullprove use a compiled-module cache in lab/work/witness/wasm-cache, warmed once
# per size before the rounds (what every run after a circuit's first one sees).
# Fullprove at 2^14 (FULLPROVE=0 skips): snarkjs groth16 fullprove; snarkjs wtns calculate +
# zkpipe prove (two processes, timed together); zkpipe fullprove with circuit.wasm and with
# the native generator (if the binary has it).
# Each proof is checked with `snarkjs groth16 verify`.
#
# Environment:
#   ZKPIPE         zkpipe binary (default /work/main/target/release/zkpipe, else target/release/zkpipe)
#   CALC_WITNESS   circom-witnesscalc's calc-witness (default /work/tools/bin/calc-witness)
#   BUILD_CIRCUIT  circom-witnesscalc's build-circuit (default /work/tools/bin/build-circuit);
#                  a missing graph.bin is built once and its build time recorded
#   SIZES          default "14 16 20" (built by lab/circuits/build_witness_bench.sh if missing)
#   OUT            default lab/results/exp016-witness
#   ONLY           space-separated subset of calculators/provers to run (default: all)
#   ZKPIPE_FULLPROVE_ARGS  argument order of `zkpipe fullprove` (words INPUT GEN ZKEY PROOF PUBLIC),
#                  default "INPUT GEN ZKEY PROOF PUBLIC" (snarkjs's order, GEN = circuit.wasm)
#
# Writes OUT/runs.csv (one line per run), OUT/table.md (min/median/max per size and
# calculator), OUT/env.txt, OUT/logs/. Rounds are interleaved: each round runs every size and
# calculator once, the calculator order rotating from round to round.
set -euo pipefail

ROUNDS="${1:-5}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
cd "$ROOT"

if [[ -z "${ZKPIPE:-}" ]]; then
    if [[ -x /work/main/target/release/zkpipe ]]; then ZKPIPE=/work/main/target/release/zkpipe
    else ZKPIPE="$ROOT/target/release/zkpipe"; fi
fi
CALC_WITNESS="${CALC_WITNESS:-/work/tools/bin/calc-witness}"
BUILD_CIRCUIT="${BUILD_CIRCUIT:-/work/tools/bin/build-circuit}"
SIZES="${SIZES:-14 16 20}"
OUT="${OUT:-lab/results/exp016-witness}"
FULLPROVE="${FULLPROVE:-1}"
ONLY="${ONLY:-}"
FIX=tests/fixtures
SNARKJS=(node "$ROOT/$FIX/node_modules/snarkjs/build/cli.cjs")
WORK=lab/work/witness

mkdir -p "$OUT/logs"
CSV="$OUT/runs.csv"
echo "section,size,calculator,round,status,wall_s,identical,nproc,loadavg" >"$CSV"

bash scripts/install-snarkjs.sh >/dev/null
built=""
for k in $SIZES; do
    if [[ ! -s "$WORK/2e$k/witness.wtns" || ! -x "$WORK/2e$k/circuit" || ! -s "$WORK/2e$k/build.txt" ]]; then
        echo "== building 2^$k (lab/circuits/build_witness_bench.sh $k)"
        if ! bash lab/circuits/build_witness_bench.sh "$k"; then
            echo "== 2^$k could not be built: size skipped (see above)"
            continue
        fi
    fi
    built="$built $k"
done
SIZES="${built# }"
[[ -n "$SIZES" ]] || { echo "no size could be built" >&2; exit 1; }

want() { [[ -z "$ONLY" || " $ONLY " == *" $1 "* ]]; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# --- which calculators exist ---------------------------------------------------------------
declare -A AVAIL WHY
have_zkpipe_wtns=0
if [[ -x "$ZKPIPE" ]] && "$ZKPIPE" wtns calculate --help >/dev/null 2>&1; then have_zkpipe_wtns=1; fi
have_zkpipe_fullprove=0
if [[ -x "$ZKPIPE" ]] && "$ZKPIPE" fullprove --help >/dev/null 2>&1; then have_zkpipe_fullprove=1; fi
AVAIL[snarkjs]=1
AVAIL[native]=1
if [[ -x "$CALC_WITNESS" ]]; then AVAIL[graph]=1; else AVAIL[graph]=0; WHY[graph]="no calc-witness at $CALC_WITNESS"; fi
for c in zkpipe-wasm zkpipe-native zkpipe-wasm-cold; do
    AVAIL[$c]=$have_zkpipe_wtns
    WHY[$c]="$ZKPIPE has no 'wtns calculate'"
done
CALCS=(snarkjs native graph zkpipe-wasm zkpipe-native zkpipe-wasm-cold)

{
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(hostname)  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "loadavg at start: $(load)"
    echo "rounds: $ROUNDS  sizes: $SIZES"
    echo "zkpipe: $ZKPIPE ($([[ -x "$ZKPIPE" ]] && "$ZKPIPE" --version 2>/dev/null || echo missing); wtns calculate: $have_zkpipe_wtns; fullprove: $have_zkpipe_fullprove)"
    echo "zkpipe commit: $(git -C "$(dirname "$ZKPIPE")/../.." log -1 --format='%h %s' 2>/dev/null || echo '?')"
    echo "calc-witness: $CALC_WITNESS ($([[ -x "$CALC_WITNESS" ]] && echo present || echo missing))"
    echo "build-circuit: $BUILD_CIRCUIT ($([[ -x "$BUILD_CIRCUIT" ]] && echo present || echo missing))"
    echo "snarkjs: $(node -p "require('./$FIX/node_modules/snarkjs/package.json').version")  node: $(node --version)"
    for k in $SIZES; do echo "2^$k build: $(tr '\n' ' ' <"$WORK/2e$k/build.txt")"; done
} | tee "$OUT/env.txt"

# --- graph build, once per size ------------------------------------------------------------
if [[ ${AVAIL[graph]} == 1 ]] && want graph; then
    for k in $SIZES; do
        D="$WORK/2e$k"
        if [[ ! -s "$D/graph.bin" ]]; then
            if [[ -x "$BUILD_CIRCUIT" ]]; then
                echo "== 2^$k: build-circuit (once)"
                l=$(load); t0=$(now)
                if "$BUILD_CIRCUIT" "lab/circuits/poseidon_chain_2e$k.circom" "$D/graph.bin" \
                    -l "$FIX/node_modules" >"$OUT/logs/graph-build-2e$k.log" 2>&1; then
                    rm -rf ir_log log_input_signals.txt  # build-circuit debug output in cwd
                    w=$(secs "$t0" "$(now)")
                    echo "graph-build,2^$k,build-circuit,1,ok,$w,NA,$(nproc),$l" >>"$CSV"
                    echo "   ${w}s, $(stat -c %s "$D/graph.bin") bytes"
                else
                    echo "graph-build,2^$k,build-circuit,1,failed,NA,NA,$(nproc),$l" >>"$CSV"
                    tail -5 "$OUT/logs/graph-build-2e$k.log"
                fi
            fi
        else
            echo "== 2^$k: graph.bin exists ($(stat -c %s "$D/graph.bin") bytes; build time in $D/build.txt)"
        fi
    done
fi

# --- one run -------------------------------------------------------------------------------
# run_calc SIZE CALC ROUND
run_calc() {
    local k=$1 c=$2 r=$3
    local D="$ROOT/$WORK/2e$k"
    local o="$ROOT/$OUT/logs/out-2e$k-$c.wtns"
    local log="$ROOT/$OUT/logs/run-2e$k-$c-r$r.log"
    rm -f "$o"
    if [[ $c == graph && ! -s "$D/graph.bin" ]]; then
        echo "wtns,2^$k,$c,$r,not available,NA,NA,$(nproc),$(load)" >>"$CSV"
        printf '   %-5s %-14s not available (no %s)\n' "2^$k" "$c" "$WORK/2e$k/graph.bin"
        return
    fi
    local cmd
    case $c in
        snarkjs) cmd=("${SNARKJS[@]}" wtns calculate "$D/circuit.wasm" "$D/input.json" "$o") ;;
        native) cmd=("$D/circuit" "$D/input.json" "$o") ;;
        graph) cmd=("$CALC_WITNESS" "$D/graph.bin" "$D/input.json" "$o") ;;
        zkpipe-wasm) cmd=(env ZKPIPE_WASM_CACHE="$WASM_CACHE" "$ZKPIPE" wtns calculate "$D/circuit.wasm" "$D/input.json" "$o") ;;
        zkpipe-wasm-cold) cmd=(env ZKPIPE_WASM_CACHE=off "$ZKPIPE" wtns calculate "$D/circuit.wasm" "$D/input.json" "$o") ;;
        zkpipe-native) cmd=("$ZKPIPE" wtns calculate "$D/circuit" "$D/input.json" "$o") ;;
    esac
    local l t0 t1 st=ok same=NA
    l=$(load)
    t0=$(now)
    "${cmd[@]}" >"$log" 2>&1 || st=failed
    t1=$(now)
    if [[ $st == ok ]]; then
        if cmp -s "$o" "$D/witness.wtns"; then same=yes; else same=no; fi
        echo "wtns,2^$k,$c,$r,ok,$(secs "$t0" "$t1"),$same,$(nproc),$l" >>"$CSV"
    else
        echo "wtns,2^$k,$c,$r,failed,NA,NA,$(nproc),$l" >>"$CSV"
    fi
    printf '   %-5s %-14s %-7s %8s s  identical=%s  load=%s\n' "2^$k" "$c" "$st" \
        "$([[ $st == ok ]] && secs "$t0" "$t1" || echo NA)" "$same" "$l"
}

# --- fullprove at 2^14 ---------------------------------------------------------------------
FP_K=14
FP_D="$ROOT/$WORK/2e$FP_K"
PROVERS=()
if [[ $FULLPROVE == 1 && " $SIZES " == *" $FP_K "* ]]; then
    if [[ ! -s "$FP_D/circuit.zkey" ]]; then
        if [[ -x "$ZKPIPE" ]]; then
            echo "== 2^$FP_K: zkpipe setup --dev (INSECURE development key)"
            "$ZKPIPE" setup --dev --seed 16 "$FP_D/circuit.r1cs" "$FP_D/circuit.zkey" >"$OUT/logs/setup.log" 2>&1
        fi
    fi
    if [[ -s "$FP_D/circuit.zkey" ]]; then
        # snarkjs reads zkpipe's dev key: export its verification key with snarkjs itself.
        "${SNARKJS[@]}" zkey export verificationkey "$FP_D/circuit.zkey" "$FP_D/verification_key.json" \
            >"$OUT/logs/export-vk.log" 2>&1
        PROVERS=(snarkjs-fullprove snarkjs-wtns+zkpipe-prove zkpipe-fullprove zkpipe-fullprove-native)
    else
        echo "== no zkey for 2^$FP_K: fullprove skipped"
    fi
fi

# run_prove PROVER ROUND
run_prove() {
    local p=$1 r=$2
    local pr="$ROOT/$OUT/logs/proof-$p.json" pu="$ROOT/$OUT/logs/public-$p.json" w="$ROOT/$OUT/logs/fp-$p.wtns"
    local log="$ROOT/$OUT/logs/fullprove-$p-r$r.log"
    rm -f "$pr" "$pu" "$w"
    if [[ $p == zkpipe-fullprove* && $have_zkpipe_fullprove != 1 ]]; then
        echo "fullprove,2^$FP_K,$p,$r,not available,NA,NA,$(nproc),$(load)" >>"$CSV"
        printf '   %-5s %-26s not available (%s has no fullprove)\n' "2^$FP_K" "$p" "$ZKPIPE"
        return
    fi
    local l t0 t1 st=ok ver=NA
    l=$(load)
    t0=$(now)
    case $p in
        snarkjs-fullprove)
            "${SNARKJS[@]}" groth16 fullprove "$FP_D/input.json" "$FP_D/circuit.wasm" "$FP_D/circuit.zkey" \
                "$pr" "$pu" >"$log" 2>&1 || st=failed ;;
        snarkjs-wtns+zkpipe-prove)
            { "${SNARKJS[@]}" wtns calculate "$FP_D/circuit.wasm" "$FP_D/input.json" "$w" \
                && "$ZKPIPE" prove "$FP_D/circuit.zkey" "$w" "$pr" "$pu"; } >"$log" 2>&1 || st=failed ;;
        zkpipe-fullprove)
            local args=() a
            for a in ${ZKPIPE_FULLPROVE_ARGS:-INPUT GEN ZKEY PROOF PUBLIC}; do
                case $a in
                    INPUT) args+=("$FP_D/input.json") ;; GEN) args+=("$FP_D/circuit.wasm") ;;
                    NATIVE) args+=("$FP_D/circuit") ;; ZKEY) args+=("$FP_D/circuit.zkey") ;;
                    PROOF) args+=("$pr") ;; PUBLIC) args+=("$pu") ;; *) args+=("$a") ;;
                esac
            done
            env ZKPIPE_WASM_CACHE="$WASM_CACHE" "$ZKPIPE" fullprove "${args[@]}" >"$log" 2>&1 || st=failed ;;
        zkpipe-fullprove-native)
            "$ZKPIPE" fullprove "$FP_D/input.json" "$FP_D/circuit" "$FP_D/circuit.zkey" "$pr" "$pu" \
                >"$log" 2>&1 || st=failed ;;
    esac
    t1=$(now)
    if [[ $st == ok ]]; then
        if "${SNARKJS[@]}" groth16 verify "$FP_D/verification_key.json" "$pu" "$pr" 2>&1 | grep -q 'OK!'; then
            ver=verified; else ver=REJECTED; fi
        echo "fullprove,2^$FP_K,$p,$r,ok,$(secs "$t0" "$t1"),$ver,$(nproc),$l" >>"$CSV"
    else
        echo "fullprove,2^$FP_K,$p,$r,failed,NA,NA,$(nproc),$l" >>"$CSV"
    fi
    printf '   %-5s %-26s %-7s %8s s  snarkjs verify=%s  load=%s\n' "2^$FP_K" "$p" "$st" \
        "$([[ $st == ok ]] && secs "$t0" "$t1" || echo NA)" "$ver" "$l"
}

# --- warm the compiled-module cache (untimed) ------------------------------------------------
WASM_CACHE="$WORK/wasm-cache"   # git-ignored, like the circuits
if [[ $have_zkpipe_wtns == 1 ]]; then
    for k in $SIZES; do
        env ZKPIPE_WASM_CACHE="$WASM_CACHE" "$ZKPIPE" wtns calculate "$WORK/2e$k/circuit.wasm" \
            "$WORK/2e$k/input.json" "$WASM_CACHE.warm.wtns" >/dev/null
    done
    rm -f "$WASM_CACHE.warm.wtns"
fi

# --- rounds --------------------------------------------------------------------------------
for ((r = 1; r <= ROUNDS; r++)); do
    echo "== round $r/$ROUNDS   nproc=$(nproc) loadavg=$(load)"
    n=${#CALCS[@]}
    for k in $SIZES; do
        for ((i = 0; i < n; i++)); do
            c=${CALCS[$(((i + r - 1) % n))]}
            want "$c" || continue
            if [[ ${AVAIL[$c]} != 1 ]]; then
                echo "wtns,2^$k,$c,$r,not available,NA,NA,$(nproc),$(load)" >>"$CSV"
                printf '   %-5s %-14s not available (%s)\n' "2^$k" "$c" "${WHY[$c]}"
                continue
            fi
            run_calc "$k" "$c" "$r"
        done
    done
    m=${#PROVERS[@]}
    for ((i = 0; i < m; i++)); do
        p=${PROVERS[$(((i + r - 1) % m))]}
        want "$p" || continue
        run_prove "$p" "$r"
    done
done
rm -f "$OUT"/logs/*.wtns

# --- summary -------------------------------------------------------------------------------
python3 - "$CSV" "$OUT/table.md" "$OUT/env.txt" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
env = open(sys.argv[3]).read()
groups = {}
for r in rows:
    groups.setdefault((r["section"], r["size"], r["calculator"]), []).append(r)
out = ["# exp016: witness calculators and fullprove (whole-process wall time, seconds)", "",
       "```", env.strip(), "```", "",
       "| what | size | calculator | runs ok | min s | median s | max s | output | load 1-min at runs (min–max) |",
       "|---|---|---|---:|---:|---:|---:|---|---|"]
base = {}
for (sec, size, calc), rs in groups.items():
    if calc == "snarkjs" and sec == "wtns":
        ok = [float(r["wall_s"]) for r in rs if r["status"] == "ok"]
        if ok: base[size] = statistics.median(ok)
for (sec, size, calc), rs in groups.items():
    ok = [float(r["wall_s"]) for r in rs if r["status"] == "ok"]
    loads = [float(r["loadavg"].split()[0]) for r in rs]
    lr = f"{min(loads):.2f}–{max(loads):.2f}"
    if not ok:
        st = sorted({r["status"] for r in rs})
        out.append(f"| {sec} | {size} | {calc} | 0/{len(rs)} | — | — | — | {', '.join(st)} | {lr} |")
        continue
    outs = sorted({r["identical"] for r in rs if r["status"] == "ok"})
    if sec == "wtns":
        o = "identical to snarkjs" if outs == ["yes"] else "DIFFERS: " + ",".join(outs)
    elif sec == "fullprove":
        o = "snarkjs verify OK" if outs == ["verified"] else ",".join(outs)
    else:
        o = "—"
    med = statistics.median(ok)
    extra = f" ({base[size] / med:.1f}× snarkjs)" if sec == "wtns" and size in base and calc != "snarkjs" else ""
    out.append(f"| {sec} | {size} | {calc} | {len(ok)}/{len(rs)} | {min(ok):.3f} | {med:.3f}{extra} | {max(ok):.3f} | {o} | {lr} |")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
echo "== wrote $CSV and $OUT/table.md"
