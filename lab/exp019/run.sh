#!/usr/bin/env bash
# Issue 17's device steps (experiments 019, 021, 022 and 023), one step per call, on the GPU
# machine.
#
#   lab/exp019/run.sh STEP OUT_DIR
#
# The checkout's tracked files alone are over the device tool's 64 MiB: run
# `scripts/device-tree.sh aside` before a device call (lab/results, which no step here
# reads, leaves the checkout) and `scripts/device-tree.sh back` after.
#
# Binaries: .carry/zkpipe.xz, .carry/zkpipe-bench.xz and .carry/zkpipe-gpu-check.xz (this
# build), and .carry/zkpipe-old.xz (the build before, for the side-by-side; with
# .carry/zkpipe-bench-old.xz if it has one). WORK (default
# lab/work/dev) keeps keys between calls while the machine is warm. Keys named sha-bn
# and sha-bls are the SHA-256 circuit (lab/circuits/sha256_512.circom, 59,281
# constraints, domain 2^16, a witness of 0s and 1s): its r1cs and witness travel as
# .carry/sha-bn.r1cs.xz and .carry/sha-bn.wtns.xz (from `CIRCUIT=sha256_512
# lab/circuits/build.sh`), and setup --dev makes the key here. STEP:
#   check   zkpipe-gpu-check (with CHECK_ENV's VAR=value settings): the kernels against the
#           CPU up to 2^16 (the GPU reduce with w as scalars and in Montgomery form among
#           them); the batched MSM against the CPU
#           for every witness distribution (all zeros, all ones, mixed, random, all r − 1),
#           with and without constant work; its timings against sppark at 2^13..2^20; then
#           the seam (dev keys bound through CudaDevices, lone and batched passes, w in
#           both forms, proofs self-checked).
#   constant zkpipe-gpu-check constant (experiment 023) once per ZKPIPE_CUDA_CONSTANT mode
#           (MODES, default mask full both): every witness distribution's device stage
#           against the CPU and timed, constant work off and on, and the spread.
#   oneshot whole `zkpipe prove` processes (KEYS, default bn16), --backend cpu and cuda,
#           with and without --constant-work, ROUNDS rounds (default 3) interleaved
#           (experiment 023: what drawing the mask at binding costs a one-shot proof).
#   keys    synth + setup --dev: KEYS (default BN254 and BLS12-381 at 2^13, 2^16, 2^20, and
#           BN254 2^14).
#   latency `zkpipe-bench bench --backend cuda --trusted-key --no-verify` per key, interleaved:
#           old build, this build, this build with ZKPIPE_CUDA_LONE_MSM=sppark, this
#           build with --constant-work, this build with ZKPIPE_CUDA_TABLES=off (notables),
#           this build with ZKPIPE_CUDA_HOST_SCALARS=1 (hostscalars: the witness converted
#           on the host, as before experiment 022), this build with ZKPIPE_CUDA_RUN=R
#           (runR: R pieces per run, run0 the bit sums over pieces as before experiment
#           024), this build with ZKPIPE_CUDA_PIECE_ORDER=plan (pieceplan: piece sums in
#           plan order, as before experiment 030), this build with ZKPIPE_CUDA_PIECE=L
#           (pieceL: every plan's piece length forced, experiment 032), --constant-work with
#           ZKPIPE_CUDA_CONSTANT=full or both (constfull, constboth: experiment 023)
#           (VARIANTS picks); ROUNDS rounds
#           (default 2).
#   cpu     whole `zkpipe prove --backend cpu` processes (16 cores) of bn16 and bn20, default
#           key checks: the old build, this build with the checked-key cache off, with it
#           warm, and --trusted-key; ROUNDS rounds interleaved (/usr/bin/time).
#   daemon  the 2^14 key at c = 64 (16 jobs per client, 1 partition), `zkpipe-bench sweep` of the
#           old build (when .carry has one) and this one, first in turn, ROUNDS rounds interleaved
#           (default 2); default pipeline config with queue_depth = 64 (experiment 010),
#           trusted keys. DAEMON_ENV adds a variant: this build with that environment
#           (e.g. ZKPIPE_CUDA_TABLES=off). NOCHECK=1 turns the self-check off for all.
#   hostprof the daemon step's cell (this build) under `perf record -a` (flat, no call
#           graphs), then perf's per-thread-name and per-symbol summaries: where the host's
#           CPU goes at ~550 proofs/s (experiment 025). The GPU machine has no perf:
#           .carry/perfkit.tar.xz is the devbox's /usr/bin/perf with its shared libraries
#           (and loader), run as perfkit/run-perf; the binary should keep its symbols
#           (`strip -g`, not `strip`).
#   store   this build's daemon at the same cell, variants (STORE_VARIANTS picks; default
#           all): the default, spill (witnesses over 64 KiB as files:
#           server.witness_inline_max="64KiB"), nocheck (pipeline.self_check=false), and
#           both; ROUNDS rounds (default 2) interleaved.
#   device  this build's daemon at the same cell, variants (DEVICE_VARIANTS picks; default
#           default passes1 passes3 batch16): device.passes 1, 3 or 4 (with as many
#           workers), device.batch=16, tail16 (16 tail workers and threads), p1tail16
#           (both), tb1 and tb16 (tail.batch 1 and 16: self-checks one by one, or 16
#           together), nocheck (no self-check), tail12 and tail16w (12 or 16 tail workers,
#           the default threads), nctail12, nctail16, nctail32 and nctb8 (no self-check
#           with 12, 16 or 32 tail workers, or tail.batch=8), ncpasses1 (no self-check,
#           one pass at a time), ncsh05, ncsh1, ncsh2 (no self-check,
#           device.overlap_share 0.5, 1 or 2; experiment 034); ROUNDS rounds (default 2)
#           interleaved (experiment
#           026: what holds the device once it is ~99% busy).
#   statedir this build's daemon at the same cell with its state folder on the disk and in
#           /dev/shm, ROUNDS rounds (default 2) interleaved, and dd's sync timings of the
#           disk (experiment 026: what the job store's writes cost).
#   tail    this build's daemon at the same cell, variants: the default, 8 and 16 tail workers,
#           and the self-check off (what holds the daemon once the GPU is 90% busy).
#   snarkrs whole CPU processes side by side on bn16 and bn20 (BN254; snarkrs has no
#           BLS12-381): `zkpipe prove --backend cpu` (default checks, checked-key cache
#           warm; and --trusted-key) and `snarkrs g16p` (.carry/snarkrs.xz: `cargo install
#           snarkrs` 0.1.0, CPU backend, built on the devbox, not kept in the repo), ROUNDS
#           rounds interleaved; each snarkrs proof verified by `zkpipe verify`.
#   rapidsnark whole CPU processes side by side (BN254; rapidsnark has no BLS12-381):
#           `zkpipe prove --backend cpu` (default checks with the checked-key cache warm,
#           and --trusted-key) and rapidsnark's `prover` (.carry/rapidsnark.xz: iden3/rapidsnark
#           built statically on the devbox, outside the repo, not kept in it) on KEYS
#           (default sha-bn bn16 bn20), ROUNDS rounds interleaved (default 3); every proof
#           verified by `zkpipe verify`.
#   cpuprof where a CPU proof's time goes, on KEYS (default sha-bn bn16 bn20): whole processes
#           of the old build, this build (`prove --backend cpu`, default checks, cache warm
#           for each build's own digest; each also once with --timings) and rapidsnark,
#           ROUNDS rounds interleaved
#           (default 3), every proof verified; then one run each of this build and
#           rapidsnark under `perf record` (perfkit, as hostprof; NO_PERF=1 skips it), with
#           perf's per-symbol summaries (experiment 027). CPU_VARIANTS picks and orders the
#           runs (default "zkpipe-old zkpipe rapidsnark"; also thp: glibc's huge-page
#           tunable set in the environment, mimalloc: ZKPIPE_ALLOCATOR=mimalloc); the order
#           reverses every other round.
#   msmplan the CPU MSM's window width and point groups on 16 threads (.carry/msm_bench.xz:
#           `cargo build --release -p zkpipe-core --example msm_bench`): BN254 G1 at 2^LOG
#           (default 16), WINDOWS (default 10 11 12 13 14 16) × POINT_GROUPS (default 1 2 4),
#           and the planner's own choice; RUNS runs each (default 9; experiment 027).
#   quotient the CPU quotient stage against arkworks' FFTs (.carry/quotient_bench.xz:
#           `cargo build --release -p zkpipe-core --example quotient_bench`) at 2^LOGS
#           (default 16 20), THREADS (default 1,4,8,16), RUNS runs (default 9; experiment 028).
#   backends whole one-shot `zkpipe prove` processes, default key checks (cache warm), on
#           --backend cpu and cuda, per key (KEYS, default bn16 bn18 bn20 bls16 bls18 bls20),
#           ROUNDS rounds interleaved (default 3), every proof verified: where a one-shot
#           proof is faster on the GPU than on the CPU (experiment 029, --backend auto).
#   fixtures every bundled fixture (both curves) proved on the GPU and self-checked, with
#           and without --constant-work.
#   snarkrs-cuda warm GPU proofs side by side (BN254): `snarkrs bench --backend cuda --mode
#           warm` (.carry/snarkrs-cuda.xz: `cargo install snarkrs --features cuda` 0.1.0,
#           built on the devbox, not kept in the repo; it compiles its kernels with NVRTC
#           at first use, so its first variant pays that) on artifact dirs made from KEYS
#           (default bn13 bn16 bn20: the key, the witness, zkpipe's export-vk and a public.json
#           from a zkpipe proof), then `zkpipe-bench bench --backend cuda --trusted-key --no-verify`
#           on the same files; ROUNDS rounds interleaved (default 2). snarkrs verifies
#           every proof it times (outside the timed region).
#   profile Nsight Compute's per-kernel summary (kernel time, --clock-control none) of
#           `zkpipe-bench bench --backend cuda` (1 warm-up, RUNS runs, default 3) per key (KEYS,
#           default bn14 bn20 bls20), each build (.carry's zkpipe, and zkpipe-old when it
#           is there): where a proof's GPU time goes, kernel by kernel (experiment 024).
#   batchprof the batched device pass (experiment 030): `zkpipe-bench bench --batch K --backend
#           cuda --trusted-key --no-verify` of KEYS (default bn14) for K in BATCHES (default
#           1 2 4 8 16 32), each of BATCH_VARIANTS (default "new old": this build, and
#           zkpipe-old when .carry has it; pieceplan: this build with
#           ZKPIPE_CUDA_PIECE_ORDER=plan; conn32: CUDA_DEVICE_MAX_CONNECTIONS=32, where
#           the others run with CUDA's default of 8; blocking: CUDA_LAUNCH_BLOCKING=1, every
#           kernel alone on the GPU, to see what the concurrent ones overlap; pieceL:
#           ZKPIPE_CUDA_PIECE=L),
#           ROUNDS rounds interleaved (default 2), with ZKPIPE_CUDA_PASS_TRACE=1 (when each
#           of a pass's MSMs ended; old builds ignore it); then Nsight Compute's per-kernel
#           summary of this build at K in PROF_BATCHES (default 1 16): how a pass's time
#           grows with its proofs, and which kernels make the part that does not
#           (PROF_ENV: VAR=value settings for the sections' run; PROF_BATCHES=none skips
#           the profiles).
set -euo pipefail
step=${1:?step}; out=${2:?out}
work=${WORK:-lab/work/dev}
mkdir -p "$out" "$work/keys" "$work/bin"
work=$(cd "$work" && pwd)
log() { echo "[$(date +%T)] $*" | tee -a "$out/steps.log"; }
unpack() { # name
  local b=$work/bin/$1
  [ -x "$b" ] && cmp -s <(xz -dc ".carry/$1.xz") "$b" || { xz -dc ".carry/$1.xz" > "$b"; chmod +x "$b"; }
}
for b in zkpipe zkpipe-bench zkpipe-gpu-check zkpipe-old zkpipe-bench-old snarkrs rapidsnark msm_bench quotient_bench; do [ -e ".carry/$b.xz" ] && unpack "$b"; done
bin=$work/bin/zkpipe bench=$work/bin/zkpipe-bench
# The build before: its `bench` is zkpipe-bench-old's, or zkpipe-old's own for a build from
# before zkpipe-bench existed. Its daemons are swept by this build's zkpipe-bench (--zkpipe).
old=$work/bin/zkpipe-old old_bench=$work/bin/zkpipe-bench-old
[ -x "$old_bench" ] || old_bench=$old
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a "$out/steps.log"

# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
keys=${KEYS:-bn13 bn14 bn16 bn20 bls13 bls16 bls20}
variants=${VARIANTS:-old new sppark constant}
variant_sweep() { # name: this build's daemon at the daemon step's cell, the variants in
  # ${variants[@]}, ROUNDS rounds interleaved; the table in $out/NAME.txt, the sweep in $out/NAME
  timeout 500 "$bench" sweep --config "$work/zkpipe.toml" --backend cuda --out "$out/$1" --rounds "${ROUNDS:-2}" \
    "${variants[@]}" bn14 "$work/keys/bn14.wtns" -c 64 -j 16 -p 1 > "$out/$1.txt" 2>&1 || log "sweep $1 failed"
  grep -A8 "over rounds" "$out/$1.txt" | tee -a "$out/steps.log"
}
make_keys() {
  for k in $keys; do
    case $k in
      sha-*) circuit_key "$k" ;;
      bn*) key "$k" bn254 "${k//[a-z]/}" ;;
      bls*) key "$k" bls12-381 "${k//[a-z]/}" ;;
    esac
  done
}
circuit_key() { # name: a dev key for the carried r1cs and witness of that name
  local name=$1
  if [ ! -e "$work/keys/$name.zkey" ]; then
    log "setup --dev $name (carried r1cs)"
    xz -dc ".carry/$name.r1cs.xz" > "$work/$name.r1cs"
    xz -dc ".carry/$name.wtns.xz" > "$work/keys/$name.wtns"
    "$bin" setup --dev --seed 1 "$work/$name.r1cs" "$work/keys/$name.zkey" 2>>"$out/steps.log"
    rm -f "$work/$name.r1cs"
  fi
}

