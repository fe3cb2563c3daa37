#!/usr/bin/env bash
# Issue 43's reference regime on a GPU machine (lab/experiments/043j-reference-regime.md):
# jobs of ten partitions of a BLS12-381 dev key with the SHA-256 witness profile, the
# daemon under `memory.device_limit` (default 16GiB), swept over concurrent clients.
#
#   lab/exp043/regime.sh OUT BIN STEP [ARGS...]
#
#   key CURVE LOG               synth (VALUES, default sha256) + `setup --dev --backend cuda`
#                               into WORK/keys/CURVE-LOG.zkey; the circuit is removed after
#                               (a 2^25 one is 14 GB of a 64 GiB disk); `inspect` of it. A
#                               step cut after its synth resumes at the setup (2^25
#                               BLS12-381 on one H200: synth 263 s, setup 119 s)
#   bench CURVE LOG LIMITS      `zkpipe-bench bench` of BATCHES (default "1 10") proofs a run,
#                               RUNS (default 2) runs and a warm-up, for each LIMIT ("none"
#                               in-core, or e.g. 16GiB, pinned): the stages
#   sweep NAME CURVE LOG CLIENTS JOBS VARIANT...
#                               `zkpipe-bench sweep` of CLIENTS ("1,2,4,8"), JOBS a client,
#                               10 partitions, for each VARIANT ('NAME: k=v; ...', as sweep
#                               takes it) in turn, one daemon at a time (T seconds in all),
#                               nvidia-smi sampled every 200 ms meanwhile; SWEEP_FLAGS are
#                               added to every sweep (e.g. --no-pack: witnesses as they are)
#
# The daemons' config (WORK/regime.toml): trusted keys, device_limit LIMIT (default 16GiB),
# at most PENDING (default 20) partitions accepted and unfinished, so the job store's
# witness files (~1 GiB a 2^25 partition) fit the disk beside the key; a streamed job
# beyond it is refused at its header and the sweep's clients retry. witness_sync = false:
# what is measured is proving, not the disk's sync of 10 GiB a job. Each daemon's state
# folder is under WORK/state (TMPDIR), on the disk. Everything a step prints goes to
# OUT/STEP-*.txt; WORK (default lab/work/regime, git-ignored) keeps the key for later calls
# while the machine stays the same.
set -uo pipefail
out=${1:?output dir}; bin=${2:?binary dir}; step=${3:?step}; shift 3
work=${WORK:-lab/work/regime}
values=${VALUES:-sha256}
backend=${BACKEND:-cuda}   # cpu: a smoke test of this script on a machine without a GPU
mkdir -p "$out" "$work/keys" "$work/state"
work=$(cd "$work" && pwd)

name() { echo "$1-$2"; }
wtns() { echo "$work/$(name "$1" "$2").wtns"; }

# nvidia-smi every 200 ms into FILE until the returned pid is killed.
smi() {
  command -v nvidia-smi > /dev/null || { : > "$1"; sleep 1000000 > /dev/null 2>&1 & echo $!; return; }
  nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader,nounits \
    -lms 200 > "$1" 2>/dev/null & echo $!
}
# Peak memory.used (MiB) and mean utilization (%) of a sampling FILE.
smi_summary() {
  awk -F', ' '{ if ($2 > m) m = $2; u += $3; n++ }
    END { printf "nvidia-smi: %d samples, peak memory.used %d MiB, mean utilization.gpu %.1f%%\n", n, m, n ? u / n : 0 }' "$1"
}

config() {
  cat > "$work/regime.toml" <<TOML
[server]
max_request_bytes = "64MiB"
witness_sync = false
[keys]
dir = "$work/keys"
checks = "trusted"
[memory]
device_limit = "${LIMIT:-16GiB}"
host_limit = "${HOST_LIMIT:-auto}"
[pipeline]
max_partitions_per_job = 10
max_pending_partitions = ${PENDING:-20}
TOML
}

