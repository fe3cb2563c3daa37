#!/usr/bin/env bash
# Issue 42's GPU scaling cells on a machine of several GPUs: one daemon on the first G GPUs
# (CUDA_VISIBLE_DEVICES), two binaries interleaved, round by round.
#
#   lab/exp042/scaling.sh OUT_DIR BIN_A [BIN_B] [ROUNDS=3] [GPUS="1 2"] [LABELS="before after"]
#
# BIN_A/BIN_B (BIN_B may be "" for one binary alone) are folders holding `zkpipe` and `zkpipe-bench` (scripts/build-cuda.sh). Keys
# are made there once with BIN_A (BN254 dev keys, lab/lib/harness.sh): 2^14 for small
# proofs and, with BIG=1, 2^22 for 10-partition jobs. Each cell: a fresh state directory,
# `zkpipe serve --backend cuda` (BACKEND overrides; default config, trusted keys: the self-check stays on),
# the keys preloaded, then `zkpipe-bench loadtest`:
#   small: 2^14, 1 partition, C clients (SMALL_C, default 64 per GPU) x SMALL_J jobs (default 40)
#   big:   2^22, 10 partitions, BIG_C clients (default 16) x BIG_J jobs (default 2; BIG=1 only)
# Writes OUT_DIR/<label>-g<G>-<cell>-r<R>.{txt,json}, serve logs, and summary.txt (one
# line per cell: proofs/s and the loadtest's first line). SMALL=0 skips the small cells;
# TRACE=1 keeps each small cell's waterfall (<cell>.trace.json, lab/exp042/waterfall.py);
# EXTRA_A / EXTRA_B add TOML to each binary's daemon config; ENV_A / ENV_B set variables
# for its daemon (e.g. "ZKPIPE_CUDA_HOST_WAIT=block ZKPIPE_CUDA_PASS_TRACE=1"), SET_A / SET_B
# its `--set KEY=VALUE` overrides (words, e.g. "server.witness_inline_max=1MiB"), STATE_A /
# STATE_B its state directory (default WORK/zkpipe-state; e.g. /dev/shm/zkpipe-state to take
# the disk out of the accept path), made fresh for each cell, HOOK_A / HOOK_B a command run
# once the keys are preloaded, with the daemon's pid as its last word (e.g.
# "lab/exp042/renice.sh 5": the daemon's threads but the device's at nice 5). Each cell's
# line in summary.txt ends with the daemon's CPU seconds (user + system) and the host's TLB
# shootdowns over the cell, the host's busy CPU seconds over the cell (/proc/stat: every
# process, the load tool's included) and its cores, and
# <label>-g<G>-r<R>-threads.txt has its CPU by thread name when it stopped, and
# <label>-g<G>-r<R>-metrics.txt its Prometheus metrics (batch sizes, stage times).
# WORK=DIR keeps the work folder (the keys) for the next call on the same machine.
# PROBE=1 runs lab/exp042/probe.sh during each small cell (<cell>.probe: one core's speed
# under the cell's load; with PERF, the daemons' clock rate) and once idle (probe-idle.txt).
# SPLIT=1 runs G daemons of one GPU each instead of one daemon on G GPUs (the clients spread
# over them by loadtest --addr; CPU columns sum the daemons; files of daemon d end in d).
set -euo pipefail
out=${1:?output dir}
bins=("$(realpath "${2:?bin A}")"); [ -n "${3:-}" ] && bins+=("$(realpath "$3")")
rounds=${4:-3}
read -r -a gpus <<< "${5:-1 2}"
read -r -a labels <<< "${6:-before after}"
mkdir -p "$out"
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
work_dir
machine_info "$out/device.txt"
sizes=(14); [ "${BIG:-0}" = 1 ] && sizes+=(22)
here=$(dirname "$(realpath "$0")")
[ "${PROBE:-0}" = 1 ] && "$here/probe.sh" "$out/probe-idle.txt" 0
log "dev keys ${sizes[*]}"
dev_keys "${bins[0]}/zkpipe" "${sizes[@]}"
# A process's CPU seconds so far (user + system), from /proc.
cpu_seconds() { cat "${@/#//proc/}" | awk -v hz="$(getconf CLK_TCK)" '{ s += $14 + $15 } END { printf "%.2f", s / hz }'; }
# TLB shootdown interrupts so far, summed over the host's CPUs (/proc/interrupts).
tlb_shootdowns() { awk '$1 == "TLB:" { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i } END { print n + 0 }' /proc/interrupts; }
# The host's busy CPU seconds so far (every CPU's user, nice, system, irq, softirq and
# steal time, from /proc/stat): over a cell, less the daemon's, what the load tool took.
host_busy() { awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat; }
# Of that, the steal time: CPU the hypervisor gave to other guests (a noisy neighbour).
host_steal() { awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.2f", $9 / hz }' /proc/stat; }
# A process's CPU seconds by thread name (digits dropped, so a pool's threads add up),
# user and system apart; those of threads that have exited as "(exited)", and the total.
threads_cpu() {
  local hz; hz=$(getconf CLK_TCK)
  for t in /proc/"$1"/task/*; do
    printf '%s\t%s\n' "$(tr -d '0-9' < "$t/comm")" "$(awk '{ print $14, $15 }' "$t/stat")"
  done | awk -F'\t' -v hz="$hz" -v total="$(awk '{ print $14, $15 }' "/proc/$1/stat")" '
    { split($2, c, " "); u[$1] += c[1]; s[$1] += c[2]; n[$1]++; lu += c[1]; ls += c[2] }
    END { split(total, t, " ")
          for (k in u) printf "%-22s %4d threads  user %8.2f s  sys %8.2f s\n", k, n[k], u[k] / hz, s[k] / hz
          printf "%-22s %4s          user %8.2f s  sys %8.2f s\n", "(exited)", "", (t[1] - lu) / hz, (t[2] - ls) / hz
          printf "%-22s %4s          user %8.2f s  sys %8.2f s\n", "total", "", t[1] / hz, t[2] / hz }'
}
summary=$out/summary.txt
: > "$summary"
# Cell $cell's line in summary.txt ($1: its clients): the load tool's rate line (its
# first line before it learned to say how it packs the witness), then
# what the daemons (pids), the host's TLB and CPU (busy, steal) counted since the baselines
# (cpu0, tlb0, host0, steal0), which then move to now for the next cell.
cell_line() {
  local cpu1 tlb1 host1 steal1
  cpu1=$(cpu_seconds "${pids[@]/%//stat}") tlb1=$(tlb_shootdowns) host1=$(host_busy) steal1=$(host_steal)
  echo "$cell c=$1: $(grep -m1 'proofs/s' "$out/$cell.txt" || head -1 "$out/$cell.txt") daemon_cpu_s=$(awk -v a="$cpu1" -v b="$cpu0" 'BEGIN { printf "%.2f", a - b }') tlb_shootdowns=$((tlb1 - tlb0)) host_busy_cpu_s=$(awk -v a="$host1" -v b="$host0" 'BEGIN { printf "%.2f", a - b }') host_steal_s=$(awk -v a="$steal1" -v b="$steal0" 'BEGIN { printf "%.2f", a - b }') host_cores=$(nproc)" | tee -a "$summary"
  cpu0=$cpu1 tlb0=$tlb1 host0=$host1 steal0=$steal1
}
for r in $(seq "$rounds"); do
  for g in "${gpus[@]}"; do
    for i in "${!bins[@]}"; do
      bin=${bins[$i]} label=${labels[$i]}
      # EXTRA_A / EXTRA_B: TOML appended to the config of the first / second binary's
      # daemons (the same binary twice with two configs is an A/B of a setting).
      if [ "$i" = 0 ]; then extra=${EXTRA_A:-} vars=${ENV_A:-} sets=${SET_A:-} state=${STATE_A:-} hook=${HOOK_A:-}; else extra=${EXTRA_B:-} vars=${ENV_B:-} sets=${SET_B:-} state=${STATE_B:-} hook=${HOOK_B:-}; fi
      state=${state:-$work/zkpipe-state}
      # One daemon on the first g GPUs, or with SPLIT=1 g daemons of one GPU each (their
      # own ports, state directories, logs and metrics; the load tool's clients spread
      # over them): what two GPUs share in one process against what they share on the host.
      pids=() addrs=() tags=()
      if [ "${SPLIT:-0}" = 1 ]; then daemons=$(seq 0 $((g - 1))); else daemons=all; fi
      for d in $daemons; do
        if [ "$d" = all ]; then port=0 vis=$(seq -s, 0 $((g - 1))) tag="" dstate=$state
        else port=$d vis=$d tag=$d dstate=$state-$d; fi
        rm -rf "$dstate"
        set_args=(--set "server.state_dir=$dstate"); for kv in $sets; do set_args+=(--set "$kv"); done
        daemon_config $((50851 + port)) $((9864 + port)) "$extra"
        [ -z "$tag" ] || cp "$work/zkpipe.toml" "$work/zkpipe$tag.toml"
        log_file=$out/$label-g$g-r$r-serve$tag.log
        # shellcheck disable=SC2086 # vars: words of NAME=VALUE
        (cd "$work" && CUDA_VISIBLE_DEVICES=$vis exec env $vars "$bin/zkpipe" serve --config "zkpipe$tag.toml" --backend "${BACKEND:-cuda}" "${set_args[@]}") \
          > "$log_file" 2>&1 &
        pids+=($!) addrs+=("$ZKPIPE_SERVER") tags+=("$tag")
        for _ in $(seq 300); do grep -q serving "$log_file" && break; sleep 0.2; done
        for k in "${sizes[@]}"; do "$bin/zkpipe" preload "k$k" > /dev/null; done
        # shellcheck disable=SC2086 # hook: a command and its words
        [ -n "$hook" ] && $hook "${pids[-1]}" >> "$out/$label-g$g-r$r-hook$tag.txt" 2>&1
      done
      addr_list=$(IFS=,; echo "${addrs[*]}")
      cpu0=$(cpu_seconds "${pids[@]/%//stat}") tlb0=$(tlb_shootdowns) host0=$(host_busy) steal0=$(host_steal)
      if [ "${SMALL:-1}" = 1 ]; then
        cell=$label-g$g-small-r$r
        c=$(( ${SMALL_C:-64} * g ))
        trace=(); [ "${TRACE:-0}" = 1 ] && trace=(--trace "$out/$cell.trace.json")
        probe=""
        if [ "${PROBE:-0}" = 1 ]; then "$here/probe.sh" "$out/$cell.probe" 2 "${pids[@]}" & probe=$!; fi
        timeout 300 "$bin/zkpipe-bench" loadtest k14 "$work/w14.wtns" --addr "$addr_list" -c "$c" -j "${SMALL_J:-40}" -p 1 \
          --json "$out/$cell.json" "${trace[@]}" > "$out/$cell.txt" 2>&1 || echo "$cell: FAILED" >> "$summary"
        [ -z "$probe" ] || wait "$probe"
        cell_line "$c"
      fi
      if [ "${BIG:-0}" = 1 ]; then
        cell=$label-g$g-big-r$r
        timeout 300 "$bin/zkpipe-bench" loadtest k22 "$work/w22.wtns" --addr "$addr_list" -c "${BIG_C:-16}" -j "${BIG_J:-2}" -p 10 \
          --json "$out/$cell.json" > "$out/$cell.txt" 2>&1 || echo "$cell: FAILED" >> "$summary"
        cell_line "${BIG_C:-16}"
      fi
      for d in "${!pids[@]}"; do
        threads_cpu "${pids[$d]}" > "$out/$label-g$g-r$r-threads${tags[$d]}.txt"
        curl -s "http://127.0.0.1:$((9864 + d))/metrics" > "$out/$label-g$g-r$r-metrics${tags[$d]}.txt" || true
      done
      kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
    done
  done
done
