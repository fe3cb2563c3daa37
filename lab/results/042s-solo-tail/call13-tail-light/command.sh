#!/usr/bin/env bash
# Device call (lab 042s call 13, one H200, main's build): the tail alone while others wait
# (the default) against every batch spread (tail.always_spread = true) at light and middle
# load: 16 clients x 200 jobs and 64 x 100, 3 rounds each, alternating; host wait the
# default on both.
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
for cj in ${CELLS:-16:200 64:100}; do
  c=${cj%:*} j=${cj#*:}
  WORK=/tmp/work VALUES=sha256 SMALL_C=$c SMALL_J=$j TRACE=0 SET_A="tail.always_spread=true" \
    timeout ${LIMIT:-130} lab/exp042/scaling.sh $o/c$c /tmp/bin /tmp/bin ${ROUNDS:-3} 1 "spread alone" > $o/scaling-c$c.log 2>&1
  echo "rc=$?" >> $o/scaling-c$c.log
  for f in $o/c$c/*serve.log; do [ -f "$f" ] && { tail -c 8000 "$f" > "$f.tail"; rm "$f"; }; done
done
cd $OUT && tar czf r.tgz r && rm -rf r
