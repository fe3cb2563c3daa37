#!/usr/bin/env bash
# Issue 43, streamed keys on a GPU machine (lab/experiments/043a-streamed-msms.md):
#
#   lab/exp043/streamed.sh OUT BIN_DIR check|speed [LOGS="22"] [ROUNDS=3] [LIMIT=4GiB]
#
# check: scripts/gpu-check.sh with every fixture and dev key proved in-core and streamed
#        (kernels to 2^16, dev keys 2^16, 2^20, 2^22).
# speed: for each 2^LOG BN254 dev key, `zkpipe-bench bench` one proof and a batch of two
#        in-core (no limit) against streamed (--device-limit LIMIT), interleaved, ROUNDS
#        rounds of 3 runs each; the bench lines go to OUT/speed-LOG.txt. OTHER_BIN=DIR adds
#        a third variant, DIR's build streamed ("streamed-other"), for an A/B of builds;
#        HOST_REDUCE=1 adds "streamed-host-reduce", streamed with a, b, c computed on the
#        CPU (ZKPIPE_CUDA_HOST_REDUCE=1: a build with the lab switches, LAB=1
#        scripts/build-cuda.sh). SETUP_BACKEND=cuda makes the dev keys on the GPU
#        (`setup --dev --backend cuda`: the same keys, minutes sooner at 2^24).
# BIN_DIR holds zkpipe, zkpipe-bench and zkpipe-gpu-check (scripts/build-cuda.sh's).
set -euo pipefail
out=${1:?output dir}; bin=${2:?binary dir}; what=${3:?check or speed}
logs=${4:-22}; rounds=${5:-3}; limit=${6:-4GiB}
mkdir -p "$out"
case $what in
  check)
    scripts/gpu-check.sh "$out/check" "$bin" "16 20 22" 16 ;;
  speed)
    work=${WORK:-$(mktemp -d)}; mkdir -p "$work"
    for k in $logs; do
      w=$work/dev$k; mkdir -p "$w"
      if [ ! -f "$w/c.zkey" ]; then
        /usr/bin/time -f "synth+setup 2^$k: %e s, %M KiB" bash -c \
          "'$bin/zkpipe' synth --domain '2^$k' --public 4 --seed 1 '$w/c.r1cs' '$w/c.wtns' 2>/dev/null &&
           '$bin/zkpipe' setup --dev --seed 1 --backend ${SETUP_BACKEND:-cpu} '$w/c.r1cs' '$w/c.zkey' 2>/dev/null" 2>> "$out/speed-$k.txt"
      fi
      for r in $(seq "$rounds"); do
        modes=(in-core streamed ${OTHER_BIN:+streamed-other})
        [ "${HOST_REDUCE:-0}" = 1 ] && modes+=(streamed-host-reduce)
        for mode in "${modes[@]}"; do
          for batch in 1 2; do
            flags=(--trusted-key --backend cuda --runs 3 --warmup 1 --batch $batch)
            [ $mode != in-core ] && flags+=(--device-limit "$limit")
            b=$bin; [ $mode = streamed-other ] && b=$OTHER_BIN
            echo "== 2^$k round $r $mode batch $batch" >> "$out/speed-$k.txt"
            host=(); [ $mode = streamed-host-reduce ] && host=(ZKPIPE_CUDA_HOST_REDUCE=1)
            env "${host[@]}" timeout 300 "$b/zkpipe-bench" bench "${flags[@]}" "$w/c.zkey" "$w/c.wtns" \
              >> "$out/speed-$k.txt" 2>&1 || echo "FAILED rc=$?" >> "$out/speed-$k.txt"
          done
        done
      done
    done ;;
  *) echo "streamed.sh: check or speed" >&2; exit 2 ;;
esac
