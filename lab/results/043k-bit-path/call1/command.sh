#!/usr/bin/env bash
# Lab 043k, call 1: the bit path's seam checks (SHA-256 values streamed, and in-core on
# sppark's lone path) and every fixture in-core and streamed (proved, verified), while the
# 2^25 BLS12-381 dev key with SHA-256 values is made (synth, setup on the GPU).
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/k/$f.xz > $B/$f; chmod +x $B/$f; }; done
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
at() { echo "$1 done at $(( $(date +%s) - start )) s" >> $R/times.txt; pack; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; free -g; df -h .; } > $R/device.txt 2>&1
S=lab/exp043/regime.sh
( timeout 545 $S $R $B key bls12-381 25; at key ) &
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
