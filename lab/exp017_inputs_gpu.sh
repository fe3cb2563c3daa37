#!/usr/bin/env bash
# Issue 15's GPU measurements: the daemon proving from circuit inputs (its synthesis stage
# computing every witness) against the same daemon proving from witnesses, on the GPU.
#
#   lab/exp017_inputs_gpu.sh OUT_DIR BIN(zkpipe; zkpipe-bench beside it) CIRCUIT14_DIR [CIRCUIT20_DIR] [ROUNDS=2] [CLIENTS="1 16 64"]
#
# CIRCUIT14_DIR: the Poseidon chain at 2^14 as lab/circuits/build_witness_bench.sh writes
# it (circuit.r1cs, circuit.wasm, circuit + circuit.dat, input.json, witness.wtns).
# CIRCUIT20_DIR (optional): a 2^20 circuit: circuit.r1cs, circuit.wasm, input.json (and
# circuit + circuit.dat, its native generator, for key p20n).
# Keys are made there with `zkpipe setup --dev`. Key p14 has the wasm beside it, key p14n
# (the same zkey) circom's native generator; p20 the 2^20 wasm.
# Round r runs, for each c: p14 from the witness, p14 from inputs (wasm), p14n from inputs
# (native), interleaved; jobs per client 64 at c = 1, 16 at c = 16, 32 at c = 64 (JOBS
# overrides; SMALL_WORKLOADS picks among "witness inputs-wasm inputs-native"). Then, with
# CIRCUIT20_DIR, p20 at each c of BIG_CLIENTS (default 4; 3 jobs per client, 2 from c = 16),
# from the witness and from inputs (wasm, and native when there). Writes OUT_DIR/<workload>-c<C>-r<R>.{txt,json}, the daemon's trace after
# round 1 at the largest c (lab/waterfall_gaps.py reads them), serve.log, status.txt.
# ENGINE_TOML is appended to the daemon's config; BACKEND (default cuda) picks the backend.
set -euo pipefail
out=${1:?output dir}; bin=${2:?zkpipe binary}; c14=${3:?2^14 circuit dir}; c20=${4:-}
rounds=${5:-2}; clients=${6:-1 16 64}
# The lab's binary is zkpipe-bench, beside zkpipe (cargo and scripts/build-cuda.sh build both there).
bench=$(dirname "$bin")/zkpipe-bench
mkdir -p "$out"
work=$(mktemp -d)
mkdir -p "$work/keys"
# shellcheck source=lib/harness.sh
. "$(dirname "$0")/lib/harness.sh"
log "setup --dev 2^14"
"$bin" setup --dev --seed 1 "$c14/circuit.r1cs" "$work/keys/p14.zkey" 2>>"$out/steps.log"
cp "$work/keys/p14.zkey" "$work/keys/p14n.zkey"
cp "$c14/circuit.wasm" "$work/keys/p14.wasm"
cp "$c14/circuit" "$work/keys/p14n"; cp "$c14/circuit.dat" "$work/keys/p14n.dat"
"$bin" wtns calculate "$c14/circuit.wasm" "$c14/input.json" "$work/w14.wtns"
cmp "$work/w14.wtns" "$c14/witness.wtns" && log "2^14: zkpipe wtns calculate == snarkjs witness"
keys=(p14 p14n)
if [ -n "$c20" ]; then
  log "setup --dev 2^20"
  "$bin" setup --dev --seed 1 "$c20/circuit.r1cs" "$work/keys/p20.zkey" 2>>"$out/steps.log"
  cp "$c20/circuit.wasm" "$work/keys/p20.wasm"
  if [ -e "$c20/circuit" ]; then # its native generator too, as key p20n
    ln "$work/keys/p20.zkey" "$work/keys/p20n.zkey"
    cp "$c20/circuit" "$work/keys/p20n"; cp "$c20/circuit.dat" "$work/keys/p20n.dat"
  fi
  /usr/bin/time -f "2^20 wtns calculate (wasm, one process): %e s, %M KiB" \
    "$bin" wtns calculate "$c20/circuit.wasm" "$c20/input.json" "$work/w20.wtns" 2>>"$out/steps.log"
  keys+=(p20); [ ! -e "$c20/circuit" ] || keys+=(p20n)
fi
daemon_config 50751 9764 "${ENGINE_TOML:-}"
"$bin" serve --config "$work/zkpipe.toml" --backend "${BACKEND:-cuda}" > "$out/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q serving "$out/serve.log" && break; sleep 0.2; done
for k in "${keys[@]}"; do "$bin" preload "$k"; done
# Correctness first: one job per key from inputs, its proof verified against the key.
inputs_of() { case $1 in p20*) echo "$c20/input.json" ;; *) echo "$c14/input.json" ;; esac; }
for k in "${keys[@]}"; do
  job=$("$bin" submit "$k" --input "$(inputs_of "$k")")
  mkdir -p "$work/check-$k"
  "$bin" await "$job" --timeout 300s --out "$work/check-$k" >> "$out/steps.log"
  "$bin" verify "$work/keys/$k.zkey" "$work/check-$k/public.json" "$work/check-$k/proof.json" \
    && log "$k: a proof from inputs verifies"
done
last=${clients##* }
run() { # name key source-args...
  local name=$1 key=$2; shift 2
  local trace=(); [ "$r" = 1 ] && [ "$c" = "$last" ] && trace=(--trace "$out/$name-c$c.trace.json")
  timeout 240 "$bench" loadtest "$key" "$@" -c "$c" -j "$jobs" -p 1 --json "$out/$name-c$c-r$r.json" "${trace[@]}" > "$out/$name-c$c-r$r.txt" 2>&1 || echo "FAILED rc=$?" >> "$out/$name-c$c-r$r.txt"
  log "$name c=$c r=$r: $(grep -E 'proofs/s|busy' "$out/$name-c$c-r$r.txt" | tr '\n' ' ')"
}
small=" ${SMALL_WORKLOADS-witness inputs-wasm inputs-native} "
for r in $(seq "$rounds"); do
  for c in $clients; do
    jobs=${JOBS:-$(( c >= 64 ? 32 : (c >= 16 ? 16 : 64) ))}
    [[ $small != *" witness "* ]] || run small-witness p14 "$work/w14.wtns"
    [[ $small != *" inputs-wasm "* ]] || run small-inputs-wasm p14 --input "$c14/input.json"
    [[ $small != *" inputs-native "* ]] || run small-inputs-native p14n --input "$c14/input.json"
  done
done
if [ -n "$c20" ]; then
  big_clients=${BIG_CLIENTS:-4}; last=${big_clients##* }
  for r in $(seq "$rounds"); do
    for c in $big_clients; do
      jobs=$(( c >= 16 ? 2 : 3 ))
      run big-witness p20 "$work/w20.wtns"
      run big-inputs-wasm p20 --input "$c20/input.json"
      [ ! -e "$c20/circuit" ] || run big-inputs-native p20n --input "$c20/input.json"
    done
  done
fi
"$bin" status > "$out/status.txt" || true
log done