case $step in
check)
  # CHECK_ENV: VAR=value settings for every check (a diagnostic path's own checks).
  # shellcheck disable=SC2086 # CHECK_ENV is a list of VAR=value
  [ -n "${CHECK_ENV:-}" ] && export ${CHECK_ENV} && log "checks with $CHECK_ENV"
  log "gpu-check kernels"
  timeout 300 "$work/bin/zkpipe-gpu-check" 16 3 20 kernels > "$out/gpu-check-kernels.txt" 2>&1 || true
  tail -1 "$out/gpu-check-kernels.txt" | tee -a "$out/steps.log"
  log "gpu-check batch"
  timeout 400 "$work/bin/zkpipe-gpu-check" 14 7 20 batch > "$out/gpu-check-batch.txt" 2>&1 || true
  tail -1 "$out/gpu-check-batch.txt" | tee -a "$out/steps.log"
  log "gpu-check seam"
  timeout 150 "$work/bin/zkpipe-gpu-check" 16 5 16 seam > "$out/gpu-check-seam.txt" 2>&1 || true
  tail -1 "$out/gpu-check-seam.txt" | tee -a "$out/steps.log"
  ;;
constant)
  # Experiment 023: every witness distribution through a resident key's device stage,
  # constant work off and on, for each way of keeping it constant.
  for mode in ${MODES:-mask full both}; do
    log "gpu-check constant ($mode)"
    ZKPIPE_CUDA_CONSTANT=$mode timeout 400 "$work/bin/zkpipe-gpu-check" 16 "${RUNS:-9}" 20 constant \
      > "$out/gpu-check-constant-$mode.txt" 2>&1 || true
    grep -E 'spread|MISMATCH|error|ALL' "$out/gpu-check-constant-$mode.txt" | tee -a "$out/steps.log"
  done
  ;;
