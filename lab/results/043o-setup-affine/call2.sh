#!/usr/bin/env bash
# Lab 043o call 2: round 3 of BLS12-381 2^24 new vs old, and the CPU's setup of the same
# circuit, each key compared with new's.
set -u
R=$OUT/r; N=/tmp/n; O=/tmp/o; mkdir -p $R $N $O /tmp/w
for b in zkpipe; do [ -x $N/$b ] || { xz -dc .carry/n/$b.xz > $N/$b; chmod +x $N/$b; }; done
[ -x $O/zkpipe ] || { xz -dc .carry/o/zkpipe.xz > $O/zkpipe; chmod +x $O/zkpipe; }
trap 'tar czf $OUT/r2.tgz -C $OUT r' EXIT
echo "$(date +%T) start; r1cs there: $(ls /tmp/w/*24.r1cs 2>/dev/null)" >> $R/log
WORK=/tmp/w FROM=3 timeout 570 lab/exp043/setup-ab.sh $R bls12-381 24 3 new=$N old=$O cpu=$N:cpu
echo "$(date +%T) done" >> $R/log
