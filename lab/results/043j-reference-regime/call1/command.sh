#!/usr/bin/env bash
# Lab 043j, call 1: the build's seam check and every fixture in-core and streamed (proved
# and verified); the 2^25 BLS12-381 dev key with SHA-256 values (synth, setup on the GPU);
# then zkpipe-bench bench of a job of ten in-core and under 16 GiB (pinned).
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; }; done
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; free -g; df -h .; } > $R/device.txt 2>&1
( timeout 150 $B/zkpipe-gpu-check 16 3 16 seam; echo "rc=$?" ) > $R/seam.txt 2>&1; at seam
for dir in tests/fixtures/bn254/* tests/fixtures/bls12-381/*; do
  [ -f "$dir/circuit.zkey" ] || continue
  for mode in in-core streamed; do
    flags=(); [ $mode = streamed ] && flags=(--device-limit 20MiB)
    if timeout 60 $B/zkpipe prove --backend cuda --timings "${flags[@]}" "$dir/circuit.zkey" "$dir/witness.wtns" /tmp/p.json /tmp/pub.json 2> /tmp/log &&
       grep -q "residency *$mode" /tmp/log &&
       timeout 30 $B/zkpipe verify "$dir/verification_key.json" /tmp/pub.json /tmp/p.json >> /tmp/log 2>&1; then
      echo "$dir $mode: OK" >> $R/fixtures.txt
    else
      echo "$dir $mode: FAILED" >> $R/fixtures.txt; cat /tmp/log >> $R/fixtures.txt
    fi
  done
done
at fixtures
S=lab/exp043/regime.sh
timeout 330 $S $R $B key bls12-381 25; at key
BATCHES=10 RUNS=1 timeout $(( 570 - ($(date +%s) - start) )) $S $R $B bench bls12-381 25 "16GiB none"; at bench