oneshot)
  # Experiment 023: whole `zkpipe prove` processes with and without --constant-work (the
  # mask is drawn and its sums made at binding, every run), --trusted-key, on the CPU and
  # the GPU, ROUNDS rounds interleaved (/usr/bin/time; every proof self-checked).
  keys=${KEYS:-bn16} make_keys
  for round in $(seq 1 "${ROUNDS:-3}"); do
    for k in ${KEYS:-bn16}; do
      for backend in cpu cuda; do
        for v in default constant; do
          extra=(); [ "$v" = constant ] && extra=(--constant-work)
          /usr/bin/time -o "$work/time.txt" -f "%e s %M KiB" "$bin" prove "$work/keys/$k.zkey" \
            "$work/keys/$k.wtns" "$work/p.json" "$work/pub.json" --backend "$backend" --trusted-key \
            "${extra[@]}" > /dev/null 2>>"$out/steps.log" || echo "FAILED" > "$work/time.txt"
          echo "oneshot $k $backend $v r$round: $(tail -1 "$work/time.txt")" | tee -a "$out/steps.log"
        done
      done
    done
  done
  ;;
keys)
  make_keys
  ls -la "$work/keys" | tee -a "$out/steps.log"
  ;;
latency)
  make_keys
  runs=${RUNS:-15}
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for k in $keys; do
      for v in $variants; do
        args=(bench "$work/keys/$k.zkey" "$work/keys/$k.wtns" --backend cuda --trusted-key --no-verify
              --runs "$runs" --warmup 3 --json "$out/$k-$v-r$round.json")
        case $v in
          old) cmd=("$old_bench" "${args[@]}") ;;
          new) cmd=("$bench" "${args[@]}") ;;
          sppark) cmd=(env ZKPIPE_CUDA_LONE_MSM=sppark "$bench" "${args[@]}") ;;
          constant) cmd=("$bench" "${args[@]}" --constant-work) ;;
          constfull) cmd=(env ZKPIPE_CUDA_CONSTANT=full "$bench" "${args[@]}" --constant-work) ;;
          constboth) cmd=(env ZKPIPE_CUDA_CONSTANT=both "$bench" "${args[@]}" --constant-work) ;;
          notables) cmd=(env ZKPIPE_CUDA_TABLES=off "$bench" "${args[@]}") ;;
          hostscalars) cmd=(env ZKPIPE_CUDA_HOST_SCALARS=1 "$bench" "${args[@]}") ;;
          run[0-9]*) cmd=(env ZKPIPE_CUDA_RUN="${v#run}" "$bench" "${args[@]}") ;;
          piece[0-9]*) cmd=(env ZKPIPE_CUDA_PIECE="${v#piece}" "$bench" "${args[@]}") ;;
          pieceplan) cmd=(env ZKPIPE_CUDA_PIECE_ORDER=plan "$bench" "${args[@]}") ;;
        esac
        timeout 120 "${cmd[@]}" > "$out/$k-$v-r$round.md" 2>&1 || log "FAILED $k $v r$round"
        echo "$k $v r$round: $(grep -m1 'prove total' "$out/$k-$v-r$round.md")" | tee -a "$out/steps.log"
      done
    done
  done
  ;;
cpu)
  keys="bn16 bn20" make_keys
  rm -rf "$work"/key-cache-*
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for k in bn16 bn20; do
      cache=$work/key-cache-$k
      for v in old off warm trusted; do
        b=$bin; extra=(); env=(ZKPIPE_KEY_CACHE="$cache")
        case $v in
          old) b=$work/bin/zkpipe-old ;;
          off) env=(ZKPIPE_KEY_CACHE=off) ;;
          warm) [ -d "$cache" ] || env "${env[@]}" "$bin" prove "$work/keys/$k.zkey" "$work/keys/$k.wtns" \
                  "$work/p.json" "$work/pub.json" --backend cpu --no-verify > /dev/null 2>&1 ;;
          trusted) extra=(--trusted-key) ;;
        esac
        env "${env[@]}" /usr/bin/time -o "$work/time.txt" -f "%e s %M KiB" "$b" prove "$work/keys/$k.zkey" \
          "$work/keys/$k.wtns" "$work/p.json" "$work/pub.json" --backend cpu "${extra[@]}" > /dev/null 2>&1 \
          || echo "FAILED" > "$work/time.txt"
        echo "cpu $k $v r$round: $(tail -1 "$work/time.txt")" | tee -a "$out/steps.log"
      done
    done
  done
  ;;
daemon)
  small_daemon_config
  # NOCHECK=1: every variant without the self-check (the issue's targets are stated so).
  [ "${NOCHECK:-}" = 1 ] && printf 'self_check = false\n' >> "$work/zkpipe.toml"
  for round in $(seq 1 "${ROUNDS:-2}"); do
    # The first build of a round leaves its spilled witnesses' writeback to the next:
    # the order turns each round, so none always goes first (experiment 026).
    order="old new ${DAEMON_ENV:+env}"
    [ $((round % 2)) = 0 ] && order=$(echo "$order" | awk '{for (i = NF; i > 0; i--) printf "%s ", $i}')
    for v in $order; do
      b=$bench; daemon=(); [ $v = old ] && daemon=(--zkpipe "$old")
      [ $v = old ] && [ ! -x "$old" ] && continue
      [ $v = env ] && b="env $DAEMON_ENV $bench"
      log "sweep $v r$round"
      # shellcheck disable=SC2086 # $b is a command with its environment
      timeout 200 $b sweep "${daemon[@]}" --config "$work/zkpipe.toml" --backend cuda --out "$out/daemon-$v-r$round" \
        bn14 "$work/keys/bn14.wtns" -c 64 -j 16 -p 1 > "$out/daemon-$v-r$round.txt" 2>&1 || log "sweep $v r$round failed"
      grep -i "proofs/s" "$out/daemon-$v-r$round.txt" | tail -3 | tee -a "$out/steps.log"
    done
  done
  ;;
