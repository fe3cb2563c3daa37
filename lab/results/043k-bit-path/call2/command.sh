#!/usr/bin/env bash
# Lab 043k, call 2: a job of ten 2^25 BLS12-381 proofs (SHA-256 values), the bit path
# (default) against sppark's MSMs (ZKPIPE_CUDA_BITS=off), under 16 GiB (pinned) and
# in-core: RUNS runs a process after a warm-up, the four processes interleaved, ROUNDS times.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
S=lab/exp043/regime.sh
for round in $(seq 1 ${ROUNDS:-2}); do
  for limit in 16GiB none; do
    for bits in on off; do
      left=$(( 575 - ($(date +%s) - start) )); [ $left -gt 30 ] || break 3
      ZKPIPE_CUDA_BITS=$bits BATCHES=10 RUNS=${RUNS:-3} timeout $left $S $R/$bits-r$round $B bench bls12-381 25 $limit
      at "$bits $limit r$round"
    done
  done
done
RUNS=3 ROUNDS=2 bash .carry/k2.sh
