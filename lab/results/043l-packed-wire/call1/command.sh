#!/usr/bin/env bash
# Lab 043l, call 1: the seam checks and every fixture in-core and streamed (proved,
# verified) with this build, while the 2^25 BLS12-381 dev key with SHA-256 values is made.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; }; done
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; free -g; df -h .; } > $R/device.txt 2>&1
S=lab/exp043/regime.sh
( timeout 555 $S $R $B key bls12-381 25; at key ) &
kp=$!
( timeout 300 $B/zkpipe-gpu-check 16 3 16 seam; echo "rc=$?" ) > $R/seam.txt 2>&1; at seam
for dir in tests/fixtures/bn254/* tests/fixtures/bls12-381/*; do
  [ -f "$dir/circuit.zkey" ] || continue
  for mode in in-core streamed; do
    flags=(); [ $mode = streamed ] && flags=(--device-limit 20MiB)
    if timeout 60 $B/zkpipe prove --backend cuda --timings "${flags[@]}" "$dir/circuit.zkey" "$dir/witness.wtns" /tmp/p.json /tmp/pub.json 2> /tmp/log &&
       grep -q "residency *$mode" /tmp/log &&
       timeout 30 $B/zkpipe verify "$dir/verification_key.json" /tmp/pub.json /tmp/p.json >> /tmp/log 2>&1; then
      echo "$dir $mode: OK" >> $R/fixtures.txt
      cp /tmp/p.json "$R/$(basename $(dirname $dir))-$(basename $dir)-$mode.proof.json"
    else
      echo "$dir $mode: FAILED" >> $R/fixtures.txt; cat /tmp/log >> $R/fixtures.txt
    fi
  done
done
at fixtures
wait $kp
# What is left of the call: a job of ten under 16 GiB with stream batch 2 and 3 (043k's
# "Next" 2: the w chunks' sums are cheap now), one process each, 2 runs after a warm-up.
K=lab/work/regime/keys/bls12-381-25.zkey; W=lab/work/regime/bls12-381-25.wtns
for b in 2 3 2 3; do
  left=$(( 575 - ($(date +%s) - start) )); [ $left -gt 80 ] || break
  echo "== stream batch $b" >> $R/batch.txt
  timeout $left $B/zkpipe-bench bench --trusted-key --backend cuda --runs 2 --warmup 1 --batch 10 \
    --device-limit 16GiB --pin --stream-batch $b $K $W >> $R/batch.txt 2>&1 || echo "rc=$?" >> $R/batch.txt
  at "batch $b"
done