snarkrs | rapidsnark)
  # The other prover's whole process against zkpipe's, both on the CPU.
  other=("$work/bin/$step"); [ "$step" = snarkrs ] && other+=(g16p)
  if [ "$step" = snarkrs ]; then keys=${KEYS:-bn16 bn20}; else keys=${KEYS:-sha-bn bn16 bn20}; fi
  make_keys
  for round in $(seq 1 "${ROUNDS:-3}"); do
    for k in $keys; do
      cache=$work/key-cache-$k
      [ -d "$cache" ] || ZKPIPE_KEY_CACHE="$cache" "$bin" prove "$work/keys/$k.zkey" "$work/keys/$k.wtns" \
        "$work/p.json" "$work/pub.json" --backend cpu --no-verify > /dev/null 2>&1
      files=("$work/keys/$k.zkey" "$work/keys/$k.wtns" "$work/p.json" "$work/pub.json")
      for v in zkpipe trusted "$step"; do
        case $v in
          zkpipe) cmd=("$bin" prove "${files[@]}" --backend cpu) ;;
          trusted) cmd=("$bin" prove "${files[@]}" --backend cpu --trusted-key) ;;
          *) cmd=("${other[@]}" "${files[@]}") ;;
        esac
        rm -f "$work/p.json"
        ZKPIPE_KEY_CACHE="$cache" /usr/bin/time -o "$work/time.txt" -f "%e s %M KiB" "${cmd[@]}" > /dev/null 2>&1 \
          || echo "FAILED" > "$work/time.txt"
        ok=$("$bin" verify "$work/keys/$k.zkey" "$work/pub.json" "$work/p.json" 2>&1 | tail -1)
        echo "cpu $k $v r$round: $(tail -1 "$work/time.txt"), verify: $ok" | tee -a "$out/steps.log"
      done
    done
  done
  ;;
cpuprof)
  keys=${KEYS:-sha-bn bn16 bn20}
  lscpu | grep -E "^Model name|^CPU\(s\)|^Thread" | tee -a "$out/steps.log"
  echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)" | tee -a "$out/steps.log"
  make_keys
  if [ -z "${NO_PERF:-}" ]; then
    [ -e .carry/perfkit.tar.xz ] || { log "no .carry/perfkit.tar.xz"; exit 1; }
    [ -x "$work/perfkit/run-perf" ] || tar xJf .carry/perfkit.tar.xz -C "$work"
  fi
  perf=$work/perfkit/run-perf
  files() { echo "$work/keys/$1.zkey $work/keys/$1.wtns $work/p.json $work/pub.json"; }
  cpu_variant() { # who: sets envs and cmd for that run; fails where it cannot run here
    envs=(ZKPIPE_KEY_CACHE="$cache")
    cmd=("$bin" prove --backend cpu)
    case $1 in
      zkpipe-old) cmd=("$work/bin/zkpipe-old" prove --backend cpu) ;;
      zkpipe) ;;
      thp) envs+=(GLIBC_TUNABLES=glibc.malloc.hugetlb=1) ;;
      mimalloc) envs+=(ZKPIPE_ALLOCATOR=mimalloc) ;;
      rapidsnark) cmd=("$work/bin/rapidsnark") ;;
      *) log "unknown CPU variant $1"; return 1 ;;
    esac
    [ -x "${cmd[0]}" ]
  }
  for k in $keys; do
    cache=$work/key-cache-$k
    # Each build remembers the key under its own digest (experiment 029 changed the
    # digest's chunks), so each checks it once here, outside the timed runs.
    for b in "$bin" "$work/bin/zkpipe-old"; do
      # shellcheck disable=SC2046 # files() is four plain paths
      if [ -x "$b" ]; then
        ZKPIPE_KEY_CACHE="$cache" "$b" prove $(files "$k") --backend cpu --no-verify > /dev/null 2>&1 \
          || log "$b $k: the warm-up proof failed"
      fi
    done
    for round in $(seq 1 "${ROUNDS:-3}"); do
      order=${CPU_VARIANTS:-zkpipe-old zkpipe rapidsnark}
      [ $((round % 2)) = 0 ] && order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
      for who in $order; do
        cpu_variant "$who" || continue
        if [ "$who" != rapidsnark ]; then
          env "${envs[@]}" "${cmd[@]}" $(files "$k") --timings > /dev/null 2> "$out/timings-$who-$k-r$round.txt" \
            || log "$who $k failed"
        fi
        rm -f "$work/p.json"
        # Wall time from bash's microsecond clock (time's %e has 10 ms steps), peak RSS from time.
        t0=$EPOCHREALTIME
        env "${envs[@]}" /usr/bin/time -o "$work/time.txt" -f "%M KiB" "${cmd[@]}" $(files "$k") > /dev/null 2>&1 \
          || echo "FAILED" > "$work/time.txt"
        ms=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }')
        ok=$("$bin" verify "$work/keys/$k.zkey" "$work/pub.json" "$work/p.json" 2>&1 | tail -1)
        echo "cpu $k $who r$round: $ms ms $(tail -1 "$work/time.txt"), verify: $ok" | tee -a "$out/steps.log"
      done
    done
    [ -n "${NO_PERF:-}" ] && continue
    for who in zkpipe rapidsnark; do
      cpu_variant "$who" || continue
      # shellcheck disable=SC2046
      env "${envs[@]}" timeout 120 "$perf" record -F 999 -o "$work/perf.data" -- "${cmd[@]}" $(files "$k") \
        > /dev/null 2> "$out/perf-record-$who-$k.txt" || log "perf $who $k failed"
      "$perf" report -i "$work/perf.data" --stdio --no-children --percentage relative --sort dso,sym \
        2>/dev/null | grep -v '^#' | grep -v '^$' | sed -n 1,80p > "$out/perf-$who-$k.txt" || true
      rm -f "$work/perf.data"
    done
  done
  ;;
