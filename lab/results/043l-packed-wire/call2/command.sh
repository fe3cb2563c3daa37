#!/usr/bin/env bash
# Lab 043l, calls 2-3: the daemon sweep of jobs of 10 partitions of the 2^25 BLS12-381 key
# under 16 GiB, one daemon at a time, witnesses packed on the wire (the clients' default)
# or as they are (SWEEP_FLAGS=--no-pack).
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
HOST_LIMIT=${HOST_LIMIT:-100GiB} T=${T:-570} lab/exp043/regime.sh $R $B sweep ${LABEL:-packed} bls12-381 25 ${CLIENTS:-1,2,4,8} ${JOBS:-3} "${VARIANT:-gpu:}"
