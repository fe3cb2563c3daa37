#!/usr/bin/env bash
# Experiment 036, second part: what one export of the waterfall (GET /trace, GetTrace)
# costs the daemon's memory once the trace is full.
#
#   lab/exp036_trace_export.sh OUT_DIR [BIN=target/release/zkpipe] (zkpipe-bench beside it)
#
# `zkpipe serve --backend cpu` with the default pipeline.trace_capacity (4,096 partitions)
# and a 1 s job retention (so that no finished job is kept), the poseidon fixture's key;
# one loadtest of C x J jobs (default 16 x 256 = 4,096: the trace is full); then FETCHES
# (default 3) times: the peak RSS reset (`clear_refs` 5), GET /trace with curl, and the
# daemon's VmRSS, VmHWM and glibc's totals (malloc_stats() through gdb) before and after.
# Writes OUT_DIR/trace-export.csv, the serve log and machine.txt.
set -euo pipefail
out=${1:?output dir}
bin=$(realpath "${2:-target/release/zkpipe}")
# The lab's binary is zkpipe-bench, beside zkpipe (cargo and scripts/build-cuda.sh build both there).
bench=$(dirname "$bin")/zkpipe-bench
c=${C:-16} j=${J:-256} fetches=${FETCHES:-3}
key=$(realpath tests/fixtures/bn254/poseidon/circuit.zkey)
wtns=$(realpath tests/fixtures/bn254/poseidon/witness.wtns)
mkdir -p "$out"
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" > "$out/machine.txt"
mkdir -p "$work/keys"
cp "$key" "$work/keys/k.zkey"
log=$out/trace-export.serve.log
"$bin" serve --backend cpu --grpc-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --key-dir "$work/keys" --state-dir "$work/state" --set pipeline.job_retention=1s \
  > "$out/trace-export.serve.out" 2> "$log" &
pid=$!
for _ in $(seq 150); do grep -q serving "$out/trace-export.serve.out" && break; sleep 0.2; done
export ZKPIPE_SERVER=http://$(sed -n 's/.*grpc=\([^ ]*\).*/\1/p' "$out/trace-export.serve.out")
http=$(sed -n 's/.*http=\([^ ]*\).*/\1/p' "$out/trace-export.serve.out")
"$bin" preload k > /dev/null
"$bench" loadtest k "$wtns" -c "$c" -j "$j" -p 1 > "$out/trace-export-loadtest.txt"
sleep 3
kib() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$pid/status"; }
malloc_kib() {
  local before
  before=$(wc -l < "$log")
  gdb -p "$pid" -batch -ex 'call (void)malloc_stats()' > /dev/null 2>&1
  sleep 0.5
  tail -n +"$((before + 1))" "$log" | awk '/^Total/ { t = 1 } t && /system bytes/ { s = $4 } t && /in use bytes/ { u = $5 }
    END { printf "%d,%d\n", s / 1024, u / 1024 }'
}
csv=$out/trace-export.csv
echo "fetch,trace_bytes,rss_before_kib,malloc_system_before_kib,malloc_in_use_before_kib,hwm_during_kib,rss_after_kib,malloc_system_after_kib,malloc_in_use_after_kib" > "$csv"
for f in $(seq "$fetches"); do
  before="$(kib VmRSS),$(malloc_kib)"
  echo 5 > "/proc/$pid/clear_refs"
  curl -sf "http://$http/trace" -o "$work/trace.json"
  sleep 1
  hwm=$(kib VmHWM)
  after="$(kib VmRSS),$(malloc_kib)"
  echo "$f,$(stat -c %s "$work/trace.json"),$before,$hwm,$after" | tee -a "$csv"
done