msmplan)
  b=$work/bin/msm_bench
  [ -x "$b" ] || { log "no .carry/msm_bench.xz"; exit 1; }
  log "planner's choice"
  MSM_BENCH_ONLY=ours "$b" "${LOG:-16}" "${RUNS:-9}" 16 bn254-g1 | tail -1 | tee -a "$out/steps.log"
  for c in ${WINDOWS:-10 11 12 13 14 16}; do
    for g in ${POINT_GROUPS:-1 2 4}; do
      MSM_BENCH_ONLY=ours MSM_BENCH_GROUPS=$g "$b" "${LOG:-16}" "${RUNS:-9}" 16 bn254-g1 "$c" | tail -1 \
        | tee -a "$out/steps.log"
    done
  done
  ;;
quotient)
  b=$work/bin/quotient_bench
  [ -x "$b" ] || { log "no .carry/quotient_bench.xz"; exit 1; }
  for log_n in ${LOGS:-16 20}; do
    "$b" "$log_n" "${RUNS:-9}" "${THREADS:-1,4,8,16}" | tee -a "$out/steps.log"
  done
  ;;
hostprof)
  small_daemon_config
  [ -e .carry/perfkit.tar.xz ] || { log "no .carry/perfkit.tar.xz"; exit 1; }
  [ -x "$work/perfkit/run-perf" ] || tar xJf .carry/perfkit.tar.xz -C "$work"
  perf=$work/perfkit/run-perf
  log "sweep under perf record -a"
  timeout 200 "$perf" record -F 1999 -a -o "$work/perf.data" -- "$bench" sweep --config "$work/zkpipe.toml" \
    --backend cuda --out "$out/hostprof" bn14 "$work/keys/bn14.wtns" -c 64 -j 16 -p 1 \
    > "$out/hostprof.txt" 2>"$out/perf-record.txt" || log "sweep under perf failed"
  grep -i "proofs/s" -A1 "$out/hostprof.txt" | head -2 | tee -a "$out/steps.log"
  # report FILE LINES ARGS...: perf's summary, comment lines dropped, its first LINES lines
  # (cut after perf is done, so that no pipe closes early under pipefail).
  report() {
    local f=$1 n=$2; shift 2
    "$perf" report -i "$work/perf.data" --stdio --percentage relative "$@" > "$f.full" 2>/dev/null || true
    grep -v '^#' "$f.full" | grep -v '^$' | sed -n "1,${n}p" > "$f" || true
    rm -f "$f.full"
  }
  report "$out/perf-comm.txt" 40 --sort comm
  report "$out/perf-pid.txt" 40 --sort pid,comm
  report "$out/perf-comm-dso.txt" 60 --sort comm,dso
  for comm in $(awk '$1 ~ /%$/ && $1+0 >= 1 {print $2}' "$out/perf-comm.txt"); do
    report "$out/perf-sym-$comm.txt" 80 --comm "$comm" --sort pid,dso,sym
  done
  report "$out/perf-all.txt" 100000 --sort pid,comm,dso,sym
  xz -f "$out/perf-all.txt"
  rm -f "$work/perf.data"
  ;;
store)
  small_daemon_config
  variants=()
  for v in ${STORE_VARIANTS:-default spill nocheck both}; do
    case $v in
      default) variants+=(--variant 'default:') ;;
      spill) variants+=(--variant 'spill: server.witness_inline_max="64KiB"') ;;
      nocheck) variants+=(--variant 'nocheck: pipeline.self_check=false') ;;
      both) variants+=(--variant 'both: server.witness_inline_max="64KiB"; pipeline.self_check=false') ;;
    esac
  done
  variant_sweep store
  ;;
device)
  small_daemon_config
  variants=()
  for v in ${DEVICE_VARIANTS:-default passes1 passes3 batch16}; do
    case $v in
      default) variants+=(--variant 'default:') ;;
      passes1) variants+=(--variant 'passes1: device.passes=1') ;;
      passes3) variants+=(--variant 'passes3: device.passes=3; device.workers=3') ;;
      passes4) variants+=(--variant 'passes4: device.passes=4; device.workers=4') ;;
      batch16) variants+=(--variant 'batch16: device.batch=16') ;;
      tail16) variants+=(--variant 'tail16: tail.workers=16; tail.threads=16') ;;
      p1tail16) variants+=(--variant 'p1tail16: device.passes=1; tail.workers=16; tail.threads=16') ;;
      tb1) variants+=(--variant 'tb1: tail.batch=1') ;;
      tb16) variants+=(--variant 'tb16: tail.batch=16') ;;
      nocheck) variants+=(--variant 'nocheck: pipeline.self_check=false') ;;
      nctail12) variants+=(--variant 'nctail12: pipeline.self_check=false; tail.workers=12') ;;
      nctail16) variants+=(--variant 'nctail16: pipeline.self_check=false; tail.workers=16') ;;
      nctail32) variants+=(--variant 'nctail32: pipeline.self_check=false; tail.workers=32') ;;
      ncpasses1) variants+=(--variant 'ncpasses1: pipeline.self_check=false; device.passes=1') ;;
      ncsh05) variants+=(--variant 'ncsh05: pipeline.self_check=false; device.overlap_share=0.5') ;;
      ncsh1) variants+=(--variant 'ncsh1: pipeline.self_check=false; device.overlap_share=1') ;;
      ncsh2) variants+=(--variant 'ncsh2: pipeline.self_check=false; device.overlap_share=2') ;;
      nctb8) variants+=(--variant 'nctb8: pipeline.self_check=false; tail.batch=8') ;;
      tail12) variants+=(--variant 'tail12: tail.workers=12') ;;
      tail16w) variants+=(--variant 'tail16w: tail.workers=16') ;;
    esac
  done
  variant_sweep device
  ;;
