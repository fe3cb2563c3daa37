#!/usr/bin/env bash
# Where a small proof's host CPU goes, by function: a daemon whose device passes are
# replaced by a fixed delay (`device.stub_delay`, a lab setting: the host path runs at full
# rate and every proof still verifies), loaded by `zkpipe-bench loadtest`, sampled by
# `perf record` for the measured round. Runs on any machine with perf (no GPU needed).
#
#   lab/exp042/host_profile.sh OUT_DIR BIN [STUB=1ms]
#
# On a GPU machine STUB=none proves on the GPUs instead (`--backend cuda`, the first GPUS of
# them, default 1): the real host path around real passes. PERF names the perf to run
# (default: perf; the GPU machines have none, .carry/perfkit.tar.xz is this machine's with
# its libraries, see lab/exp019/run.sh) and CALLGRAPH=none samples without call graphs
# (enough for by-function counts, and far less data at thousands of proofs a second).
#
# BIN: a folder holding a LAB build's `zkpipe` and `zkpipe-bench` (LAB=1
# scripts/build-cuda.sh, or `cargo build --release --features zkpipe-cli/lab`).
# Workload: the 2^14 BN254 dev key (lab/lib/harness.sh), C clients (8) x J jobs (200),
# one partition each, after one unmeasured round. Writes OUT_DIR/:
#   loadtest.txt   the measured round's summary
#   cpu.md         CPU per proof by thread group (thread_cpu.py)
#   by-thread.txt  perf's samples by thread name
#   by-symbol.txt  perf's samples by thread group and function (top 60)
#   by-dso.txt     perf's samples by library (kernel, libc, the binary)
#   metrics.txt    the daemon's Prometheus metrics at the end (batch sizes, stage times)
set -euo pipefail
out=${1:?output dir}
bin=$(realpath "${2:?bin}")
stub=${3:-1ms}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(realpath "$out")
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
work_dir
log "dev key 2^14"
dev_keys "$bin/zkpipe" 14
if [ "$stub" = none ]; then
  daemon_config 50971 9984
  backend=cuda
else
  daemon_config 50971 9984 "[device]
stub_delay = \"$stub\""
  backend=cpu
fi
perf=${PERF:-perf}
graph=(--call-graph "${CALLGRAPH:-dwarf,16384}"); [ "${CALLGRAPH:-}" = none ] && graph=()
rm -rf "$work/zkpipe-state"
(cd "$work" && CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((${GPUS:-1} - 1))) exec "$bin/zkpipe" serve --config zkpipe.toml --backend "$backend") > "$out/serve.log" 2>&1 &
pid=$!
for _ in $(seq 300); do grep -q serving "$out/serve.log" && break; sleep 0.2; done
"$bin/zkpipe" preload k14 > /dev/null
c=${C:-8} j=${J:-200}
# One unmeasured round: the stub's one real pass per witness, pools and buffers warm.
"$bin/zkpipe-bench" loadtest k14 "$work/w14.wtns" -c "$c" -j 5 -p 1 > /dev/null 2>&1
python3 "$here/thread_cpu.py" snapshot "$pid" > "$work/before.json"
"$perf" record -F "${FREQ:-999}" "${graph[@]}" -p "$pid" -o "$work/perf.data" 2> "$out/perf-record.log" &
perf_pid=$!
sleep 0.5
t0=$(date +%s.%N)
"$bin/zkpipe-bench" loadtest k14 "$work/w14.wtns" -c "$c" -j "$j" -p 1 > "$out/loadtest.txt" 2>&1
wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
python3 "$here/thread_cpu.py" snapshot "$pid" > "$work/after.json"
python3 "$here/thread_cpu.py" diff "$work/before.json" "$work/after.json" $((c * j)) "$wall" > "$out/cpu.md"
curl -s http://127.0.0.1:9984/metrics > "$out/metrics.txt" || true
kill "$pid"; wait "$pid" 2>/dev/null || true
report() { "$perf" report -i "$work/perf.data" --stdio --no-children -g none --percent-limit 0.3 "$@" 2>/dev/null | grep -v '^$'; }
report --sort comm > "$out/by-thread.txt"
report --sort dso > "$out/by-dso.txt"
# Thread names lose their numbers (a pool's threads together), as in thread_cpu.py.
"$perf" script -i "$work/perf.data" -F comm,tid,ip,sym --hide-call-graph 2>/dev/null |
  awk '{ comm = $1; gsub(/-?[0-9]+$/, "", comm); $1 = ""; $2 = ""; $3 = ""; sym = $0; sub(/^ +/, "", sym)
         if (sym == "") sym = "[unknown]"; n[comm "\t" sym]++; t++ }
       END { for (k in n) printf "%6.2f%%\t%s\n", 100 * n[k] / t, k }' |
  { sort -rn || true; } | head -60 > "$out/by-symbol.txt"  # sort may die of SIGPIPE after the top 60
log "$(grep -m1 'proofs/s' "$out/loadtest.txt" || head -1 "$out/loadtest.txt")"
