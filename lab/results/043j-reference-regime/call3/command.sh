#!/usr/bin/env bash
# Lab 043j, call 2: the daemon sweep with the reduce on the GPU (the default), c = 1, 2, 4,
# 8, JOBS (default 1) a client, 10 partitions a job, under 16 GiB.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
T=560 lab/exp043/regime.sh $R $B sweep ${LABEL:-gpu} bls12-381 25 ${CLIENTS:-1,2,4,8} ${JOBS:-1} "${VARIANT:-gpu:}"
