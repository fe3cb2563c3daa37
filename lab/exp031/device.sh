#!/usr/bin/env bash
# Experiment 031's device calls: the steps of lab/exp019/run.sh it needs, in one call on
# one machine start (a warm machine is given back 30 s after a call), results packed into
# $OUT/exp031.tar.xz after each step so that a call cut short still returns what it made.
# The checkout is over the tool's 64 MiB with lab/results in it:
# `scripts/device-tree.sh aside` before the call, `back` after.
#
#   lab/exp031/device.sh [STEP ...]     (default: keys check verified latency)
#
# Steps: keys (KEY_SET, default dev keys and the SHA-256 circuit's on both curves); check
# (gpu-check kernels, batch and seam, with CHECK_ENV's settings if any); verified (bench
# with the self-check on, VERIFIED_KEYS, default 2^16 and 2^20 keys on both curves);
# latency (LATENCY_VARIANTS, default old against new, on LATENCY_KEYS, ROUNDS rounds,
# LATENCY_LIMIT seconds in all, default 300);
# batch (bench --batch of BATCHES, default 1 16 32, of old and new, BATCH_VARIANTS adds;
# Nsight Compute at PROF_BATCHES, default 16, none for no profile); daemon (old against
# new, no self-check, c = 64; DAEMON_ENV adds a variant); profile (Nsight Compute per
# kernel of lone 2^16 proofs, both curves, both builds); tail (run.sh's device step: this
# build's daemon with DEVICE_VARIANTS, ROUNDS rounds, TAIL_LIMIT seconds, default 400). Binaries in .carry as run.sh
# expects (zkpipe, zkpipe-bench, zkpipe-gpu-check, zkpipe-old; sha-bn and sha-bls r1cs and witness from
# `CIRCUIT=sha256_512 lab/circuits/build.sh`).
#
# Runs 1 and 2 (lab/experiments/031-*) ran `keys check checkdiag verified latency batch
# daemon profile` with builds, since reverted, that had signed digits
# (ZKPIPE_CUDA_DIGITS=unsigned their diagnostic switch, VARIANTS adding `unsigned`) and
# one reduce launch per batch (ZKPIPE_CUDA_BATCH_REDUCE=off, the `perproof` batch variant
# and DAEMON_ENV); checkdiag was `check` with CHECK_ENV set to those switches. Their
# patches are in lab/results/exp031-batched-reduce/.
set -uo pipefail
export WORK=${WORK:-lab/work/dev}
# EXP names the results (later experiments reuse these steps: EXP=exp032 ...).
exp=${EXP:-exp031}
out=${OUT:?OUT}/$exp
mkdir -p "$out"
run=lab/exp019/run.sh
pack() { tar cJf "$OUT/$exp.tar.xz" -C "$OUT" "$exp"; }
step() { # name timeout command...
  local name=$1 limit=$2
  shift 2
  echo "[$(date +%T)] $name" | tee -a "$out/device.log"
  timeout "$limit" "$@" > "$out/$name.log" 2>&1 || echo "[$(date +%T)] $name: exit $?" | tee -a "$out/device.log"
  pack
}
steps=${*:-keys check verified latency}
for s in $steps; do
  case $s in
    keys)
      KEYS=${KEY_SET:-"bn13 bn14 bn16 bn20 bls13 bls16 bls20 sha-bn sha-bls"} \
        step keys 200 "$run" keys "$out/keys" ;;
    check) step check 200 "$run" check "$out/check" ;;
    verified)
      for k in ${VERIFIED_KEYS:-bn16 bls16 bn20 bls20}; do
        step "verified-$k" 90 "$WORK/bin/zkpipe-bench" bench "$WORK/keys/$k.zkey" "$WORK/keys/$k.wtns" \
          --backend cuda --trusted-key --runs 3 --warmup 1
      done ;;
    latency)
      KEYS=${LATENCY_KEYS:-"bn13 bn16 bn20 bls13 bls16 bls20 sha-bn sha-bls"} VARIANTS=${LATENCY_VARIANTS:-"old new"} \
        ROUNDS=${ROUNDS:-3} step latency "${LATENCY_LIMIT:-300}" "$run" latency "$out/latency" ;;
    batch)
      KEYS=bn14 BATCHES=${BATCHES:-"1 16 32"} BATCH_VARIANTS="new old ${BATCH_VARIANTS:-}" ROUNDS=${ROUNDS:-2} \
        PROF_BATCHES=${PROF_BATCHES:-16} step batch 240 "$run" batchprof "$out/batch" ;;
    daemon) NOCHECK=1 ROUNDS=${DAEMON_ROUNDS:-4} step daemon 200 "$run" daemon "$out/daemon" ;;
    profile) KEYS="bn16 bls16" RUNS=3 step profile 200 "$run" profile "$out/profile" ;;
    tail) step tail "${TAIL_LIMIT:-400}" "$run" device "$out/tail" ;;
    *) echo "unknown step $s" >&2; exit 2 ;;
  esac
done
