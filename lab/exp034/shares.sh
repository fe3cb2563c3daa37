#!/usr/bin/env bash
# Experiment 034's follow-up (call 7) on the GPU machine: device.overlap_share 0, 1 and 2 at
# c = 8, 32 and 64 (034 measured 4, 16 and 64), interleaved rounds, no self-check, the
# 2^14 dev key. Needs .carry as lab/exp031/device.sh does; writes $OUT/shares.tar.xz.
set -uo pipefail
: "${OUT:?OUT}"
mkdir -p "$OUT/shares"
# The 2^14 dev key and the daemon config of run.sh's tail step (lab/lib/harness.sh).
work=$(mkdir -p lab/work/dev/keys lab/work/dev/bin && cd lab/work/dev && pwd)
xz -dc .carry/zkpipe.xz >"$work/bin/zkpipe" && chmod +x "$work/bin/zkpipe"
# The lab's binary: its sweep runs the zkpipe beside it.
xz -dc .carry/zkpipe-bench.xz >"$work/bin/zkpipe-bench" && chmod +x "$work/bin/zkpipe-bench"
bin=$work/bin/zkpipe out=$OUT/shares
log() { echo "[$(date +%T)] $*" >>"$out/steps.log"; }
. lab/lib/harness.sh
small_daemon_config >"$OUT/shares/keys.log" 2>&1
timeout "${SWEEP_LIMIT:-420}" lab/work/dev/bin/zkpipe-bench sweep --config lab/work/dev/zkpipe.toml \
  --backend cuda --out "$OUT/shares/sweep" --rounds "${ROUNDS:-6}" \
  --variant 'sh0: pipeline.self_check=false; device.overlap_share=0' \
  --variant 'sh1: pipeline.self_check=false; device.overlap_share=1' \
  --variant 'sh2: pipeline.self_check=false; device.overlap_share=2' \
  bn14 lab/work/dev/keys/bn14.wtns -c 8,32,64 -j 16 -p 1 >"$OUT/shares/sweep.log" 2>&1
echo "sweep exit $?" >>"$OUT/shares/sweep.log"
tar cJf "$OUT/shares.tar.xz" -C "$OUT" shares
