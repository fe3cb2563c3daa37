#!/usr/bin/env bash
# Lab 043k, call 3: the daemon sweep, jobs of 10 partitions of the 2^25 BLS12-381 key under
# 16 GiB, CLIENTS clients, JOBS jobs a client, VARIANTS one daemon each in turn.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
IFS='|' read -ra vs <<< "${VARIANTS:-bits:|sppark: env.ZKPIPE_CUDA_BITS=off}"
T=${T:-570} lab/exp043/regime.sh $R $B sweep ${LABEL:-c8} bls12-381 25 ${CLIENTS:-8} ${JOBS:-1} "${vs[@]}"