statedir)
  # The same build at the same cell with the daemons' state folders ($TMPDIR) on the
  # machine's disk, then in /dev/shm (no syncs reach a disk); the disk's sync latency and
  # bandwidth beside it (experiment 026).
  small_daemon_config
  { df -h "${TMPDIR:-/tmp}"; mount | grep -E " (/|/tmp) " || true; } > "$out/disk.txt" 2>&1
  dd if=/dev/zero of="${TMPDIR:-/tmp}/dd.bin" bs=512k count=2000 oflag=dsync 2>> "$out/disk.txt" || true
  dd if=/dev/zero of="${TMPDIR:-/tmp}/dd.bin" bs=4k count=2000 oflag=dsync 2>> "$out/disk.txt" || true
  rm -f "${TMPDIR:-/tmp}/dd.bin"
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for where in disk shm; do
      tmp=${TMPDIR:-/tmp}; [ $where = shm ] && tmp=/dev/shm
      log "sweep $where r$round"
      TMPDIR=$tmp timeout 200 "$bench" sweep --config "$work/zkpipe.toml" --backend cuda --out "$out/statedir-$where-r$round" \
        bn14 "$work/keys/bn14.wtns" -c 64 -j 16 -p 1 > "$out/statedir-$where-r$round.txt" 2>&1 || log "sweep $where r$round failed"
      sed -n 2p "$out/statedir-$where-r$round.txt" | tee -a "$out/steps.log"
    done
  done
  ;;
tail)
  small_daemon_config
  timeout 400 "$bench" sweep --config "$work/zkpipe.toml" --backend cuda --out "$out/tail" --rounds "${ROUNDS:-2}" \
    --variant 'default:' --variant 'tail8: tail.workers=8' \
    --variant 'tail16: tail.workers=16; tail.threads=16' --variant 'nocheck: pipeline.self_check=false' \
    bn14 "$work/keys/bn14.wtns" -c 64 -j 16 -p 1 > "$out/tail.txt" 2>&1 || log "sweep tail failed"
  ;;
backends)
  keys=${KEYS:-bn16 bn18 bn20 bls16 bls18 bls20} make_keys
  for k in ${KEYS:-bn16 bn18 bn20 bls16 bls18 bls20}; do
    cache=$work/key-cache-$k
    ZKPIPE_KEY_CACHE="$cache" "$bin" prove "$work/keys/$k.zkey" "$work/keys/$k.wtns" "$work/p.json" \
      "$work/pub.json" --backend cpu --no-verify > /dev/null 2>&1 || log "$k: the warm-up proof failed"
    for round in $(seq 1 "${ROUNDS:-3}"); do
      order="cpu cuda"; [ $((round % 2)) = 0 ] && order="cuda cpu"
      for backend in $order; do
        rm -f "$work/p.json"
        t0=$EPOCHREALTIME
        ZKPIPE_KEY_CACHE="$cache" "$bin" prove "$work/keys/$k.zkey" "$work/keys/$k.wtns" "$work/p.json" \
          "$work/pub.json" --backend "$backend" > /dev/null 2>>"$out/steps.log" || log "$k $backend failed"
        ms=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }')
        ok=$("$bin" verify "$work/keys/$k.zkey" "$work/pub.json" "$work/p.json" 2>&1 | tail -1)
        echo "oneshot $k $backend r$round: $ms ms, verify: $ok" | tee -a "$out/steps.log"
      done
    done
  done
  ;;
