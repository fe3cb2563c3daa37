#!/usr/bin/env bash
# Lab 043j, call 1b: the key's setup (call 1's synth outran its step's limit), then the
# bench of a job of ten under 16 GiB (pinned) and in-core.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
ls -la lab/work/regime lab/work/regime/keys > $R/work.txt 2>&1; df -h . >> $R/work.txt
S=lab/exp043/regime.sh
timeout 300 $S $R $B key bls12-381 25; at key
BATCHES=10 RUNS=1 timeout $(( 575 - ($(date +%s) - start) )) $S $R $B bench bls12-381 25 "16GiB none"; at bench