case $step in
  key)
    curve=$1; log=$2; n=$(name "$curve" "$log"); f=$out/key-$n.txt
    if [ ! -f "$work/keys/$n.zkey" ]; then
      [ -f "$work/$n.r1cs" ] && [ -f "$(wtns "$curve" "$log")" ] ||   # kept from a cut call
      /usr/bin/time -f "synth $n ($values): %e s, %M KiB" "$bin/zkpipe" synth --curve "$curve" \
        --domain "2^$log" --public 4 --seed 1 --values "$values" "$work/$n.r1cs" "$(wtns "$curve" "$log")" >> "$f" 2>&1
      /usr/bin/time -f "setup $n $backend: %e s wall, %U s user, %M KiB" timeout 500 "$bin/zkpipe" setup \
        --dev --seed 1 --backend "$backend" "$work/$n.r1cs" "$work/keys/$n.zkey.part" >> "$f" 2>&1 \
        && mv -n "$work/keys/$n.zkey.part" "$work/keys/$n.zkey"
      rm -f "$work/$n.r1cs" "$work/keys/$n.zkey.part"
    fi
    [ -f "$work/keys/$n.zkey" ] || { echo "no key" >> "$f"; exit 1; }
    "$bin/zkpipe" inspect "$work/keys/$n.zkey" >> "$f" 2>&1
    "$bin/zkpipe" inspect "$(wtns "$curve" "$log")" >> "$f" 2>&1
    df -h "$work" >> "$f" ;;
  bench)
    curve=$1; log=$2; limits=$3; n=$(name "$curve" "$log"); f=$out/bench-$n.txt
    for limit in $limits; do
      for batch in ${BATCHES:-1 10}; do
        flags=(--trusted-key --backend "$backend" --runs "${RUNS:-2}" --warmup 1 --batch "$batch")
        [ "$limit" != none ] && flags+=(--device-limit "$limit" --pin)
        echo "== $n limit $limit batch $batch" >> "$f"
        p=$(smi "$out/bench-$n-$limit-$batch.csv")
        timeout 300 "$bin/zkpipe-bench" bench "${flags[@]}" "$work/keys/$n.zkey" \
          "$(wtns "$curve" "$log")" >> "$f" 2>&1 || echo "FAILED rc=$?" >> "$f"
        kill "$p"; smi_summary "$out/bench-$n-$limit-$batch.csv" >> "$f"
      done
    done ;;
  sweep)
    # One sweep (one daemon) a variant, in turn: a sweep starts all its variants' daemons
    # at once, and two daemons holding a 2^25 BLS12-381 key (32.5 GB, and a 22 GiB pinned
    # copy each) do not fit a 128 GB machine (lab 043k: the kernel killed one).
    label=$1; curve=$2; log=$3; clients=$4; jobs=$5; shift 5; n=$(name "$curve" "$log")
    config
    started=$(date +%s)
    for v in "$@"; do
      vname=${v%%:*}; f=$out/sweep-$label-$vname.txt
      left=$(( ${T:-560} - ($(date +%s) - started) )); [ "$left" -gt 30 ] || break
      p=$(smi "$out/sweep-$label-$vname.csv")
      TMPDIR=$work/state timeout "$left" "$bin/zkpipe-bench" sweep --config "$work/regime.toml" \
        --backend "$backend" --out "$out/sweep-$label-$vname" -c "$clients" -j "$jobs" -p 10 \
        --timeout 20m ${SWEEP_FLAGS:-} --variant "$v" "$n" "$(wtns "$curve" "$log")" > "$f" 2>&1 ||
        echo "FAILED rc=$?" >> "$f"
      kill "$p"; smi_summary "$out/sweep-$label-$vname.csv" >> "$f"
      df -h "$work" >> "$f"
    done ;;
  *) echo "regime.sh: key, bench or sweep" >&2; exit 2 ;;
esac
