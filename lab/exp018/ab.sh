#!/usr/bin/env bash
# Interleaved A/B of daemon settings on the 2^22 workload (issue 16), on the GPU machine.
#
#   lab/exp018/ab.sh OUT_DIR BIN ROUNDS "CELLS" "NAME=SETTINGS" "NAME=SETTINGS" ...
#
# CELLS: c:j pairs (clients : jobs per client), 10 partitions per job (PARTS overrides).
# NAME: letters, digits and '_' (it also names the ENV_/BIN_ variables below).
# SETTINGS: `;`-separated section.key=value pairs, passed as ZKPIPE_SET to `zkpipe serve`
# (empty: the defaults); ENV_<NAME>, if set, is more environment for that variant's daemon
# (e.g. ENV_detached="..."), and BIN_<NAME>, if set, the daemon binary that variant runs
# (an A/B of two builds; the clients are always BIN's: zkpipe and the zkpipe-bench beside it). LOADTEST_ARGS is added to every cell's
# loadtest (e.g. "--connections shared"). Round r runs every variant (a fresh daemon each: new state
# directory, key preloaded, one warm-up job), in turn, the order reversed every other round.
# KEY_LOG2 (default 22) picks the key size, BACKEND (default cuda) the backend; INPUT=1
# proves from circuit inputs (needs CIRCUIT_DIR with circuit.r1cs, input.json and the
# generator: circuit + circuit.dat, or circuit.wasm).
# Per cell: OUT_DIR/<name>-r<R>-c<C>.{txt,json,trace.json,kernel}; steps.log; serve logs.
set -euo pipefail
out=${1:?out}; bin=${2:?bin}; rounds=${3:?rounds}; cells=${4:?cells}; shift 4
variants=("$@")
# The lab's binary is zkpipe-bench, beside zkpipe (cargo and scripts/build-cuda.sh build both there).
bench=$(dirname "$bin")/zkpipe-bench
parts=${PARTS:-10}; k=${KEY_LOG2:-22}; backend=${BACKEND:-cuda}
mkdir -p "$out"
work=${WORK:-$(mktemp -d)}
mkdir -p "$work/keys"
log() { echo "[$(date +%T)] $*" | tee -a "$out/steps.log"; }
key=k$k
if [ -n "${INPUT:-}" ]; then
  key=c$k; src="$CIRCUIT_DIR/input.json"; loadsrc=(--input "$src")
  if [ ! -e "$work/keys/$key.zkey" ]; then
    log "setup --dev $CIRCUIT_DIR"
    "$bin" setup --dev --seed 1 "$CIRCUIT_DIR/circuit.r1cs" "$work/keys/$key.zkey" 2>>"$out/steps.log"
    if [ -e "$CIRCUIT_DIR/circuit" ]; then cp "$CIRCUIT_DIR/circuit" "$work/keys/$key"; cp "$CIRCUIT_DIR/circuit.dat" "$work/keys/$key.dat"
    else cp "$CIRCUIT_DIR/circuit.wasm" "$work/keys/$key.wasm"; fi
  fi
else
  loadsrc=("$work/w$k.wtns")
  if [ ! -e "$work/keys/$key.zkey" ]; then
    log "synth + setup --dev 2^$k"
    "$bin" synth --domain "2^$k" --public 4 --seed 1 "$work/c$k.r1cs" "$work/w$k.wtns" 2>>"$out/steps.log"
    "$bin" setup --dev --seed 1 "$work/c$k.r1cs" "$work/keys/$key.zkey" 2>>"$out/steps.log"
  fi
fi
cat > "$work/zkpipe.toml" <<TOML
[server]
grpc_listen = "127.0.0.1:50851"
http_listen = "127.0.0.1:9864"
max_request_bytes = "4GiB"
[keys]
dir = "keys"
checks = "trusted"
${ENGINE_TOML:-}
TOML
export ZKPIPE_SERVER=http://127.0.0.1:50851
source "$(dirname "$0")/counters.sh"
run_variant() { # name settings round
  local name=$1 settings=$2 r=$3 envname="ENV_$1" binname="BIN_$1"
  rm -rf "$work/state"
  env ZKPIPE_SET="$settings" ${!envname:-} "${!binname:-$bin}" serve --config "$work/zkpipe.toml" --state-dir "$work/state" --backend "$backend" > "$out/$name-r$r.serve.log" 2>&1 &
  local pid=$!
  for _ in $(seq 300); do grep -q serving "$out/$name-r$r.serve.log" && break; sleep 0.2; done
  "$bin" preload "$key" >> "$out/steps.log" 2>&1
  "$bench" loadtest "$key" "${loadsrc[@]}" -c 1 -j 1 -p 1 > /dev/null
  for cell in $cells; do
    local c=${cell%%:*} j=${cell##*:} f="$out/$name-r$r-c${cell%%:*}"
    echo 5 > /proc/$pid/clear_refs 2>/dev/null || true
    counters $pid > "$f.kernel"
    log "$name round $r c=$c j=$j p=$parts"
    timeout 500 "$bench" loadtest "$key" "${loadsrc[@]}" -c "$c" -j "$j" -p "$parts" ${LOADTEST_ARGS:-} --json "$f.json" --trace "$f.trace.json" > "$f.txt" 2>&1 || log "loadtest failed: $(tail -1 "$f.txt")"
    echo "-- after" >> "$f.kernel"; counters $pid >> "$f.kernel"
    grep -E "VmHWM" /proc/$pid/status >> "$f.kernel"
    head -1 "$f.txt" | tee -a "$out/steps.log"; grep busy "$f.txt" | tee -a "$out/steps.log" || true
  done
  kill $pid; wait $pid 2>/dev/null || true
}
for r in $(seq "$rounds"); do
  order=("${variants[@]}")
  if [ $((r % 2)) = 0 ]; then order=(); for ((i=${#variants[@]}-1; i>=0; i--)); do order+=("${variants[$i]}"); done; fi
  for v in "${order[@]}"; do run_variant "${v%%=*}" "${v#*=}" "$r"; done
done
log done
