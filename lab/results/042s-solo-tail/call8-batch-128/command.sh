#!/usr/bin/env bash
# Device call (lab 042s): a generic A/B of one binary under two settings, small proofs:
#   NAME=dir LABELS="a b" ENV_A=... ENV_B=... SET_A=... SET_B=... GPUS="1" bash .carry/g.sh
# (scaling.sh reads ENV_*/SET_* itself), 768 clients per GPU (C), 40 jobs (J), 3 rounds.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
WORK=/tmp/work VALUES=sha256 SMALL_C=${C:-768} SMALL_J=${J:-40} TRACE=${TRACE:-1} \
  timeout ${LIMIT:-400} lab/exp042/scaling.sh $o/$NAME /tmp/bin /tmp/bin ${ROUNDS:-3} "${GPUS:-1}" "$LABELS" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/$NAME/*trace.json; do [ -f "$f" ] && python3 lab/exp042/waterfall.py "$f" > "$f.summary.txt" 2>&1 && rm "$f"; done
for f in $o/$NAME/*serve.log; do [ -f "$f" ] && MIN_K=1 MAX_K=256 python3 lab/exp042/passes.py "$f" >> $o/passes.txt 2>&1; done
for f in $o/$NAME/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
