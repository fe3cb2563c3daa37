#!/usr/bin/env bash
# Device call B: the streamed reduce. Seam check (streamed keys now reduce on the GPU),
# every fixture in-core and streamed, proved and verified; then 2^22 BN254 in-core /
# streamed (GPU reduce) / streamed-host-reduce, 3 rounds.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-bench zkpipe-gpu-check; do xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $R/device.txt 2>&1
nproc >> $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
( timeout 150 $B/zkpipe-gpu-check 16 3 16 seam; echo "rc=$?" ) > $R/seam.txt 2>&1
echo "seam done at $(( $(date +%s) - start )) s" >> $R/times.txt
pack
for dir in tests/fixtures/bn254/* tests/fixtures/bls12-381/*; do
  [ -f "$dir/circuit.zkey" ] || continue
  for mode in in-core streamed; do
    flags=(); [ $mode = streamed ] && flags=(--device-limit 20MiB)
    if timeout 60 $B/zkpipe prove --backend cuda --timings "${flags[@]}" "$dir/circuit.zkey" "$dir/witness.wtns" /tmp/p.json /tmp/pub.json 2> /tmp/log &&
       grep -q "residency *$mode" /tmp/log &&
       timeout 30 $B/zkpipe verify "$dir/verification_key.json" /tmp/pub.json /tmp/p.json >> /tmp/log 2>&1; then
      echo "$dir $mode: OK ($(grep -E 'residency|reduce' /tmp/log | tr -s ' ' | tr '\n' ';'))" >> $R/fixtures.txt
    else
      echo "$dir $mode: FAILED" >> $R/fixtures.txt; cat /tmp/log >> $R/fixtures.txt
    fi
  done
done
echo "fixtures done at $(( $(date +%s) - start )) s" >> $R/times.txt
pack
HOST_REDUCE=1 WORK=/tmp/w timeout 360 lab/exp043/streamed.sh $R/speed $B speed 22 3 4GiB > $R/speed.log 2>&1
echo "speed rc=$? at $(( $(date +%s) - start )) s" >> $R/times.txt
