#!/usr/bin/env bash
# Final check of a build (lab 043i, after the review commits): the seam and every fixture
# in-core and streamed, proved and verified.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-gpu-check; do [ -x $B/$f ] || { xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; }; done
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
( timeout 150 $B/zkpipe-gpu-check 16 3 16 seam; echo "rc=$?" ) > $R/seam.txt 2>&1
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
