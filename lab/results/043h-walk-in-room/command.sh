#!/usr/bin/env bash
# Device call (lab 043h): ROUND=1 also runs the seam check (walk in room and beside, both
# curves), every fixture in-core and streamed (proved, verified); then BN254 2^24 bench
# rounds: in-core against 4 GiB and 16 GiB pinned, walk in room + narrow matrices (the new
# default) against beside + wide (the old way), batches 1 and 10; and the 2x2 parts at
# batch 1.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; }; done
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
if [ "${ROUND:-1}" = 1 ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $R/device.txt 2>&1
  nproc >> $R/device.txt
  ( timeout 150 $B/zkpipe-gpu-check 16 3 16 seam; echo "rc=$?" ) > $R/seam.txt 2>&1; at seam
  for dir in tests/fixtures/bn254/* tests/fixtures/bls12-381/*; do
    [ -f "$dir/circuit.zkey" ] || continue
    for mode in in-core streamed; do
      flags=(); [ $mode = streamed ] && flags=(--device-limit 20MiB)
      if timeout 60 $B/zkpipe prove --backend cuda --timings "${flags[@]}" "$dir/circuit.zkey" "$dir/witness.wtns" /tmp/p.json /tmp/pub.json 2> /tmp/log &&
         grep -q "residency *$mode" /tmp/log &&
         timeout 30 $B/zkpipe verify "$dir/verification_key.json" /tmp/pub.json /tmp/p.json >> /tmp/log 2>&1; then
        echo "$dir $mode: OK ($(grep -E 'residency' /tmp/log | tr -s ' ' | tr '\n' ';'))" >> $R/fixtures.txt
      else
        echo "$dir $mode: FAILED" >> $R/fixtures.txt; cat /tmp/log >> $R/fixtures.txt
      fi
    done
  done
  at fixtures
fi
S=lab/exp043/scale.sh
timeout ${T1:-330} $S $R $B stream bn254 24 1 "1 10" "4GiB/pin 4GiB/pin/beside/wide 16GiB/pin"; at main
timeout ${T2:-150} $S $R/parts $B stream bn254 24 1 "1" "4GiB/pin/beside 4GiB/pin/wide 16GiB/pin/wide"; at parts
