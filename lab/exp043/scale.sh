#!/usr/bin/env bash
# Issue 43 at scale on a GPU machine: dev keys made on the GPU, then streamed against
# in-core proofs and the ceiling under a device budget (lab/experiments/043f-*.md).
#
#   lab/exp043/scale.sh OUT BIN STEP [ARGS...]
#
#   check                        zkpipe-gpu-check's setup part (G1 and G2 on the GPU
#                                against the CPU, both curves)
#   setup CURVE LOG BACKENDS     synth a 2^LOG circuit (once), then `setup --dev --seed 1`
#                                on each backend ("cuda cpu"): wall, user CPU, peak RSS,
#                                the CLI's own breakdown and each part's time (debug log),
#                                and whether the keys are one file
#   speed CURVE LOG ROUNDS BATCHES LIMIT
#                                `zkpipe-bench bench` in-core (no limit) and streamed
#                                (--device-limit LIMIT), interleaved, for each batch size
#   stream CURVE LOG ROUNDS BATCHES VARIANTS
#                                `zkpipe-bench bench` in-core, then each streamed VARIANT
#                                (LIMIT[/STREAM_BATCH][/pin][/beside][/wide][/base], e.g.
#                                16GiB/4/pin), for each batch size, interleaved round by round
#   prove CURVE LOG LIMIT        one `zkpipe prove --device-limit LIMIT` and `zkpipe verify`
#
# Keys live in WORK (default lab/work/scale, git-ignored) and are reused by later steps
# and by later calls while the machine stays the same. VALUES=sha256 synthesizes the
# SHA-256 witness profile (lab 043b). Everything a step prints goes to OUT/STEP-*.txt.
set -uo pipefail
out=${1:?output dir}; bin=${2:?binary dir}; step=${3:?step}; shift 3
work=${WORK:-lab/work/scale}
mkdir -p "$out" "$work"

# The circuit, witness and key of CURVE 2^LOG (made once).
dir() { echo "$work/$1-$2${VALUES:+-$VALUES}"; }
synth() {
  local d; d=$(dir "$1" "$2"); mkdir -p "$d"
  [ -f "$d/c.wtns" ] && return 0
  /usr/bin/time -f "synth $1 2^$2: %e s, %M KiB" "$bin/zkpipe" synth --curve "$1" \
    --domain "2^$2" --public 4 --seed 1 ${VALUES:+--values $VALUES} "$d/c.r1cs" "$d/c.wtns"
}
key() {
  local d; d=$(dir "$1" "$2")
  [ -f "$d/c.zkey" ] && return 0
  synth "$1" "$2" || return 1
  /usr/bin/time -f "setup $1 2^$2 cuda: %e s wall, %U s user, %M KiB" \
    "$bin/zkpipe" setup --dev --seed 1 --backend cuda "$d/c.r1cs" "$d/c.zkey"
}

# One bench cell into FILE: DIR's key and witness, headed LABEL, BATCH proofs a run,
# in-core or streamed as VARIANT says: in-core, or LIMIT followed by any of /N (stream
# batch N), /pin (the pinned tier), /beside (the walk's chunks beside the proofs'
# buffers, ZKPIPE_CUDA_WALK_BESIDE) and /wide (the matrices' values as field elements,
# ZKPIPE_CUDA_WIDE_MATRICES), which need a lab build, and /base (the baseline build's
# zkpipe-bench, in the directory BASE_BIN names, for an A/B of two builds in one call).
cell() {
  local f=$1 d=$2 label=$3 batch=$4 v=$5 limit opts o exe=$bin/zkpipe-bench
  local flags=(--trusted-key --backend cuda --runs 2 --warmup 1 --batch "$batch") env=()
  if [ "$v" != in-core ]; then
    IFS=/ read -r limit opts <<< "$v"
    flags+=(--device-limit "$limit")
    for o in ${opts//\// }; do
      case $o in
        pin) flags+=(--pin) ;;
        beside) env+=(ZKPIPE_CUDA_WALK_BESIDE=1) ;;
        wide) env+=(ZKPIPE_CUDA_WIDE_MATRICES=1) ;;
        base) exe=${BASE_BIN:?BASE_BIN names the baseline build}/zkpipe-bench ;;
        *[!0-9]*) echo "scale.sh: unknown variant part $o" >&2; return 2 ;;
        *) flags+=(--stream-batch "$o") ;;
      esac
    done
  fi
  echo "== $label batch $batch" >> "$f"
  timeout 300 env "${env[@]}" "$exe" bench "${flags[@]}" "$d/c.zkey" "$d/c.wtns" \
    >> "$f" 2>&1 || echo "FAILED rc=$?" >> "$f"
}

