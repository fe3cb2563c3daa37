#!/usr/bin/env bash
# Device call (lab 042r, 2 x H200): a packed witness's conversion in the synthesis stage,
# before (main at 4676995, .carry/a) against after (.carry/p), the daemon at 768 clients
# per GPU, 1 and 2 GPUs, 3 rounds.
set -uo pipefail
for v in a p; do mkdir -p /tmp/$v; for b in zkpipe zkpipe-bench; do xz -dc .carry/$v/$b.xz > /tmp/$v/$b; chmod +x /tmp/$v/$b; done; done
o=$OUT/r; mkdir -p $o
WORK=/tmp/work VALUES=sha256 SMALL_C=${C:-768} SMALL_J=${J:-40} \
  timeout ${LIMIT:-420} lab/exp042/scaling.sh $o/ab /tmp/a /tmp/p ${ROUNDS:-3} "${GPUS:-1 2}" "before after" > $o/scaling.log 2>&1
echo "rc=$?" >> $o/scaling.log
for f in $o/ab/*serve.log; do [ -f "$f" ] && { tail -c 20000 "$f" > "$f.tail"; rm "$f"; }; done
cd $OUT && tar czf r.tgz r && rm -rf r
