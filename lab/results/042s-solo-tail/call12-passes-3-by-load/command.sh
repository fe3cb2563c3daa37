#!/usr/bin/env bash
# Device call (lab 042s call 12, one H200, the final build): three passes a GPU (now the
# default, with a worker more than passes) against device.passes = 2, at 768, 64 and 16
# clients, 3 rounds each, alternating.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
for cj in ${CELLS:-768:40 64:100 16:200}; do
  c=${cj%:*} j=${cj#*:}
  WORK=/tmp/work VALUES=sha256 SMALL_C=$c SMALL_J=$j TRACE=0 SET_A="device.passes=2" \
    timeout ${LIMIT:-150} lab/exp042/scaling.sh $o/c$c /tmp/bin /tmp/bin ${ROUNDS:-3} 1 "p2 p3" > $o/scaling-c$c.log 2>&1
  echo "rc=$?" >> $o/scaling-c$c.log
  for f in $o/c$c/*serve.log; do [ -f "$f" ] && { tail -c 8000 "$f" > "$f.tail"; rm "$f"; }; done
done
cd $OUT && tar czf r.tgz r && rm -rf r
