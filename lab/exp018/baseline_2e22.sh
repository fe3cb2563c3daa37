#!/usr/bin/env bash
# Issue 16's first look (before any change): the 2^22 workload on the GPU with the binary
# as it was, traced per cell, with kernel-side counters around every cell.
#
#   lab/exp018/baseline_2e22.sh OUT_DIR BIN(zkpipe; zkpipe-bench beside it) [CELLS="1:2 4:2 16:1"] [PARTS=10]
#
# CELLS: c:j pairs (clients : jobs per client). Writes OUT_DIR/c<C>.{txt,json,trace.json},
# c<C>.kernel.txt (TLB shootdowns, context switches, page faults, CPU time of the daemon),
# c<C>.smi.csv (nvidia-smi utilization samples), serve.log, steps.log.
set -euo pipefail
out=${1:?out dir}; bin=${2:?zkpipe}; cells=${3:-1:2 4:2 16:1}; parts=${4:-10}
# The lab's binary is zkpipe-bench, beside zkpipe (cargo and scripts/build-cuda.sh build both there).
bench=$(dirname "$bin")/zkpipe-bench
mkdir -p "$out"
work=${WORK:-$(mktemp -d)}
mkdir -p "$work/keys"
log() { echo "[$(date +%T)] $*" | tee -a "$out/steps.log"; }
if [ ! -e "$work/keys/k22.zkey" ]; then
  log "synth + setup --dev 2^22"
  "$bin" synth --domain "2^22" --public 4 --seed 1 "$work/c22.r1cs" "$work/w22.wtns" 2>>"$out/steps.log"
  "$bin" setup --dev --seed 1 "$work/c22.r1cs" "$work/keys/k22.zkey" 2>>"$out/steps.log"
  log "key made: $(du -h "$work/keys/k22.zkey" | cut -f1)"
fi
cat > "$work/zkpipe.toml" <<TOML
[server]
grpc_listen = "127.0.0.1:50851"
http_listen = "127.0.0.1:9864"
max_request_bytes = "4GiB"
state_dir = "$work/state"
[keys]
dir = "keys"
checks = "trusted"
${ENGINE_TOML:-}
TOML
rm -rf "$work/state"
"$bin" serve --config "$work/zkpipe.toml" --backend cuda > "$out/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 300); do grep -q serving "$out/serve.log" && break; sleep 0.2; done
export ZKPIPE_SERVER=http://127.0.0.1:50851
"$bin" preload k22 >>"$out/steps.log" 2>&1
"$bench" loadtest k22 "$work/w22.wtns" -c 1 -j 1 -p 1 > "$out/warmup.txt"
source "$(dirname "$0")/counters.sh"
for cell in $cells; do
  c=${cell%%:*}; j=${cell##*:}
  echo 5 > /proc/$pid/clear_refs 2>/dev/null || true
  counters $pid > "$out/c$c.kernel.before"
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 100 > "$out/c$c.smi.csv" 2>/dev/null &
  smi=$!
  log "c=$c j=$j p=$parts"
  timeout 400 "$bench" loadtest k22 "$work/w22.wtns" -c "$c" -j "$j" -p "$parts" --json "$out/c$c.json" --trace "$out/c$c.trace.json" > "$out/c$c.txt" 2>&1 || log "loadtest c=$c failed"
  kill $smi 2>/dev/null || true
  counters $pid > "$out/c$c.kernel.after"
  grep -E "VmHWM|VmRSS" /proc/$pid/status >> "$out/c$c.kernel.after"
  cat "$out/c$c.txt"
done
