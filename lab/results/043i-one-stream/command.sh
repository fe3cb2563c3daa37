#!/usr/bin/env bash
# Device call (lab 043i): ROUND=1 makes the key, runs the seam check and every fixture
# in-core and streamed, and samples nvidia-smi (20 ms) idle and during gpu-check's pinned
# part (the CUDA context and 128 MiB); then BN254 2^24 bench rounds: in-core, 4 GiB and
# 16 GiB pinned, the baseline build (/base: [B]2 walked after the G1 walk ends) against
# this one (one stream), batches 1 and 10; PEAK=1 then samples nvidia-smi (100 ms) during
# one 4 GiB and one 16 GiB job of ten of this build.
set -u
R=$OUT/r; B=/tmp/b; A=/tmp/a; mkdir -p $R $B $A
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; }; done
[ -x $A/zkpipe-bench ] || { xz -dc .carry/a/zkpipe-bench.xz > $A/zkpipe-bench; chmod +x $A/zkpipe-bench; }
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
smi() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms "$1" > "$2" & echo $!; }
if [ "${ROUND:-1}" = 1 ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $R/device.txt 2>&1
  nproc >> $R/device.txt
  p=$(smi 20 $R/idle.csv); sleep 2; kill $p
  p=$(smi 20 $R/context.csv)
  ( timeout 60 $B/zkpipe-gpu-check 16 3 16 pinned; echo "rc=$?" ) > $R/pinned.txt 2>&1
  kill $p
  echo "idle: max memory.used $(sort -n $R/idle.csv | tail -1) MiB; gpu-check pinned (128 MiB device buffer): max $(sort -n $R/context.csv | tail -1) MiB over $(wc -l < $R/context.csv) samples" > $R/context.txt
  at context
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
BASE_BIN=$A timeout ${T1:-400} $S $R $B stream bn254 24 ${ROUNDS:-1} "1 10" "4GiB/pin/base 4GiB/pin 16GiB/pin/base 16GiB/pin"; at main
if [ "${PEAK:-0}" = 1 ]; then
  d=lab/work/scale/bn254-24
  for v in 4GiB 16GiB; do
    p=$(smi 100 $R/peak-$v.csv)
    timeout 120 $B/zkpipe-bench bench --trusted-key --backend cuda --runs 1 --warmup 0 --batch 10 \
      --device-limit $v --pin $d/c.zkey $d/c.wtns > $R/peak-$v.txt 2>&1
    kill $p
    echo "$v: peak memory.used $(sort -n $R/peak-$v.csv | tail -1) MiB over $(wc -l < $R/peak-$v.csv) samples" >> $R/peak.txt
  done
  at peak
fi
