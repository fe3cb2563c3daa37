#!/usr/bin/env bash
# Experiment 036: what the daemon's finished jobs cost in memory while it remembers them
# (`pipeline.job_retention`).
#
#   lab/exp036_job_memory.sh OUT_DIR [BIN=target/release/zkpipe] (zkpipe-bench beside it)
#
# For each retention in RETENTIONS (default "10m 1s"), in turn on this machine: `zkpipe
# serve --backend cpu` on a fresh state directory, the key preloaded and one unmeasured
# job proved; then STEPS (default 8) loadtests of C clients x J jobs x P partitions
# (default 16 x 64 x 1 = 1,024 jobs), and after each, SETTLE seconds (default 3: past a 1 s retention
# and the janitor's next pass) later, the daemon's /proc/PID/status (VmRSS, VmHWM,
# RssAnon, RssFile) and how many jobs its status lists. KEY is a .zkey and WTNS its
# witness (default the poseidon fixture, BN254); EXTRA_ENV adds VAR=value settings to the
# daemon's environment (e.g. ZKPIPE_ALLOCATOR=mimalloc), SETS more `--set` settings (e.g.
# "pipeline.trace_capacity=0"), LABEL a suffix to the rows' label. With MALLOC_STATS=1
# (system allocator only) each step also has glibc's own totals, from `malloc_stats()`
# called in the daemon with gdb: bytes held from the system and bytes in use (live
# allocations). Writes OUT_DIR/rss.csv (one row per step), OUT_DIR/<label>-s<step>.txt
# (loadtest summaries), serve logs and machine.txt.
set -euo pipefail
out=${1:?output dir}
bin=$(realpath "${2:-target/release/zkpipe}")
# The lab's binary is zkpipe-bench, beside zkpipe (cargo and scripts/build-cuda.sh build both there).
bench=$(dirname "$bin")/zkpipe-bench
read -r -a retentions <<< "${RETENTIONS:-10m 1s}"
steps=${STEPS:-8} c=${C:-16} j=${J:-64} p=${P:-1} settle=${SETTLE:-3}
key=$(realpath "${KEY:-tests/fixtures/bn254/poseidon/circuit.zkey}")
wtns=$(realpath "${WTNS:-tests/fixtures/bn254/poseidon/witness.wtns}")
read -r -a extra_env <<< "${EXTRA_ENV:-}"
sets=()
for kv in ${SETS:-}; do sets+=(--set "$kv"); done
label_suffix=${LABEL:-}
mkdir -p "$out"
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
{
  echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  grep MemTotal /proc/meminfo
  uname -r
  "$bin" --version 2>/dev/null || true
  echo "key $(basename "$(dirname "$key")") $(stat -c %s "$key") bytes, witness $(stat -c %s "$wtns") bytes"
} > "$out/machine.txt"
mkdir -p "$work/keys"
cp "$key" "$work/keys/k.zkey"  # a symlink leading outside the key folder is refused
csv=$out/rss.csv
[ -f "$csv" ] || echo "label,retention,step,jobs,vm_rss_kib,vm_hwm_kib,rss_anon_kib,rss_file_kib,malloc_system_kib,malloc_in_use_kib,jobs_listed,proofs_per_s" > "$csv"
status_kib() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$pid/status"; }
# glibc's totals (system bytes, in use bytes) in KiB, "," without MALLOC_STATS.
malloc_kib() {
  [ "${MALLOC_STATS:-0}" = 1 ] || { echo ","; return; }
  local log=$1 before
  before=$(wc -l < "$log")
  gdb -p "$pid" -batch -ex 'call (void)malloc_stats()' > /dev/null 2>&1
  sleep 0.5
  tail -n +"$((before + 1))" "$log" | awk '/^Total/ { t = 1 } t && /system bytes/ { s = $4 } t && /in use bytes/ { u = $5 }
    END { printf "%d,%d\n", s / 1024, u / 1024 }'
}
for ret in "${retentions[@]}"; do
  label=ret$ret$label_suffix
  rm -rf "$work/state"
  env "${extra_env[@]}" "$bin" serve --backend cpu --grpc-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
    --key-dir "$work/keys" --state-dir "$work/state" --set "pipeline.job_retention=$ret" "${sets[@]}" \
    > "$out/$label.serve.out" 2> "$out/$label.serve.log" &
  pid=$!
  for _ in $(seq 150); do grep -q serving "$out/$label.serve.out" && break; sleep 0.2; done
  export ZKPIPE_SERVER=http://$(sed -n 's/.*grpc=\([^ ]*\).*/\1/p' "$out/$label.serve.out")
  "$bin" preload k > /dev/null
  "$bench" loadtest k "$wtns" -c 1 -j 1 -p 1 > /dev/null
  sleep "$settle"
  echo "$label,$ret,0,0,$(status_kib VmRSS),$(status_kib VmHWM),$(status_kib RssAnon),$(status_kib RssFile),$(malloc_kib "$out/$label.serve.log"),," >> "$csv"
  for s in $(seq "$steps"); do
    "$bench" loadtest k "$wtns" -c "$c" -j "$j" -p "$p" --json "$out/$label-s$s.json" > "$out/$label-s$s.txt"
    sleep "$settle"
    # /proc first: listing the jobs (below) copies every one of them in the daemon.
    mem="$(status_kib VmRSS),$(status_kib VmHWM),$(status_kib RssAnon),$(status_kib RssFile)"
    mem="$mem,$(malloc_kib "$out/$label.serve.log")"
    listed=$("$bin" status --all --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')
    pps=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["proofs_per_second"], 1))' "$out/$label-s$s.json")
    row="$label,$ret,$s,$((s * c * j)),$mem,$listed,$pps"
    echo "$row" | tee -a "$csv"
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
  pid=
done