case $step in
  check)
    timeout 300 "$bin/zkpipe-gpu-check" 16 3 16 setup > "$out/check.txt" 2>&1
    echo "rc=$?" >> "$out/check.txt" ;;
  setup)
    curve=$1; log=$2; backends=$3; d=$(dir "$curve" "$log"); f=$out/setup-$curve-$log.txt
    synth "$curve" "$log" >> "$f" 2>&1
    for b in $backends; do
      rm -f "$d/$b.zkey"
      /usr/bin/time -f "setup $curve 2^$log $b: %e s wall, %U s user, %M KiB peak RSS" \
        timeout 580 env ZKPIPE_LOG=debug "$bin/zkpipe" setup --dev --seed 1 --backend "$b" "$d/c.r1cs" "$d/$b.zkey" \
        >> "$f" 2>&1 || echo "setup $b FAILED rc=$?" >> "$f"
    done
    set -- $backends
    if [ $# -ge 2 ]; then
      if cmp -s "$d/$1.zkey" "$d/$2.zkey"; then
        echo "$curve 2^$log: the $1 and $2 keys are the same file ($(stat -c %s "$d/$1.zkey") bytes)"
      else echo "$curve 2^$log: KEYS DIFFER"; fi >> "$f"
    fi
    # Later steps take the first backend's key.
    [ -f "$d/$1.zkey" ] && mv "$d/$1.zkey" "$d/c.zkey"
    rm -f "$d"/cpu.zkey "$d"/cuda.zkey ;;
  speed)
    curve=$1; log=$2; rounds=$3; batches=$4; limit=$5; d=$(dir "$curve" "$log")
    f=$out/speed-$curve-$log.txt
    key "$curve" "$log" >> "$f" 2>&1 || { echo "no key" >> "$f"; exit 1; }
    for r in $(seq "$rounds"); do
      for batch in $batches; do
        cell "$f" "$d" "$curve 2^$log round $r in-core" "$batch" in-core
        cell "$f" "$d" "$curve 2^$log round $r streamed" "$batch" "$limit"
      done
    done ;;
  stream)
    curve=$1; log=$2; rounds=$3; batches=$4; variants=$5; d=$(dir "$curve" "$log")
    f=$out/stream-$curve-$log.txt
    key "$curve" "$log" >> "$f" 2>&1 || { echo "no key" >> "$f"; exit 1; }
    for r in $(seq "$rounds"); do
      for batch in $batches; do
        for v in in-core $variants; do
          cell "$f" "$d" "$curve 2^$log round $r $v" "$batch" "$v"
        done
      done
    done ;;
  prove)
    curve=$1; log=$2; limit=$3; d=$(dir "$curve" "$log"); f=$out/prove-$curve-$log.txt
    key "$curve" "$log" >> "$f" 2>&1 || { echo "no key" >> "$f"; exit 1; }
    rm -f "$d/proof.json" "$d/public.json"
    /usr/bin/time -f "prove $curve 2^$log under $limit: %e s wall, %M KiB peak RSS" \
      timeout 580 "$bin/zkpipe" prove --trusted-key --backend cuda --device-limit "$limit" \
      --timings "$d/c.zkey" "$d/c.wtns" "$d/proof.json" "$d/public.json" >> "$f" 2>&1 \
      || echo "prove FAILED rc=$?" >> "$f"
    "$bin/zkpipe" verify "$d/c.zkey" "$d/public.json" "$d/proof.json" >> "$f" 2>&1
    echo "verify rc=$?" >> "$f" ;;
  *) echo "scale.sh: check, setup, speed, stream or prove" >&2; exit 2 ;;
esac
