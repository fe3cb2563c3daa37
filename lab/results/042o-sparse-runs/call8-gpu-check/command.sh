#!/usr/bin/env bash
# Device call: scripts/gpu-check.sh with this build (kernels, fixtures, dev keys).
set -uo pipefail
mkdir -p /tmp/bin
for b in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x /tmp/bin/$b ] || xz -dc .carry/p/$b.xz > /tmp/bin/$b; chmod +x /tmp/bin/$b; done
o=$OUT/r; mkdir -p $o
timeout 540 scripts/gpu-check.sh $o /tmp/bin "${SIZES:-16 20}" ${MAX_LOG:-20} > $o/run.log 2>&1
echo "rc=$?" >> $o/run.log
cd $OUT && tar czf r.tgz r && rm -rf r
