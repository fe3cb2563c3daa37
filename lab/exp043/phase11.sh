#!/usr/bin/env bash
# Lab 043n (lab/experiments/043n-phase11-switches.md): issue 43's Phase 11 switches in the
# reference regime at half scale: jobs of ten BLS12-381 2^24 partitions (SHA-256 values)
# under device_limit 8 GiB, the key/budget ratio of 2^25 under 16 GiB. The daemon at
# c = 4 x 2 jobs, one daemon per cell (regime.sh's sweep step), 7 variants in 3 rounds
# (round 2 in reverse order).
#
#   OUT=dir [T=seconds] [CELL_S=seconds] lab/exp043/phase11.sh
#
# Needs a `--features lab` CUDA build's zkpipe and zkpipe-bench in B (/tmp/b), unpacked
# from .carry/p/*.xz when absent (how the device calls carried them). Makes the key first
# (regime.sh's key step, its setup's parts logged). Resumable: the cells done are listed
# in WORK/p11-done.txt, so a second call on the same warm machine goes on where the first
# stopped; no cell starts with less than CELL_S seconds left of T. Results: OUT/r.tgz.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for b in zkpipe zkpipe-bench; do [ -x $B/$b ] || { xz -dc .carry/p/$b.xz > $B/$b; chmod +x $B/$b; }; done
pack() { for f in $R/sweep-*/*.serve.log; do [ -f "$f" ] && gzip -f "$f"; done; tar czf $OUT/r.tgz -C $OUT r; rm -rf $R; }
trap pack EXIT
deadline=$(( $(date +%s) + ${T:-570} ))
export HOST_LIMIT=100GiB LIMIT=${LIMIT:-8GiB}
CURVE=${CURVE:-bls12-381}; LOG=${LOG:-24}
nvidia-smi > $R/nvidia-smi.txt 2>&1; nproc >> $R/nvidia-smi.txt; free -g >> $R/nvidia-smi.txt
ZKPIPE_LOG=${KEY_LOG:-debug} lab/exp043/regime.sh $R $B key $CURVE $LOG
variants=("default:" "detached: memory.dealloc=detached" "shared: pipeline.pools=shared"
  "yield: pipeline.throttle=yield" "pause: pipeline.throttle=pause"
  "wc: device.pinned_upload=write-combined" "passes1: device.passes=1")
cells=()
for r in 1 2 3; do
  if [ $r = 2 ]; then order=(6 5 4 3 2 1 0); else order=(0 1 2 3 4 5 6); fi
  for i in "${order[@]}"; do cells+=("r$r-${variants[$i]}"); done
done
done_file=${WORK:-lab/work/regime}/p11-done.txt; touch $done_file
for v in "${cells[@]}"; do
  name=${v%%:*}; grep -qx "$name" $done_file && continue
  left=$(( deadline - $(date +%s) )); [ $left -gt ${CELL_S:-75} ] || { echo "stopped before $name: ${left}s left" >> $R/p11.log; break; }
  echo "$(date +%T) $name" >> $R/p11.log
  T=$left lab/exp043/regime.sh $R $B sweep p11 $CURVE $LOG 4 2 "$v"
  grep -q "FAILED" $R/sweep-p11-$name.txt || echo $name >> $done_file
  grep -E "^ +1 " $R/sweep-p11-$name.txt | head -1 >> $R/p11.log
done
cp $done_file $R/
