#!/usr/bin/env bash
# Lab 043o call 3: BLS12-381 2^25 (SHA-256 values) setup on the GPU, new then old, one
# round; each key's sha256 (the disk holds one 32.7 GB key at a time, so no cmp).
set -u
R=$OUT/r; N=/tmp/n; O=/tmp/o; W=/tmp/w; mkdir -p $R $N $O $W
rm -f $W/*.zkey $W/*24.r1cs
xz -dc .carry/n/zkpipe.xz > $N/zkpipe; chmod +x $N/zkpipe
xz -dc .carry/o/zkpipe.xz > $O/zkpipe; chmod +x $O/zkpipe
trap 'df -h /tmp >> $R/log; tar czf $OUT/r3.tgz -C $OUT r' EXIT
f=$R/setup-bls12-381-25.txt
echo "$(date +%T) synth" >> $R/log
/usr/bin/time -f "synth 2^25: %e s, %M KiB" timeout 250 $N/zkpipe synth --curve bls12-381 \
  --domain 2^25 --public 4 --seed 1 --values sha256 $W/c25.r1cs $W/c25.wtns >> $f 2>&1 || { echo "synth FAILED" >> $f; exit 1; }
rm -f $W/c25.wtns
for side in new old; do
  bin=$N; [ $side = old ] && bin=$O
  echo "$(date +%T) $side" >> $R/log
  echo "== $side" >> $f
  /usr/bin/time -f "setup $side: %e s wall, %U s user, %M KiB peak RSS" timeout 200 env ZKPIPE_LOG=debug \
    $bin/zkpipe setup --dev --seed 1 --backend cuda $W/c25.r1cs $W/c25.$side.zkey >> $f 2>&1 || echo "setup $side FAILED rc=$?" >> $f
  [ -f $W/c25.$side.zkey ] && { echo "$side key sha256 $(sha256sum < $W/c25.$side.zkey | cut -c1-64) $(stat -c %s $W/c25.$side.zkey)" >> $f; rm -f $W/c25.$side.zkey; }
done
echo "$(date +%T) done" >> $R/log
