#!/usr/bin/env bash
# Issue 16's runs after the registration fix, on the GPU machine, one step per call (each
# fits the device's 10-minute limit; WORK keeps keys between calls while the machine is
# warm, and a step remakes what it needs when it is not).
#
#   lab/exp018/after.sh STEP OUT_DIR
#
# Binaries: .carry/zkpipe.xz and .carry/zkpipe-bench.xz (this build) and, for `register`,
# .carry/zkpipe-old.xz (the build before the fix). STEP:
#   witness   `zkpipe-bench sweep` of workload (a) from witnesses: 2^22 key, c = 1,4,8,16, 3 jobs
#             per client, 10 partitions; then device vs host reduce at c = 16
#             (`env.ZKPIPE_CUDA_HOST_REDUCE=1`).
#   register  interleaved A/B of the old and new build at c = 16 (ab.sh, 3 rounds), then the
#             CPU-backend daemon at c = 16 on the same key.
#   submit    the submission path (018h): the build before (.carry/zkpipe-old.xz) against
#             .carry/zkpipe.xz (59bbd8f: submissions off the async workers, registration
#             without a lock; both reverted after this A/B), each client
#             on its own connection, c = 4 (2 jobs) and 16 (1 job), 2 rounds (ab.sh).
#   inputs    the largest circom circuit built on the devbox (.carry/c21.tar.xz: Poseidon
#             chain, 2^21), from inputs (wasm synthesis in the pipeline) and from the
#             witness, c = 1,4,16, 3 jobs per client; then 2^14 at c = 64.
#   final     the witness step's sweep (workload (a), c = 1,4,8,16, 3 jobs per client) with
#             the final build: registration under its lock, a connection per client.
#             About 9 minutes with the key to make (session 13 gave it 5.5 and lost c = 16).
#   switches  the switches not A/B'd before, at c = 8, 1 job per client, 2 rounds: freeing in
#             place and huge pages off against the defaults; device passes 1, 2 (default), 3.
#   gpus      one GPU vs every visible GPU (`env.CUDA_VISIBLE_DEVICES=0` vs none) at
#             c = 16, 3 jobs per client, 2 rounds.
set -euo pipefail
step=${1:?step}; out=${2:?out}
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-lab/work/dev}
mkdir -p "$out" "$work/keys" "$work/bin"
work=$(cd "$work" && pwd)
log() { echo "[$(date +%T)] $*" | tee -a "$out/steps.log"; }
bin=$work/bin/zkpipe bench=$work/bin/zkpipe-bench
[ -x "$bin" ] && cmp -s <(xz -dc .carry/zkpipe.xz) "$bin" || { xz -dc .carry/zkpipe.xz > "$bin"; chmod +x "$bin"; }
[ -x "$bench" ] && cmp -s <(xz -dc .carry/zkpipe-bench.xz) "$bench" || { xz -dc .carry/zkpipe-bench.xz > "$bench"; chmod +x "$bench"; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a "$out/steps.log"
nproc | sed 's/^/cores: /' | tee -a "$out/steps.log"

key22() {
  if [ ! -e "$work/keys/k22.zkey" ]; then
    log "synth + setup --dev 2^22"
    "$bin" synth --domain "2^22" --public 4 --seed 1 "$work/c22.r1cs" "$work/w22.wtns" 2>>"$out/steps.log"
    "$bin" setup --dev --seed 1 "$work/c22.r1cs" "$work/keys/k22.zkey" 2>>"$out/steps.log"
    rm -f "$work/c22.r1cs"
  fi
}
config() { # the daemons' config: trusted keys, big requests (10 × 128 MiB witnesses)
  cat > "$work/zkpipe.toml" <<TOML
[server]
max_request_bytes = "4GiB"
[keys]
dir = "$work/keys"
checks = "trusted"
TOML
}
sweep() { # name args...
  local name=$1; shift
  log "sweep $name: $*"
  timeout 560 "$bench" sweep --config "$work/zkpipe.toml" --backend "${BACKEND:-cuda}" --out "$out/$name" "$@" \
    > "$out/$name.txt" 2>&1 || log "sweep $name failed: $(tail -3 "$out/$name.txt")"
  cat "$out/$name.txt" >> "$out/steps.log"
}

config
case $step in
  witness)
    key22
    sweep witness k22 "$work/w22.wtns" -c 1,4,8,16 -j 3 -p 10
    sweep host-reduce k22 "$work/w22.wtns" -c 16 -j 1 -p 10 \
      --variant 'device:' --variant 'host: env.ZKPIPE_CUDA_HOST_REDUCE=1'
    ;;
  register)
    key22
    old=$work/bin/zkpipe-old; xz -dc .carry/zkpipe-old.xz > "$old"; chmod +x "$old"
    WORK=$work BIN_old=$old timeout 420 bash "$here/ab.sh" "$out/register" "$bin" 3 "16:1" "old=" "new=" \
      || log "ab.sh failed"
    BACKEND=cpu sweep cpu-daemon k22 "$work/w22.wtns" -c 16 -j 1 -p 1
    ;;
  submit)
    key22
    old=$work/bin/zkpipe-old; xz -dc .carry/zkpipe-old.xz > "$old"; chmod +x "$old"
    WORK=$work BIN_old=$old timeout 360 bash "$here/ab.sh" "$out/submit" "$bin" 2 "4:2 16:1" "old=" "new=" \
      || log "ab.sh failed"
    ;;
  inputs)
    tar xJf .carry/c21.tar.xz -C "$work"
    if [ ! -e "$work/keys/c21.zkey" ]; then
      log "setup --dev 2^21 circom circuit"
      xz -dc "$work/c21/circuit.r1cs.xz" > "$work/c21.r1cs"
      "$bin" setup --dev --seed 1 "$work/c21.r1cs" "$work/keys/c21.zkey" 2>>"$out/steps.log"
      rm -f "$work/c21.r1cs"
      cp "$work/c21/circuit.wasm" "$work/keys/c21.wasm"
    fi
    /usr/bin/time -f "2^21 wtns calculate (wasm, one process): %e s, %M KiB" \
      "$bin" wtns calculate "$work/c21/circuit.wasm" "$work/c21/input.json" "$work/w21.wtns" 2>>"$out/steps.log"
    sweep inputs21 c21 --input "$work/c21/input.json" -c 1,4,16 -j 3 -p 10
    sweep witness21 c21 "$work/w21.wtns" -c 1,4,16 -j 3 -p 10
    if [ ! -e "$work/keys/k14.zkey" ]; then
      "$bin" synth --domain "2^14" --public 4 --seed 1 "$work/c14.r1cs" "$work/w14.wtns" 2>>"$out/steps.log"
      "$bin" setup --dev --seed 1 "$work/c14.r1cs" "$work/keys/k14.zkey" 2>>"$out/steps.log"
    fi
    sweep small k14 "$work/w14.wtns" -c 64 -j 16 -p 1 --rounds 3
    ;;
  final)
    key22
    sweep final k22 "$work/w22.wtns" -c 1,4,8,16 -j 3 -p 10
    ;;
  switches)
    key22
    sweep switches k22 "$work/w22.wtns" -c 8 -j 1 -p 10 --rounds 2 \
      --variant 'default:' --variant 'in-place: memory.dealloc=in-place' \
      --variant 'no-huge: env.ZKPIPE_HUGE_PAGES=0'
    sweep passes k22 "$work/w22.wtns" -c 8 -j 1 -p 10 --rounds 2 \
      --variant 'passes1: device.passes=1' --variant 'passes2:' --variant 'passes3: device.passes=3'
    ;;
  gpus)
    key22
    sweep gpus k22 "$work/w22.wtns" -c 16 -j 3 -p 10 --rounds 2 \
      --variant 'one: env.CUDA_VISIBLE_DEVICES=0' --variant 'all:'
    ;;
  *) echo "unknown step $step" >&2; exit 2 ;;
esac
log "done $step"