fixtures)
  for curve in bn254 bls12-381; do
    for f in tests/fixtures/$curve/*/; do
      name=$(basename "$f")
      [ -e "$f/circuit.zkey" ] || continue
      for cw in "" --constant-work; do
        if "$bin" prove "$f/circuit.zkey" "$f/witness.wtns" "$out/p.json" "$out/pub.json" --backend cuda $cw > /dev/null 2>>"$out/fixtures.txt" \
           && "$bin" verify "$f/circuit.zkey" "$out/pub.json" "$out/p.json" > /dev/null 2>>"$out/fixtures.txt"; then
          echo "$curve $name ${cw:-default}: proved on the GPU, verified" | tee -a "$out/fixtures.txt"
        else
          echo "$curve $name ${cw:-default}: FAILED" | tee -a "$out/fixtures.txt"
        fi
      done
    done
  done
  ;;
snarkrs-cuda)
  [ -e .carry/snarkrs-cuda.xz ] && unpack snarkrs-cuda
  keys=${KEYS:-bn13 bn16 bn20} make_keys
  for k in ${KEYS:-bn13 bn16 bn20}; do
    a=$work/snarkrs-art/$k; mkdir -p "$a"
    ln -sf "$work/keys/$k.zkey" "$a/circuit.zkey"; ln -sf "$work/keys/$k.wtns" "$a/circuit.wtns"
    "$bin" export-vk "$work/keys/$k.zkey" "$a/vkey.json" 2>>"$out/steps.log"
    "$bin" prove "$work/keys/$k.zkey" "$work/keys/$k.wtns" "$work/p.json" "$a/public.json" --backend cuda --trusted-key 2>>"$out/steps.log"
  done
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for k in ${KEYS:-bn13 bn16 bn20}; do
      log "snarkrs cuda $k r$round"
      timeout 400 "$work/bin/snarkrs-cuda" bench --artifacts "$work/snarkrs-art" --variant "$k" --backend cuda \
        --mode warm --reps "${RUNS:-15}" --csv "$out/snarkrs-$k-r$round.csv" > "$out/snarkrs-$k-r$round.txt" 2>&1 \
        || log "FAILED snarkrs cuda $k r$round"
      tail -3 "$out/snarkrs-$k-r$round.txt" | tee -a "$out/steps.log"
      timeout 120 "$bench" bench "$work/keys/$k.zkey" "$work/keys/$k.wtns" --backend cuda --trusted-key --no-verify \
        --runs "${RUNS:-15}" --warmup 3 > "$out/zkpipe-$k-r$round.md" 2>&1 || log "FAILED zkpipe $k r$round"
      echo "zkpipe $k r$round: $(grep -m1 'prove total' "$out/zkpipe-$k-r$round.md")" | tee -a "$out/steps.log"
    done
  done
  ;;
profile)
  keys=${KEYS:-bn14 bn20 bls20} make_keys
  for k in ${KEYS:-bn14 bn20 bls20}; do
    for v in new old; do
      b=$bench; [ $v = old ] && b=$old_bench
      [ -x "$b" ] || continue
      log "ncu $k $v"
      timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
        "$b" bench "$work/keys/$k.zkey" "$work/keys/$k.wtns" --backend cuda --trusted-key --no-verify \
        --runs "${RUNS:-3}" --warmup 1 > "$out/ncu-$k-$v.txt" 2>&1 || log "FAILED ncu $k $v"
      grep -m1 'prove total' "$out/ncu-$k-$v.txt" | tee -a "$out/steps.log" || true
    done
  done
  ;;
batchprof)
  keys=${KEYS:-bn14} make_keys
  for round in $(seq "${ROUNDS:-2}"); do
    for k in ${KEYS:-bn14}; do
      for kb in ${BATCHES:-1 2 4 8 16 32}; do
        for v in ${BATCH_VARIANTS:-new old}; do
          b=$bench; [ $v = old ] && b=$old_bench
          [ -x "$b" ] || continue
          f="$out/batch-$k-k$kb-$v-r$round.md"
          order=; [ $v = pieceplan ] && order=plan
          conn=8; [ $v = conn32 ] && conn=32
          blocking=0; [ $v = blocking ] && blocking=1
          piece=; case $v in piece[0-9]*) piece=${v#piece} ;; esac
          ZKPIPE_CUDA_PIECE=$piece CUDA_LAUNCH_BLOCKING=$blocking CUDA_DEVICE_MAX_CONNECTIONS=$conn ZKPIPE_CUDA_PIECE_ORDER=$order ZKPIPE_CUDA_PASS_TRACE=1 timeout 120 "$b" bench "$work/keys/$k.zkey" "$work/keys/$k.wtns" --backend cuda \
            --trusted-key --no-verify --batch "$kb" --runs "${RUNS:-15}" --warmup 3 > "$f" 2>&1 || log "FAILED batch $k k$kb $v r$round"
          echo "$k k=$kb $v r$round: $(grep -m1 'prove total' "$f")" | tee -a "$out/steps.log"
        done
      done
    done
  done
  # PROF_BATCHES=none: the timed passes only.
  [ "${PROF_BATCHES:-}" = none ] && exit 0
  for k in ${KEYS:-bn14}; do
    for kb in ${PROF_BATCHES:-1 16}; do
      log "ncu $k k=$kb"
      timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
        "$bench" bench "$work/keys/$k.zkey" "$work/keys/$k.wtns" --backend cuda --trusted-key --no-verify \
        --batch "$kb" --runs "${PROF_RUNS:-3}" --warmup 1 > "$out/ncu-$k-k$kb.txt" 2>&1 || log "FAILED ncu $k k$kb"
      grep -m1 'prove total' "$out/ncu-$k-k$kb.txt" | tee -a "$out/steps.log" || true
    done
    # Why the heaviest kernels take what they take (occupancy, stalls, throughputs), at
    # the largest profiled batch: the first few launches of each.
    kb=$(echo ${PROF_BATCHES:-1 16} | awk '{print $NF}')
    log "ncu sections $k k=$kb ${PROF_ENV:-}"
    # shellcheck disable=SC2086 # PROF_ENV is a list of VAR=value
    timeout 300 env ${PROF_ENV:-} ncu --clock-control none -k "regex:zkp_bm_(sum_pieces|runs|bitsums)" --launch-count 10 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      "$bench" bench "$work/keys/$k.zkey" "$work/keys/$k.wtns" --backend cuda --trusted-key --no-verify \
      --batch "$kb" --runs 1 --warmup 1 > "$out/ncu-sections-$k-k$kb.txt" 2>&1 || log "FAILED ncu sections $k k$kb"
  done
  ;;
*) echo "unknown step $step" >&2; exit 2 ;;
esac
